"""Conversion runs in a child with a time and a memory budget: a hostile file fails its document, not the server."""

import multiprocessing
import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document
from knowledge.pipeline import ConversionError, convert_to_markdown
from knowledge.pipeline.bounded import FILE_FLOOR_MB, MARKUP_MB_PER_MB, Budget, convert_bounded
from knowledge.pipeline.convert import MAX_MARKUP_BYTES, MAX_PDF_PAGES
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


def test_an_office_file_whose_xml_unpacks_past_the_budget_is_refused_before_it_is_parsed(tmp_path):
    """Before, a 453 KB .docx holding 150 MB of XML (under the 200 MB unpacked limit) held a converter 300 s."""
    wordy = fk.make_wordy_docx(tmp_path, xml_mb=MAX_MARKUP_BYTES / 2**20 + 1)
    assert wordy.stat().st_size < 2**20
    started = time.perf_counter()
    with pytest.raises(ConversionError) as caught:
        convert_bounded(wordy, filename="wordy.docx", budget=Budget(seconds=60, memory_mb=1024))
    assert re.fullmatch(
        r"wordy\.docx holds 1[78] MB of XML once unpacked; the limit is 16 MB \(split it into smaller documents\)",
        caught.value.message,
    )
    assert time.perf_counter() - started < 15  # parsing it would take minutes


def test_the_xml_budget_counts_every_part_of_the_document(tmp_path):
    # Three parts of 6 MB each: none is over the budget alone, together they are.
    spread = fk.make_wordy_docx(tmp_path, xml_mb=18, parts=3, name="spread.docx")
    with pytest.raises(ConversionError) as caught:
        convert_to_markdown(spread, filename="spread.docx")
    assert re.match(
        r"spread\.docx holds 1[89] MB of XML once unpacked; the limit is 16 MB", caught.value.message
    )


def test_each_office_file_gets_the_memory_its_size_can_need_and_no_more(tmp_path, settings):
    budget = Budget(seconds=60, memory_mb=2048)
    # python-docx's template alone holds about 0.8 MB of XML (styles, theme).
    assert FILE_FLOOR_MB < budget.memory_for(fk.make_docx(tmp_path)) < 400
    eight = budget.memory_for(fk.make_wordy_docx(tmp_path, xml_mb=8))
    assert FILE_FLOOR_MB + 8 * MARKUP_MB_PER_MB < eight < FILE_FLOOR_MB + 9 * MARKUP_MB_PER_MB
    small_budget = Budget(seconds=60, memory_mb=512)
    assert small_budget.memory_for(fk.make_wordy_docx(tmp_path, xml_mb=15, name="w15.docx")) == 512  # capped
    assert budget.memory_for(fk.make_pdf(tmp_path)) == 2048  # not an archive: the configured budget


def test_an_image_past_the_pixel_limit_is_refused_as_a_decompression_bomb(tmp_path):
    """Before, an oversized PNG crashed the converter child and the user read "exit code 1"."""
    for megapixels in (144, 400):  # Pillow warns past 89 million pixels and refuses past 179 million
        bomb = fk.make_png_bomb(tmp_path, megapixels, name=f"poster{megapixels}.png")
        assert bomb.stat().st_size < 2**20
        with pytest.raises(ConversionError) as caught:
            convert_bounded(bomb, filename="poster.png", budget=Budget(seconds=60, memory_mb=1024))
        assert caught.value.message == (
            f"poster.png is an image of {megapixels} million pixels, past the limit of 89 million pixels: it is "
            "refused as a possible decompression bomb (shrink it and upload it again)"
        )
    assert no_children_left()


@pytest.mark.django_db
def test_a_users_second_document_waits_for_their_first_conversion_without_holding_a_worker(
    user, other_user, settings
):
    """One user's files never take every worker: past MNEMO_CONVERSIONS_PER_USER the next waits its turn (the
    task is asked for again later and its worker is free), another user's document goes ahead."""
    from core import dispatch
    from knowledge.ingest import WAITING_FOR_TURN, ingest
    from knowledge.services import document_create_from_text

    settings.MNEMO_CONVERSIONS_PER_USER = 1
    first = document_create_from_text(user=user, text="The first log.", title="first", background=False)
    second = document_create_from_text(user=user, text="The second log.", title="second", background=False)
    theirs = document_create_from_text(user=other_user, text="Their log.", title="theirs", background=False)
    # The first is being converted (by another worker): as a running ingestion leaves it.
    Document.objects.filter(pk=first.document.pk).update(status="converting")
    dispatch.deferred.clear()

    waiting = ingest(str(second.document.pk))
    assert (waiting.status, waiting.error) == ("queued", WAITING_FOR_TURN)
    assert [(task.name, args) for task, args, _ in dispatch.deferred] == [
        ("knowledge.ingest_document", (str(second.document.pk),))
    ]
    assert ingest(str(theirs.document.pk)).status == "ready"

    Document.objects.filter(pk=first.document.pk).update(status="ready")
    task, args, kwargs = dispatch.deferred.pop()
    task.run(*args, **kwargs)
    second.document.refresh_from_db()
    assert (second.document.status, second.document.error) == ("ready", "")
