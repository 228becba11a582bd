"""Real headless Chromium: upload a Markdown file, watch its row poll its way to "ready", read the detail page."""

import pytest
from playwright.sync_api import Page, expect

from knowledge import ingest, services
from knowledge.models import Document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_upload_watch_the_row_become_ready_then_read_the_document(
    page: Page, log_in, csp_violations, django_user_model, monkeypatch, tmp_path
):
    # This test plays the worker: the upload queues the ingestion here instead of running it, so the row is
    # seen in progress and then moving on with nobody touching the page: only the row's polling can show that.
    # (A real worker thread cannot share the live server's in-memory SQLite database.)
    queued: list[str] = []
    monkeypatch.setattr(services, "dispatch_on_commit", lambda task, document_id: queued.append(document_id))
    django_user_model.objects.create_user(username="alice", password="correct horse battery")
    note = tmp_path / "lisbon-notes.md"
    note.write_text(
        "# Lisbon trip\n\nThe team meets at the harbour on Friday.\n\n## Hotel\n\nNear the river.\n"
    )

    log_in("alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Knowledge").click()
    expect(page.get_by_role("heading", name="Knowledge base")).to_be_visible()
    expect(page.get_by_text("No documents yet")).to_be_visible()
    # The page shows before its deferred htmx has run; a form used then posts without it (a page load).
    page.wait_for_load_state()
    page.evaluate("window.mnemoMarker = 'still here'")  # a full page load would drop it

    page.get_by_label("Files").set_input_files(str(note))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("status", name="Upload results")).to_contain_text("lisbon-notes.md: added")

    document = Document.objects.get()
    assert queued == [str(document.pk)]
    row = page.locator(f"#document-{document.pk}")
    # The table reloaded by itself after the upload; the queued row polls every second.
    expect(row.locator(".badge")).to_have_text("queued")
    expect(row).to_have_attribute("hx-trigger", "every 1s")
    expect(row.get_by_role("button", name="Cancel")).to_be_visible()

    Document.objects.filter(pk=document.pk).update(status="embedding", progress=60)
    expect(row.locator(".badge")).to_have_text("embedding")
    expect(row.get_by_role("progressbar")).to_have_attribute("value", "60")

    ingest.ingest(queued.pop())
    expect(row.locator(".badge")).to_have_text("ready")
    expect(row.get_by_role("progressbar")).to_have_attribute("value", "100")
    expect(row).not_to_have_attribute("hx-trigger", "every 1s")  # polling stopped
    expect(row.locator("td.num").nth(1)).to_have_text("2")  # two chunks
    expect(row.get_by_role("button", name="Cancel")).to_have_count(0)
    assert page.evaluate("window.mnemoMarker") == "still here"

    row.get_by_role("link", name="lisbon-notes").click()
    expect(page.get_by_role("heading", name="lisbon-notes")).to_be_visible()
    markdown = page.locator("article.markdown-body")
    expect(markdown.get_by_role("heading", name="Lisbon trip", level=1)).to_be_visible()
    expect(markdown.get_by_role("heading", name="Hotel", level=2)).to_be_visible()
    expect(page.locator("#chunk-list .chunk")).to_have_count(2)
    expect(page.locator("#chunk-list")).to_contain_text("Lisbon trip > Hotel")
    assert csp_violations == []


def test_a_long_document_shows_a_preview_pages_its_chunks_and_downloads_the_original(
    page: Page, log_in, user, csp_violations, live_server, tmp_path
):
    paragraphs = "\n\n".join(
        f"Paragraph {i}: the audit log keeps every change to the billing service." for i in range(600)
    )
    text = f"# Audit handbook\n\n{paragraphs}\n"
    document = services.document_create_from_text(
        user=user, title="Audit handbook", text=text, background=False
    ).document
    document.refresh_from_db()
    assert document.status == "ready", document.error

    log_in("alice")
    page.goto(f"{live_server.url}/knowledge/{document.pk}/")
    preview = page.locator("article.markdown-body")
    expect(preview).to_contain_text("Paragraph 0: the audit log")
    expect(preview).not_to_contain_text("Paragraph 599")
    # A preview, not the whole text: the page stays a few screens tall (the full text made it 83,000 px).
    assert preview.bounding_box()["height"] < 2_000
    assert page.evaluate("document.documentElement.scrollHeight") < 6_000
    page.get_by_role("link", name="Show more").click()
    expect(page).to_have_url(f"{live_server.url}/knowledge/{document.pk}/#chunks-heading")
    expect(page.get_by_role("heading", name="Chunks")).to_be_in_viewport()
    page.screenshot(path=str(tmp_path / "document-preview.png"), full_page=True)

    with page.expect_download() as caught:
        page.get_by_role("link", name="Download Audit handbook.md").click()
    download = caught.value
    assert download.suggested_filename == "Audit handbook.md"
    saved = tmp_path / "download.md"
    download.save_as(saved)
    assert saved.read_text() == text
    assert csp_violations == []
