"""Real headless Chromium: search the memory browser, then edit a row inline without leaving the page."""

import pytest
from playwright.sync_api import Page, expect

from memories.actions.write import memory_create
from memories.models import Memory, MemoryEdit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_then_edit_a_memory_inline(live_server, page: Page, log_in, csp_violations, django_user_model):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    memory = memory_create(
        user=user, content="the team meeting is in Berlin", memory_type="episodic", importance=0.6
    )
    memory_create(user=user, content="bought apples and pears at the market", memory_type="episodic")

    log_in("alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories").click()
    expect(page.get_by_role("heading", name="Memories")).to_be_visible()
    # The page shows before its deferred htmx has run; a form used then posts without it (a page load).
    page.wait_for_load_state()
    # A full page load would drop this marker; htmx swaps keep it.
    page.evaluate("window.mnemoMarker = 'still here'")

    page.get_by_role("searchbox", name="Search").fill("Berlin meeting")
    page.get_by_role("button", name="Apply").click()
    row = page.locator(f"#memory-{memory.pk}")
    expect(page.get_by_text("for “Berlin meeting”")).to_be_visible()
    expect(row.get_by_label("Score parts")).to_contain_text("lexical")
    expect(row.get_by_label("Score parts")).to_contain_text("dense")
    # Best first: the meeting ranks above the shopping.
    expect(page.locator("#memory-table tbody tr").first).to_have_attribute("id", f"memory-{memory.pk}")
    expect(page).to_have_url(f"{live_server.url}/memories/?q=Berlin+meeting")

    row.get_by_role("link", name="Edit").click()
    content = row.get_by_label("Content")
    expect(content).to_have_value("the team meeting is in Berlin")
    content.fill("the team meeting moved to Lisbon")
    row.get_by_label("Importance").fill("0.9")
    row.get_by_role("button", name="Save").click()

    expect(row.get_by_text("the team meeting moved to Lisbon")).to_be_visible()
    expect(row.get_by_role("status")).to_have_text("Saved")
    expect(row.get_by_role("cell", name="0.90")).to_be_visible()
    assert page.evaluate("window.mnemoMarker") == "still here"
    memory.refresh_from_db()
    assert (memory.content, memory.importance) == ("the team meeting moved to Lisbon", 0.9)
    assert MemoryEdit.objects.get(memory=memory).via == "page"
    assert Memory.objects.count() == 2
    assert csp_violations == []
