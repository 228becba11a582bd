"""Real headless Chromium against a live server: log in, see the dashboard, Chinese rendered with CJK glyphs."""

import pytest
from playwright.sync_api import Page, expect

from memories.actions.write import memory_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_shows_the_dashboard(live_server, page: Page, django_user_model, csp_violations, tmp_path):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    memory_create(
        user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="semantic", importance=0.7
    )

    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()

    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    # The fact is about someone else: the profile panel lists 李四 among the people the user knows (not as a fact
    # about the user); the fact itself shows among the least retrieved (a link) and the recent memories (a cell).
    profile = page.get_by_role("region", name="What Mnemo knows about you")
    expect(profile.get_by_role("link", name="李四", exact=True)).to_be_visible()
    least = page.get_by_role("region", name="Least retrieved")
    expect(least.get_by_role("link", name="李四是前端工程师，擅长React和Vue.js开发")).to_be_visible()
    expect(page.get_by_role("cell", name="李四是前端工程师，擅长React和Vue.js开发")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link")).to_have_count(9)
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluation")).to_be_visible()
    # htmx loaded under the CSP (its global exists), and nothing was blocked. The page shows before its deferred
    # scripts have run: ask once it has loaded.
    page.wait_for_load_state()
    assert page.evaluate("typeof window.htmx") == "object"
    assert csp_violations == []
    # The CJK glyphs come from a real font (fonts-noto-cjk), not tofu: the text has a real width.
    width = page.get_by_role("cell", name="李四是前端工程师，擅长React和Vue.js开发").evaluate(
        "element => element.getBoundingClientRect().width"
    )
    assert width > 100
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)


def test_memory_filter_swaps_the_table_with_htmx(live_server, page: Page, log_in, django_user_model):
    user = django_user_model.objects.create_user(username="bob", password="correct horse battery")
    memory_create(user=user, content="an episodic event", memory_type="episodic")
    memory_create(user=user, content="a semantic fact", memory_type="semantic")
    log_in("bob")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories").click()
    expect(page.get_by_text("a semantic fact")).to_be_visible()

    page.get_by_role("navigation", name="Memory type").get_by_role("link", name="episodic").click()
    expect(page.get_by_text("a semantic fact")).to_have_count(0)
    expect(page.get_by_text("an episodic event")).to_be_visible()
    expect(page).to_have_url(f"{live_server.url}/memories/?type=episodic")
