"""Real headless Chromium: disable and enable a chunk, edit one and read its history, re-chunk a document, and open
a citation to see its passage highlighted on its page."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Page, expect

from knowledge import ingest, services
from knowledge.models import Chunk, Document
from tests import fixtures_knowledge as fk
from tests.browser.test_narrow_screens import PHONE, assert_fits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTES = """# Harbour notes

## Tides

The harbour master posts tide tables every Monday morning.

## Pilots

Pilot boats leave from the north quay when the flag is raised.
"""
TIDES = "The harbour master posts tide tables every Monday morning."


def ready(user, text: str = NOTES, title: str = "harbour") -> Document:
    document = services.document_create_from_text(
        user=user, text=text, title=title, background=False
    ).document
    document.refresh_from_db()
    assert document.status == "ready", document.error
    return document


def test_disable_a_chunk_and_search_no_longer_finds_it_then_enable_it(
    page: Page, log_in, user, live_server, csp_violations, tmp_path
):
    document = ready(user)
    chunk = document.chunks.get(heading_path="Harbour notes > Tides")
    search = f"{live_server.url}/knowledge/search/?q=tide+tables+Monday"
    log_in("alice")
    page.goto(f"{live_server.url}/knowledge/{document.pk}/")
    page.evaluate("window.mnemoMarker = 'still here'")  # a full page load would drop it
    article = page.locator(f"#chunk-{chunk.pk}")

    article.get_by_role("button", name="Disable chunk #0").click()
    expect(article.locator(".chunk-head").get_by_text("disabled", exact=True)).to_be_visible()
    expect(article.get_by_role("button", name="Enable chunk #0")).to_be_visible()
    assert page.evaluate("window.mnemoMarker") == "still here"  # swapped in place
    page.screenshot(path=tmp_path / "disabled.png", full_page=True)
    assert not Chunk.objects.get(pk=chunk.pk).enabled

    page.goto(search)
    expect(page.locator("#search-results")).not_to_contain_text(TIDES)

    page.goto(f"{live_server.url}/knowledge/{document.pk}/")
    article.get_by_role("button", name="Enable chunk #0").click()
    expect(article.get_by_role("button", name="Disable chunk #0")).to_be_visible()
    expect(article.locator(".chunk-head").get_by_text("disabled", exact=True)).to_have_count(0)
    article.locator("summary").click()
    expect(article.locator(".chunk-history li")).to_have_count(2)  # disabled, then enabled: both recorded

    page.goto(search)
    expect(page.locator("ol.hits > li").first).to_contain_text(TIDES)
    assert csp_violations == []


def test_edit_a_chunk_and_read_its_history(page: Page, log_in, user, live_server, csp_violations, tmp_path):
    document = ready(user)
    chunk = document.chunks.get(heading_path="Harbour notes > Tides")
    new = "The harbour master posts tide tables on Fridays, beside the <fish> market."
    log_in("alice")
    page.goto(f"{live_server.url}/knowledge/{document.pk}/")
    article = page.locator(f"#chunk-{chunk.pk}")

    article.get_by_role("link", name="Edit chunk #0").click()
    text = article.get_by_label("Text of chunk #0")
    expect(text).to_have_value(TIDES)
    text.fill("A draft nobody keeps.")
    article.get_by_role("link", name="Cancel").click()
    expect(article.locator("pre.chunk-text")).to_have_text(TIDES)

    article.get_by_role("link", name="Edit chunk #0").click()
    article.get_by_label("Text of chunk #0").fill(new)
    article.get_by_role("button", name="Save").click()
    expect(article.get_by_role("status")).to_have_text("Saved")
    expect(article.locator("pre.chunk-text").first).to_have_text(new)  # as text: "<fish>" is no element
    expect(article.locator(".chunk-head").get_by_text("edited", exact=True)).to_be_visible()
    article.get_by_text("History · 1 change").click()
    history = article.locator(".chunk-history")
    expect(history).to_contain_text("alice")
    expect(history).to_contain_text("text changed; before:")
    expect(history.locator("pre.old")).to_have_text(TIDES)
    page.screenshot(path=tmp_path / "history.png", full_page=True)

    page.goto(f"{live_server.url}/knowledge/search/?q=fish+market+Fridays")
    expect(page.locator("ol.hits > li").first).to_contain_text(new)  # embedded again from its new text
    assert csp_violations == []


def test_rechunk_a_document_and_watch_it_become_ready_again(
    page: Page, log_in, user, live_server, csp_violations, monkeypatch, tmp_path
):
    text = "# Logbook\n\n" + "\n\n".join(
        f"Entry {i}: the ferry crossed the bay with {i + 3} passengers and a cargo of oranges."
        for i in range(30)
    )
    document = ready(user, text=text, title="logbook")
    assert document.chunks.count() == 1
    # This test plays the worker, as the upload's browser test does: the page is seen queued, then ready.
    queued: list[str] = []
    monkeypatch.setattr(services, "dispatch_on_commit", lambda task, document_id: queued.append(document_id))
    log_in("alice")
    page.goto(f"{live_server.url}/knowledge/{document.pk}/")
    panel = page.locator("#rechunk-panel")
    panel.get_by_text("Re-chunk with other settings").click()
    expect(panel).to_contain_text("Edits to chunks are not kept")
    panel.get_by_label("Chunk size (tokens)").fill("60")
    panel.get_by_label("Overlap (tokens)").fill("0")
    messages: list[str] = []
    page.once("dialog", lambda dialog: messages.append(dialog.message) or dialog.accept())
    panel.get_by_role("button", name="Re-chunk").click()

    status = page.locator("#document-status")
    expect(status).to_contain_text("queued")
    assert messages and "will be replaced" in messages[0]
    expect(page.get_by_text("Chunking again at 60 tokens with 0 overlap.")).to_be_visible()
    assert queued == [str(document.pk)]

    ingest.ingest(queued.pop())  # the page polls, then reloads itself with the new chunks
    count = Document.objects.get(pk=document.pk).chunks.count()
    assert count > 5
    expect(page.locator("#chunk-list .chunk")).to_have_count(count, timeout=15_000)
    expect(page.locator("dl.facts")).to_contain_text("60 tokens per chunk, 0 overlap")
    page.screenshot(path=tmp_path / "rechunked.png", full_page=True)
    assert csp_violations == []


def test_open_a_citation_and_see_its_passage_highlighted_on_its_page(
    page: Page, log_in, user, live_server, csp_violations, tmp_path
):
    pages = [
        ["The lighthouse keeper logs the weather at dawn."],
        ["Ship | Arrival | Berth", "Corvina | 06:10 | North", "Albatross | 07:45 | South"],
        ["Customs officers inspect cargo manifests before noon."],
    ]
    path = fk.make_paged_pdf(tmp_path, pages, "port.pdf")
    document = services.document_create(
        user=user,
        file=SimpleUploadedFile(path.name, path.read_bytes()),
        chunk_size=50,
        chunk_overlap=0,
        background=False,
    ).document
    cited = Document.objects.get(pk=document.pk).chunks.get(page_end=3)
    log_in("alice")
    page.goto(f"{live_server.url}/knowledge/ask/?q=When+do+customs+officers+inspect+cargo+manifests")
    citation = page.locator("#citation-1")
    expect(citation.locator(".tag.location")).to_have_text("pages 2–3")

    citation.get_by_role("link", name="port").click()
    expect(page).to_have_url(re.compile(rf"/knowledge/{document.pk}/\?cite={cited.pk}#chunk-{cited.pk}$"))
    expect(page.get_by_role("status").filter(has_text="Cited passage")).to_contain_text("pages 2–3")
    mark = page.locator(f"#chunk-{cited.pk} mark.cited-passage")
    expect(mark).to_contain_text("Customs officers inspect cargo manifests before noon.")
    expect(mark).to_be_in_viewport()
    assert mark.evaluate("element => getComputedStyle(element).backgroundColor") == "rgb(254, 240, 138)"
    expect(page.locator("mark")).to_have_count(1)  # only the cited passage
    page.screenshot(path=tmp_path / "citation.png", full_page=False)
    assert csp_violations == []


def test_the_curation_controls_fit_a_phone(page: Page, log_in, user, live_server, csp_violations, tmp_path):
    document = ready(user)
    chunk = document.chunks.get(heading_path="Harbour notes > Tides")
    log_in("alice")
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/knowledge/{document.pk}/?cite={chunk.pk}")
    article = page.locator(f"#chunk-{chunk.pk}")
    article.get_by_role("button", name="Disable chunk #0").click()
    expect(article.get_by_role("button", name="Enable chunk #0")).to_be_visible()
    article.get_by_role("link", name="Edit chunk #0").click()
    article.get_by_label("Text of chunk #0").fill("Tide tables " * 40)
    article.get_by_role("button", name="Save").click()
    expect(article.get_by_role("status")).to_have_text("Saved")
    article.get_by_text("History · 2 changes").click()
    page.locator("#rechunk-panel").get_by_text("Re-chunk with other settings").click()
    expect(page.get_by_label("Chunk size (tokens)")).to_be_visible()
    # The chunk's own buttons stay on screen: none is pushed past the right edge.
    for name in ("Enable chunk #0", "Edit chunk #0"):
        box = article.get_by_role("button" if name.startswith("Enable") else "link", name=name).bounding_box()
        assert box is not None and box["x"] + box["width"] <= PHONE["width"], name
    assert_fits(page, "a document being curated")
    page.screenshot(path=tmp_path / "phone-curation.png", full_page=True)
    assert csp_violations == []
