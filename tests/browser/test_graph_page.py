"""Real headless Chromium on the graph explorer: the demo data drawn by cytoscape, a tap expands and explains."""

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import Page, expect

from console.demo import load_demo_data
from memories.models import Entity, Memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CYTOSCAPE = django_settings.BASE_DIR / "node_modules" / "cytoscape" / "dist"
WAIT = 15_000  # ms for steps behind a request: the shared test machine is sometimes slower than expect's 5 s
# Functions, not expressions: Playwright evals a bare expression in the page, which the CSP (rightly) refuses.
READY = "() => window.mnemoGraph && document.getElementById('graph-canvas').dataset.state === 'ready'"


@pytest.fixture
def explorer():
    """The page loads cytoscape from node_modules (config/settings.py STATICFILES_DIRS), which npm installs."""
    if not (CYTOSCAPE / "cytoscape.min.js").exists():
        pytest.fail("node_modules/cytoscape is missing: run `npm ci --omit=dev` (make does)")


def test_graph_draws_the_demo_data_and_explains_a_tapped_node(
    page: Page, log_in, csp_violations, django_user_model, explorer, tmp_path
):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    assert load_demo_data(user)
    li_memory = Memory.objects.get(user=user, content__startswith="李四是前端工程师")
    log_in("alice")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Graph").click()
    expect(page.get_by_role("heading", name="Entity graph")).to_be_visible()
    page.wait_for_function(READY)

    assert page.evaluate("window.mnemoGraph.nodes().length") == Entity.objects.filter(user=user).count() > 0
    labels = page.evaluate("window.mnemoGraph.nodes().map(node => node.data('label'))")
    assert "李四" in labels
    assert page.evaluate("window.mnemoGraph.edges().length") > 0
    # Drawn for real: cytoscape's canvases fill the container.
    assert page.locator("#graph-canvas canvas").first.bounding_box()["width"] > 300
    expect(page.get_by_role("status")).to_contain_text("Click an entity to expand it.")

    # In a block: emit() returns the collection, which Playwright would spend a minute serialising.
    page.evaluate("""() => { window.mnemoGraph.$('node[label = "李四"]').emit('tap'); }""")
    panel = page.locator("#graph-panel")
    expect(panel.get_by_role("heading", name="李四")).to_be_visible(timeout=WAIT)
    link = panel.get_by_role("link", name="李四是前端工程师，擅长React和Vue.js开发")
    expect(link).to_have_attribute("href", f"/memories/{li_memory.pk}/")
    expect(page.get_by_role("status")).to_contain_text("李四", timeout=WAIT)
    assert page.evaluate("""window.mnemoGraph.$('node[label = "李四"]').hasClass('expanded')""")

    page.evaluate("() => { window.mnemoGraph.edges().first().emit('tap'); }")
    expect(panel.get_by_role("term").filter(has_text="Strength")).to_be_visible(timeout=WAIT)
    expect(panel.get_by_role("heading", name="Evidence")).to_be_visible()

    page.screenshot(path=str(tmp_path / "graph.png"), full_page=True)
    assert csp_violations == []


def test_graph_search_and_type_filter_redraw_the_network(
    live_server, page: Page, log_in, csp_violations, django_user_model, explorer
):
    user = django_user_model.objects.create_user(username="bob", password="correct horse battery")
    assert load_demo_data(user)
    log_in("bob")
    page.goto(f"{live_server.url}/graph/")
    page.wait_for_function(READY)

    page.get_by_role("searchbox", name="Entity").fill("李四")
    page.get_by_role("button", name="Show").click()
    page.wait_for_function(f"{READY} && window.mnemoGraph.nodes().length === 1")
    assert page.evaluate("window.mnemoGraph.nodes().map(node => node.data('label'))") == ["李四"]
    expect(page).to_have_url(f"{live_server.url}/graph/?q=%E6%9D%8E%E5%9B%9B")

    page.get_by_role("searchbox", name="Entity").fill("")
    page.get_by_role("combobox", name="Type").select_option("PERSON")
    page.wait_for_function(f"{READY} && window.mnemoGraph.nodes().length > 1")
    types = page.evaluate("window.mnemoGraph.nodes().map(node => node.data('type'))")
    assert set(types) == {"PERSON"}
    assert len(types) == Entity.objects.filter(user=user, entity_type="PERSON").count()

    page.get_by_role("combobox", name="Type").select_option("EVENT")
    expect(page.get_by_role("status")).to_have_text("No entity of this type yet.")
    assert csp_violations == []
