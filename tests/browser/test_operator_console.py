"""Real headless Chromium on the operator's console: the Users page, another user's pages under a banner, and
tags and sources shown, filtered and counted."""

import re

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import Page, expect

from core.models import SubjectChange
from core.services import api_key_create
from memories.actions.write import memory_create
from memories.models import Entity, Memory, MemoryEdit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"
WAIT = 15_000  # ms for steps behind a request on a busy shared machine
CYTOSCAPE = django_settings.BASE_DIR / "node_modules" / "cytoscape" / "dist" / "cytoscape.min.js"
READY = "() => window.mnemoGraph && document.getElementById('graph-canvas').dataset.state === 'ready'"


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_user(username="operator", password=PASSWORD, is_staff=True)


@pytest.fixture
def lena(django_user_model):
    user = django_user_model.objects.create_user(
        username="agent-user-42", first_name="Lena", last_name="Berg", password=PASSWORD
    )
    key = api_key_create(user=user, name="support-bot", scope="write")[0]
    memory_create(
        user=user,
        content="Lena works the night shift at the harbour",
        memory_type="semantic",
        tags=["work"],
        via="api",
        api_key=key,
    )
    memory_create(user=user, content="Lena prefers tea", memory_type="semantic", via="mcp", api_key=key)
    Entity.objects.create(user=user, name="Harbour Office", key="harbour office", entity_type="ORG")
    return user


def test_staff_find_a_user_open_their_pages_edit_and_return_to_their_own(
    live_server, page: Page, log_in, csp_violations, operator, lena, django_user_model, tmp_path
):
    django_user_model.objects.bulk_create(django_user_model(username=f"agent-{i:02d}") for i in range(60))
    memory_create(user=operator, content="operator's own checklist", memory_type="semantic")
    log_in("operator")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Users").click()
    expect(page.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    expect(page.get_by_text("62 users.")).to_be_visible()
    page.get_by_role("searchbox").fill("Berg")
    page.get_by_role("button", name="Search").click()
    table = page.locator("#user-table")
    expect(table.get_by_text("1 user matching “Berg”.")).to_be_visible(timeout=WAIT)
    row = table.locator(f"#user-{lena.pk}")
    expect(row.get_by_role("cell").nth(2)).to_have_text("2")  # memories
    expect(row.get_by_role("cell").nth(6)).to_have_text("1")  # API keys
    page.screenshot(path=str(tmp_path / "users.png"), full_page=True)

    row.get_by_role("link", name="Lena Berg").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    banner = page.get_by_role("status").filter(has_text="Viewing")
    expect(banner).to_have_text(re.compile(r"Viewing Lena Berg’s data \(agent-user-42\)\."))
    expect(page.get_by_role("heading", name="What Mnemo knows about Lena Berg")).to_be_visible()
    assert page.url == f"{live_server.url}/users/{lena.pk}/"

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories").click()
    expect(page).to_have_url(f"{live_server.url}/users/{lena.pk}/memories/")
    table = page.locator("#memory-table")
    expect(table.get_by_text("Lena prefers tea")).to_be_visible()
    expect(table.get_by_text("operator's own checklist")).to_have_count(0)
    page.screenshot(path=str(tmp_path / "users-memories.png"), full_page=True)

    table.get_by_role("row").filter(has_text="Lena prefers tea").get_by_role("link", name="Open").click()
    page.get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Content").fill("Lena prefers green tea")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Memory saved.")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Viewing")).to_be_visible()
    memory = Memory.objects.get(user=lena, content="Lena prefers green tea")
    assert MemoryEdit.objects.get(memory=memory).editor == operator
    assert [change.view for change in SubjectChange.objects.filter(subject=lena)] == ["memory_edit"]

    page.get_by_role("link", name="Back to your own").click()
    expect(page).to_have_url(f"{live_server.url}/memories/")
    expect(page.locator("#memory-table").get_by_text("operator's own checklist")).to_be_visible()
    expect(page.get_by_text("Viewing")).to_have_count(0)
    assert csp_violations == []


@pytest.mark.skipif(not CYTOSCAPE.exists(), reason="node_modules/cytoscape is missing: run npm ci")
def test_staff_see_another_users_graph(live_server, page: Page, log_in, csp_violations, operator, lena):
    log_in("operator")
    page.goto(f"{live_server.url}/users/{lena.pk}/graph/")
    page.wait_for_function(READY, timeout=WAIT)
    labels = page.evaluate("window.mnemoGraph.nodes().map(node => node.data('label'))")
    assert "Harbour Office" in labels
    assert sorted(labels) == sorted(Entity.objects.filter(user=lena).values_list("name", flat=True))
    expect(page.get_by_role("status").filter(has_text="Viewing")).to_be_visible()
    assert csp_violations == []


def test_a_user_who_is_not_staff_sees_no_users_page_and_nobody_elses_data(
    live_server, page: Page, log_in, lena
):
    log_in("agent-user-42")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Users")).to_have_count(0)
    for path in ("/users/", f"/users/{lena.pk}/memories/", f"/users/{lena.pk + 1}/"):
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 404, path
        expect(page.get_by_role("heading", name="Page not found")).to_be_visible()


def test_tags_and_sources_are_shown_filtered_and_counted(
    live_server, page: Page, log_in, csp_violations, lena, tmp_path
):
    memory_create(
        user=lena, content="Lena's shift swap with Ola", memory_type="episodic", tags=["work", "swap"]
    )
    memory_create(user=lena, content="Lena's birthday is in May", memory_type="semantic", via="page")
    log_in("agent-user-42")

    # The dashboard counts per source and per tag; a tag leads to its memories.
    sources = page.get_by_role("region", name="Memories by source")
    expect(sources.get_by_role("listitem").filter(has_text="API · support-bot")).to_contain_text("1")
    expect(sources.get_by_role("listitem").filter(has_text="MCP · support-bot")).to_contain_text("1")
    tags = page.get_by_role("region", name="Memories by tag")
    expect(tags.get_by_role("listitem").first).to_have_text(re.compile(r"work\s+2"))
    page.screenshot(path=str(tmp_path / "dashboard-tags-sources.png"), full_page=True)
    tags.get_by_role("link", name="work").click()
    expect(page).to_have_url(f"{live_server.url}/memories/?tag=work")
    table = page.locator("#memory-table")
    expect(table.locator("tbody tr")).to_have_count(2)

    # A row's source chip filters by its route and key.
    page.goto(f"{live_server.url}/memories/")
    row = table.get_by_role("row").filter(has_text="Lena prefers tea")
    expect(row.get_by_role("link", name="MCP · support-bot")).to_be_visible()
    row.get_by_role("link", name="MCP · support-bot").click()
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.get_by_text("Lena prefers tea")).to_be_visible()

    # The filter form: a source and a tag together.
    page.goto(f"{live_server.url}/memories/")
    filters = page.get_by_role("search", name="Filter memories")
    filters.get_by_label("Source").select_option("page")
    filters.get_by_role("button", name="Apply").click()
    expect(table.locator("tbody tr")).to_have_count(1, timeout=WAIT)
    expect(table.get_by_text("Lena's birthday is in May")).to_be_visible()
    filters.get_by_label("Source").select_option("")
    filters.get_by_label("Tag").fill("swap")
    filters.get_by_role("button", name="Apply").click()
    expect(table.locator("tbody tr")).to_have_count(1, timeout=WAIT)
    expect(page).to_have_url(re.compile(r"tag=swap"))

    # Bulk "all matching" acts on the tag's memories only.
    Memory.objects.bulk_create(
        Memory(user=lena, content=f"rota note {i}", memory_type="semantic", tags=["work"]) for i in range(26)
    )
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{live_server.url}/memories/?tag=work&size=25")
    table.get_by_label("Select all on this page").check()
    page.get_by_text("Select all 28 memories matching this filter").click()
    bulk = page.get_by_role("form", name="Bulk actions")
    expect(bulk.get_by_text("28 memories selected")).to_be_visible()
    bulk.get_by_label("With selected").select_option("add_tags")
    bulk.get_by_role("textbox", name="Tags").fill("reviewed")
    bulk.get_by_role("button", name="Run", exact=True).click()
    expect(table.locator("p.notice-line")).to_have_text("Tagged reviewed on 28 memories.", timeout=WAIT)
    untagged = Memory.objects.filter(user=lena).exclude(tags__has_tag="reviewed")
    assert set(untagged.values_list("content", flat=True)) == {
        "Lena prefers tea",
        "Lena's birthday is in May",
    }
    assert csp_violations == []
