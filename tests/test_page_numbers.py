"""Page numbers on the knowledge list and a document's chunk list (core.templatetags.paging)."""

import pytest
from django.urls import reverse

from knowledge.models import Chunk, Document

pytestmark = pytest.mark.django_db


def documents(user, count: int) -> list[Document]:
    return Document.objects.bulk_create(
        Document(user=user, title=f"doc {i}", sha256=f"{i:064d}", status="ready") for i in range(count)
    )


def test_the_library_links_page_numbers(logged_in, user):
    documents(user, 260)  # 6 pages of 50
    response = logged_in.get(reverse("library") + "?page=3")
    assert response.status_code == 200
    assert "Page 3 of 6 (260 documents)" in response.text
    numbers = response.text.split('aria-label="Page numbers"')[1].split("</nav>")[0]
    assert [f'aria-label="Page {n}"' in numbers for n in range(1, 7)] == [True, True, False, True, True, True]
    assert '<span aria-current="page">3</span>' in numbers
    assert 'href="?page=6"' in numbers


def test_a_document_links_its_chunk_pages(logged_in, user):
    [document] = documents(user, 1)
    Chunk.objects.bulk_create(
        Chunk(document=document, user=user, namespace=document.namespace, ordinal=i, text=f"chunk {i}")
        for i in range(1000)
    )
    response = logged_in.get(reverse("document_detail", args=[document.pk]) + "?page=10")
    assert response.status_code == 200
    assert "Chunks 451–500 of 1000" in response.text
    numbers = response.text.split('aria-label="Chunk page numbers"')[1].split("</nav>")[0]
    for n in (1, 2, 8, 9, 11, 12, 19, 20):
        assert f'href="?page={n}"' in numbers
    assert '<span aria-current="page">10</span>' in numbers
    assert numbers.count("…") == 2
