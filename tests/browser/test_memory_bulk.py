"""Real headless Chromium on the memory browser: bulk selection and actions with their count and undo, totals and
page links, entity links into the graph, and the keyboard shortcuts."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from memories.actions.write import memory_create
from memories.models import Entity, Memory, MemoryEntity
from memories.retrieval import search_memories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_bulk_select_all_matching_apply_and_undo(
    live_server, page: Page, log_in, csp_violations, tmp_path, django_user_model
):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    now = timezone.now()
    Memory.objects.bulk_create(
        Memory(user=user, content=f"fact {i}", memory_type="semantic", created_at=now - timedelta(minutes=i))
        for i in range(30)
    )
    notes = [
        memory_create(user=user, content=f"Berlin office note {i}", memory_type="episodic") for i in range(2)
    ]
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))

    log_in("alice")
    page.goto(f"{live_server.url}/memories/?type=semantic&size=25")
    table = page.locator("#memory-table")
    expect(table.get_by_text("Page 1 of 2 · 25 shown of 30 memories")).to_be_visible()
    expect(
        table.get_by_role("navigation", name="Page numbers").get_by_role("link", name="Page 2")
    ).to_be_visible()

    # Nothing selected: no confirm, a message instead.
    bulk = page.get_by_role("form", name="Bulk actions")
    bulk.get_by_label("With selected").select_option("archive")
    bulk.get_by_role("button", name="Run", exact=True).click()
    expect(bulk.get_by_text("Select at least one memory first.")).to_be_visible()
    assert dialogs == []

    # Select the page, then all 30 matching the filter.
    scope = page.get_by_text("Select all 30 memories matching this filter")
    expect(scope).to_be_hidden()
    table.get_by_label("Select all on this page").check()
    expect(bulk.get_by_text("25 memories selected")).to_be_visible()
    scope.click()
    expect(bulk.get_by_text("30 memories selected")).to_be_visible()
    bulk.get_by_label("With selected").select_option("add_tags")
    bulk.get_by_role("textbox", name="Tags").fill("batch")
    # No screenshot before the swaps: a full-page screenshot leaves style="" on inputs, which htmx's settle then
    # copies, and the CSP (rightly) reports.
    bulk.get_by_role("button", name="Run", exact=True).click()
    expect(table.locator("p.notice-line")).to_have_text("Tagged batch on 30 memories.")
    assert dialogs == ["Add tags batch: 30 memories?"]
    assert (
        sorted((m.memory_type, m.tags) for m in Memory.objects.all())
        == [("episodic", [])] * 2 + [("semantic", ["batch"])] * 30
    )

    page.get_by_role("button", name="Undo: Tagged batch on 30 memories").click()
    expect(table.locator("p.notice-line")).to_contain_text("Undone: Tagged batch on 30 memories")
    assert {tuple(m.tags) for m in Memory.objects.all()} == {()}

    # Delete one episodic note: the confirm counts it, search forgets it, undo brings it back.
    page.goto(f"{live_server.url}/memories/?type=episodic")
    page.locator(f"#memory-{notes[0].pk}").get_by_label("Select memory").check()
    bulk.get_by_label("With selected").select_option("delete")
    bulk.get_by_role("button", name="Run", exact=True).click()
    expect(table.locator("p.notice-line")).to_have_text("Deleted 1 memory.")
    assert dialogs[-1] == "Delete 1 memory for good? You can undo it right after."
    assert not Memory.objects.filter(pk=notes[0].pk).exists()
    found = [h.memory.pk for h in search_memories(user=user, query="Berlin office note", limit=5).hits]
    assert found[0] == notes[1].pk and notes[0].pk not in found
    page.get_by_role("button", name="Undo: Deleted 1 memory").click()
    expect(page.locator(f"#memory-{notes[0].pk}")).to_be_visible()
    hits = search_memories(user=user, query="Berlin office note", limit=5).hits
    assert {h.memory.pk for h in hits[:2]} == {notes[0].pk, notes[1].pk}
    page.screenshot(path=str(tmp_path / "memory-bulk-undone.png"), full_page=True)
    assert csp_violations == [], csp_violations


def test_keyboard_shortcuts_and_entity_links(
    live_server, page: Page, log_in, csp_violations, tmp_path, django_user_model
):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    now = timezone.now()
    memories = [
        memory_create(
            user=user, content=f"note {i}", memory_type="semantic", created_at=now - timedelta(minutes=i)
        )
        for i in range(3)
    ]
    entity = Entity.objects.create(user=user, name="Acme Corp", key="acme corp", entity_type="ORG")
    MemoryEntity.objects.create(memory=memories[1], entity=entity)

    log_in("alice")
    page.goto(f"{live_server.url}/memories/")
    rows = page.locator("#memory-table tr.memory-row")
    expect(rows).to_have_count(3)
    page.keyboard.press("j")
    expect(rows.nth(0)).to_have_class(re.compile(r"\bis-focused\b"))
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(rows.nth(1)).to_have_class(re.compile(r"\bis-focused\b"))
    expect(rows.nth(0)).not_to_have_class(re.compile(r"\bis-focused\b"))

    page.keyboard.press("a")  # archive the focused row, in place
    expect(page.locator(f"#memory-{memories[1].pk}").get_by_text("archived", exact=True)).to_be_visible()
    memories[1].refresh_from_db()
    assert memories[1].archived_at is not None

    page.keyboard.press("?")
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help_dialog).to_be_visible()
    page.screenshot(path=str(tmp_path / "memory-shortcuts.png"), full_page=True)
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()

    page.keyboard.press("/")
    expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    page.keyboard.press("j")  # typing in the search box is text, not a shortcut
    expect(page.get_by_role("searchbox", name="Search")).to_have_value("j")

    page.locator(f"#memory-{memories[1].pk}").get_by_role("link", name="Acme Corp").click()
    expect(page).to_have_url(f"{live_server.url}/graph/?q=Acme%20Corp")
    assert csp_violations == [], csp_violations
