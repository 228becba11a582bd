"""Conversion runs in a child with a time and a memory budget: a hostile file fails its document, not the server."""

import multiprocessing
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document
from knowledge.pipeline import ConversionError, convert_to_markdown
from knowledge.pipeline.bounded import Budget, convert_bounded
from knowledge.pipeline.convert import MAX_PDF_PAGES
from tests import fixtures_knowledge as fk


def no_children_left() -> bool:
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


def test_a_pdf_over_the_page_limit_is_refused_before_any_page_is_read(tmp_path):
    path = fk.make_long_pdf(tmp_path, pages=MAX_PDF_PAGES + 1)
    with pytest.raises(ConversionError) as caught:
        convert_to_markdown(path, filename="minutes.pdf")
    assert (
        caught.value.message == f"minutes.pdf has {MAX_PDF_PAGES + 1:,} pages; the limit is {MAX_PDF_PAGES:,}"
    )


def test_a_file_converts_in_the_child_as_it_would_in_process(tmp_path):
    path = fk.make_pdf(tmp_path)
    bounded = convert_bounded(path, filename="report.pdf", budget=Budget(seconds=60, memory_mb=1024))
    assert bounded == convert_to_markdown(path, filename="report.pdf")
    assert fk.CHINESE in bounded.markdown
    assert no_children_left()


def test_a_compression_bomb_fails_with_the_memory_limit_and_the_parent_carries_on(tmp_path):
    bomb = fk.make_pdf_bomb(tmp_path, unpacked_mb=600)
    assert bomb.stat().st_size < 2 * 2**20
    with pytest.raises(ConversionError) as caught:
        convert_bounded(bomb, filename="bomb.pdf", budget=Budget(seconds=60, memory_mb=256))
    assert caught.value.message == "bomb.pdf needs more than 256 MB of memory to convert"
    assert no_children_left()
    # The same parent converts the next file as usual.
    good = convert_bounded(fk.make_pdf(tmp_path), filename="report.pdf", budget=Budget(60, 1024))
    assert fk.ENGLISH in good.markdown


def test_a_conversion_past_its_time_is_killed_with_the_limit_named(tmp_path):
    slow = fk.make_long_pdf(tmp_path, pages=150, lines_per_page=40)  # about 25 s of pdfplumber here
    with pytest.raises(ConversionError) as caught:
        convert_bounded(slow, filename="long.pdf", budget=Budget(seconds=1, memory_mb=1024))
    assert caught.value.message == "Converting long.pdf took longer than the 1 s limit"
    assert no_children_left()


def test_a_check_that_raises_stops_the_conversion(tmp_path):
    slow = fk.make_long_pdf(tmp_path, pages=150, lines_per_page=40)

    class Stop(Exception):
        pass

    calls = []

    def check():
        calls.append(1)
        if len(calls) == 2:
            raise Stop

    with pytest.raises(Stop):
        convert_bounded(slow, filename="long.pdf", budget=Budget(seconds=60, memory_mb=1024), check=check)
    assert no_children_left()


@pytest.mark.django_db(transaction=True)
def test_an_uploaded_bomb_fails_its_document_and_the_next_upload_is_ingested(
    client, write_key, settings, tmp_path
):
    settings.MNEMO_CONVERT_MEMORY_MB = 256
    bomb = fk.make_pdf_bomb(tmp_path, unpacked_mb=600).read_bytes()
    response = client.post(
        "/api/v1/documents", {"file": SimpleUploadedFile("bomb.pdf", bomb)}, HTTP_X_API_KEY=write_key
    )
    assert response.status_code == 201
    document = Document.objects.get(pk=response.json()["id"])
    assert (document.status, document.error) == (
        "failed",
        "bomb.pdf needs more than 256 MB of memory to convert",
    )
    assert document.chunks.count() == 0

    report = fk.make_pdf(tmp_path).read_bytes()
    response = client.post(
        "/api/v1/documents", {"file": SimpleUploadedFile("report.pdf", report)}, HTTP_X_API_KEY=write_key
    )
    assert Document.objects.get(pk=response.json()["id"]).status == "ready"
