"""The file-format registry (knowledge.pipeline.formats, issue 34 item 3): a format registered there is sniffed,
accepted by the upload form and the API, and converted end to end, with nothing else to change."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from knowledge.forms import UploadForm
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.pipeline import ConversionError, detect_kind, formats
from tests.format_tsvx import TSVX, tsvx_bytes

pytestmark = pytest.mark.django_db(transaction=True)

STOCK = tsvx_bytes(("part", "shelf", "count"), ("hinge bracket", "B7", "40"), ("铰链", "C2", "12"))


@pytest.fixture
def tsvx():
    with formats.registered(TSVX):
        yield TSVX


def test_every_built_in_kind_is_one_record_with_its_extensions():
    assert formats.kind_by_extension() == {
        "pdf": "pdf",
        "docx": "docx",
        "xlsx": "xlsx",
        "pptx": "pptx",
        "epub": "epub",
        "html": "html",
        "htm": "html",
        "csv": "csv",
        "json": "json",
        "txt": "txt",
        "md": "md",
        "markdown": "md",
        "png": "png",
        "jpg": "jpeg",
        "jpeg": "jpeg",
        "gif": "gif",
        "webp": "webp",
    }
    assert formats.get("docx").mime_types == (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    with pytest.raises(ValueError, match="already known"):
        formats.register(formats.get("pdf"))


def test_a_registered_format_is_sniffed_from_its_bytes(tsvx):
    assert detect_kind(STOCK, "stock.tsvx") == "tsvx"
    assert detect_kind(STOCK, "stock") == "tsvx"  # no extension: the signature decides
    with pytest.raises(ConversionError) as caught:
        detect_kind(STOCK, "report.pdf")
    assert (
        caught.value.message
        == "report.pdf is named .pdf but is really a TSVX table; upload the original file"
    )
    with pytest.raises(ConversionError) as caught:
        detect_kind(b"part,shelf\n", "stock.tsvx")
    assert (
        caught.value.message == "stock.tsvx is named .tsvx but is really plain text; upload the original file"
    )
    with pytest.raises(ConversionError) as caught:
        detect_kind(b"hello", "notes.odt")
    assert caught.value.message.endswith("png, jpg, jpeg, gif, webp, tsvx")


def test_without_the_record_the_format_is_unknown_everywhere(logged_in, write_key, client):
    with pytest.raises(ConversionError, match=r"^Unsupported file type \.tsvx"):
        detect_kind(STOCK, "stock.tsvx")
    assert ".tsvx" not in UploadForm().fields["files"].widget.attrs["accept"]
    response = client.post(
        "/api/v1/documents", {"file": SimpleUploadedFile("stock.tsvx", STOCK)}, HTTP_X_API_KEY=write_key
    )
    assert response.status_code == 415
    assert response.json()["detail"].startswith("unsupported file type .tsvx: supported are ")
    assert not Document.objects.exists()


def test_the_upload_form_and_the_library_page_list_the_registry(tsvx, logged_in):
    accept = UploadForm().fields["files"].widget.attrs["accept"]
    assert accept == formats.accept()
    assert accept.split(",") == sorted(f".{extension}" for extension in formats.kind_by_extension())
    assert ".tsvx" in accept.split(",")
    page = logged_in.get(reverse("library")).content.decode()
    assert re.search(r'accept="[^"]*\.tsvx[^"]*"', page)
    assert ".tsvx" in page.split("Choose several files at once", 1)[1].split("</p>", 1)[0]


def test_a_registered_format_is_uploaded_through_the_api_and_converted(tsvx, client, write_key):
    response = client.post(
        "/api/v1/documents",
        {"file": SimpleUploadedFile("stock.tsvx", STOCK), "wait": "true"},
        HTTP_X_API_KEY=write_key,
    )
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["id"])
    assert (document.status, document.mime, document.title) == (DocumentStatus.READY, "tsvx", "stock")
    text = "\n".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "| hinge bracket | B7 | 40 |" in text
    assert "| 铰链 | C2 | 12 |" in text
    found = client.post(
        "/api/v1/knowledge/search",
        data={"query": "hinge bracket"},
        content_type="application/json",
        HTTP_X_API_KEY=write_key,
    ).json()["results"]
    assert found[0]["document_id"] == str(document.pk)


def test_a_registered_format_is_uploaded_through_the_page(tsvx, logged_in):
    response = logged_in.post(
        reverse("document_upload"),
        {
            "namespace": "default",
            "chunk_size": "800",
            "chunk_overlap": "100",
            "files": [SimpleUploadedFile("stock.tsvx", STOCK)],
        },
    )
    assert response.status_code in (200, 201, 302)
    document = Document.objects.get()
    assert (document.status, document.mime) == (DocumentStatus.READY, "tsvx")
    assert "| 铰链 | C2 | 12 |" in document.markdown
