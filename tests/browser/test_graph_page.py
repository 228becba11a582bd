"""Real headless Chromium on the graph explorer: the demo data drawn by cytoscape, a tap expands and explains."""

import pytest
from django.conf import settings as django_settings
from django.db.models import Q
from playwright.sync_api import Page, expect

from console.demo import load_demo_data
from memories.models import Entity, GraphEdit, Memory, Relation

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
    # The match is drawn at once with its neighbours (issue 15: no lone node waiting for a click).
    page.wait_for_function(f"{READY} && window.mnemoGraph.nodes('.match').length === 1")
    assert page.evaluate("window.mnemoGraph.nodes('.match').map(node => node.data('label'))") == ["李四"]
    li = Entity.objects.get(user=user, name="李四")
    neighbours = Relation.objects.filter(Q(source=li) | Q(target=li)).count()
    assert neighbours > 0
    assert page.evaluate("window.mnemoGraph.nodes().length") > 1
    assert page.evaluate("window.mnemoGraph.edges().length") >= neighbours
    expect(page.get_by_role("status")).to_contain_text("matching “李四”, drawn with")
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


def tap(page: Page, selector: str) -> None:
    page.evaluate(f"() => {{ window.mnemoGraph.$({selector!r}).emit('tap'); }}")


def test_curate_entities_and_relations_from_the_page(
    live_server, page: Page, log_in, csp_violations, django_user_model, explorer, tmp_path
):
    user = django_user_model.objects.create_user(username="carol", password="correct horse battery")
    assert load_demo_data(user)
    stranger = django_user_model.objects.create_user(username="eve", password="x")
    theirs = Entity.objects.create(user=stranger, name="Eve", key="eve")
    page.on("dialog", lambda dialog: dialog.accept())  # the merge and delete confirms
    log_in("carol")
    page.goto(f"{live_server.url}/graph/")
    page.wait_for_function(READY)
    panel = page.locator("#graph-panel")
    drawn = page.evaluate("window.mnemoGraph.nodes().length")

    # Rename and retype 李四.
    li = Entity.objects.get(user=user, name="李四")
    tap(page, f'node[id = "{li.pk}"]')
    expect(panel.get_by_role("heading", name="李四")).to_be_visible(timeout=WAIT)
    panel.get_by_role("textbox", name="Name", exact=True).fill("李四（前端）")
    panel.get_by_role("combobox", name="Type", exact=True).select_option("ORG")
    panel.get_by_role("button", name="Save").click()
    expect(panel.get_by_role("heading", name="李四（前端）")).to_be_visible(timeout=WAIT)
    expect(panel.locator(".graph-history")).to_contain_text("renamed 李四")
    assert page.evaluate(f"window.mnemoGraph.$id('{li.pk}').data('label')") == "李四（前端）"
    page.screenshot(path=str(tmp_path / "graph-renamed.png"), full_page=True)

    # Merge another entity into it.
    other = Entity.objects.filter(user=user).exclude(pk=li.pk).order_by("-frequency").first()
    tap(page, f'node[id = "{other.pk}"]')
    expect(panel.get_by_role("heading", name=other.name)).to_be_visible(timeout=WAIT)
    panel.get_by_role("textbox", name="Merge into").fill("李四（前端）")
    panel.get_by_role("button", name="Merge").click()
    expect(panel).to_contain_text(f"Merged “{other.name}” into 李四（前端）.", timeout=WAIT)
    page.wait_for_function(f"() => window.mnemoGraph.$id('{other.pk}').empty()")
    assert not Entity.objects.filter(pk=other.pk).exists()

    # Edit, then delete, a relation of the merged entity.
    relation = Relation.objects.filter(Q(source=li) | Q(target=li)).first()
    page.wait_for_function(f"() => !window.mnemoGraph.$id('{relation.pk}').empty()")
    tap(page, f'edge[id = "{relation.pk}"]')
    expect(panel.get_by_role("textbox", name="Relation type")).to_be_visible(timeout=WAIT)
    panel.get_by_role("textbox", name="Relation type").fill("教过")
    panel.get_by_role("spinbutton", name="Strength").fill("0.9")
    panel.get_by_role("button", name="Save").click()
    expect(panel.get_by_text("Saved.")).to_be_visible(timeout=WAIT)
    assert page.evaluate(f"window.mnemoGraph.$id('{relation.pk}').data('type')") == "教过"
    panel.get_by_role("button", name="Delete relation").click()
    expect(panel).to_contain_text("Deleted the relation", timeout=WAIT)
    page.wait_for_function(f"() => window.mnemoGraph.$id('{relation.pk}').empty()")

    # Delete the entity.
    tap(page, f'node[id = "{li.pk}"]')
    expect(panel.get_by_role("button", name="Delete entity")).to_be_visible(timeout=WAIT)
    panel.get_by_role("button", name="Delete entity").click()
    expect(panel).to_contain_text("Deleted the entity “李四（前端）”", timeout=WAIT)
    page.wait_for_function(f"() => window.mnemoGraph.$id('{li.pk}').empty()")

    # After a reload the graph still shows every change, and each was recorded.
    page.reload()
    page.wait_for_function(READY)
    labels = page.evaluate("window.mnemoGraph.nodes().map(node => node.data('label'))")
    assert "李四" not in labels and "李四（前端）" not in labels and other.name not in labels
    assert len(labels) == drawn - 2 == Entity.objects.filter(user=user).count()
    assert list(GraphEdit.objects.filter(user=user).order_by("id").values_list("action", "via")) == [
        ("rename", "page"),
        ("retype", "page"),
        ("merge", "page"),
        ("edit_rel", "page"),
        ("del_rel", "page"),
        ("delete", "page"),
    ]
    # Another user's entity is not there to curate.
    assert page.request.get(f"{live_server.url}/graph/entities/{theirs.pk}/memories/").status == 404
    page.screenshot(path=str(tmp_path / "graph-curated.png"), full_page=True)
    assert csp_violations == []
