"""Real headless Chromium at 390 × 844 (a phone): no page is wider than the screen, the navigation collapses
behind its Menu button, the error pages keep the layout, and no page asks for a missing favicon."""

import uuid

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from conversations.models import ChatMessage, ChatRole
from knowledge.models import Chunk, Document
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LONG = "The quarterly audit log review covers every change to the billing service and its configuration " * 3


@pytest.fixture
def content(user):
    """Rows with long text in every table: the widths that used to push pages to 1,100–1,300 px."""
    for i in range(3):
        memory_create(user=user, content=f"{LONG} ({i})", memory_type="semantic")
    document = Document.objects.create(
        user=user,
        title="A very long document title about the quarterly audit log review of the billing service",
        original_name="quarterly-audit-log-review-of-the-billing-service-2026.md",
        sha256=uuid.uuid4().hex * 2,
        status="ready",
        progress=100,
        markdown=f"# Audit\n\n{LONG}\n\n| column one | column two | column three | column four |\n|---|---|---|---|\n"
        + "| a long cell value | another long cell value | yet another long cell | the last long cell |\n",
    )
    Chunk.objects.create(
        document=document, user=user, namespace="default", ordinal=0, text=LONG, token_count=60
    )
    session = session_for_key(user=user, key="chat-phone")
    ChatMessage.objects.create(session=session, role=ChatRole.USER, content=LONG)
    return {"document": document, "session": session}


# The outermost elements that stick out past the right edge (not counting those inside a scrolling box).
WIDE = """(limit) => [...document.querySelectorAll("body *")]
  .filter((el) => el.getBoundingClientRect().right > limit + 0.5)
  .filter((el) => !el.parentElement.closest("*:is(table, pre, .graph-stage)"))
  .filter((el) => el.parentElement.getBoundingClientRect().right <= limit + 0.5)
  .slice(0, 5).map((el) => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().right))"""


def assert_fits(page: Page, name: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{name} is {width} px wide: {page.evaluate(WIDE, PHONE['width'])}"


def test_every_main_page_fits_a_phone_and_the_menu_opens_on_demand(
    page: Page, log_in, user, content, csp_violations, live_server, tmp_path
):
    icon_misses: list[str] = []
    page.on("response", lambda r: "favicon" in r.url and r.status != 200 and icon_misses.append(r.url))
    page.set_viewport_size(PHONE)
    log_in("alice")
    pages = {
        "dashboard": reverse("dashboard"),
        "memories": reverse("memory_list"),
        "memory-search": reverse("memory_list") + "?q=audit+log",
        "sessions": reverse("session_list"),
        "graph": reverse("graph"),
        "knowledge": reverse("library"),
        "knowledge-search": reverse("knowledge_search") + "?q=audit+log",
        "document": reverse("document_detail", args=[content["document"].pk]),
        "chat": reverse("chat"),
        "chat-session": reverse("chat_session", args=[content["session"].pk]),
        "evaluation": reverse("evaluation"),
        "api-keys": reverse("api_keys"),
        "health": reverse("health"),
    }
    for name, path in pages.items():
        page.goto(live_server.url + path)
        menu = page.get_by_role("button", name="Menu")
        nav = page.get_by_role("navigation", name="Main")
        expect(menu).to_be_visible()
        expect(menu).to_have_attribute("aria-expanded", "false")
        expect(nav).to_be_hidden()  # collapsed: the links take no room until asked for
        assert_fits(page, name)
        page.screenshot(path=str(tmp_path / f"phone-{name}.png"), full_page=True)

    page.goto(live_server.url + reverse("memory_list"))
    page.get_by_role("button", name="Menu").click()
    nav = page.get_by_role("navigation", name="Main")
    expect(nav).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_have_attribute("aria-expanded", "true")
    box = nav.bounding_box()
    assert box is not None and box["width"] <= PHONE["width"]
    assert_fits(page, "the open menu")
    page.screenshot(path=str(tmp_path / "phone-menu-open.png"), full_page=True)
    nav.get_by_role("link", name="Knowledge").click()
    expect(page.get_by_role("heading", name="Knowledge base")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_hidden()  # a new page starts collapsed
    page.get_by_role("button", name="Menu").click()
    page.keyboard.press("Escape")
    expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
    assert icon_misses == []
    assert csp_violations == []


def test_on_a_wide_screen_the_navigation_shows_without_a_menu_button(page: Page, log_in, user):
    page.set_viewport_size({"width": 1280, "height": 800})
    log_in("alice")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Graph")).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()


def test_the_404_page_is_styled_with_the_navigation(
    page: Page, log_in, user, live_server, csp_violations, tmp_path
):
    page.set_viewport_size(PHONE)
    log_in("alice")
    response = page.goto(f"{live_server.url}/no-such-page/")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    expect(page.locator(".error-page")).to_have_css("border-top-style", "solid")  # app.css applies
    page.get_by_role("button", name="Menu").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories").click()
    expect(page).to_have_url(f"{live_server.url}{reverse('memory_list')}")
    page.goto(f"{live_server.url}/no-such-page/")
    assert_fits(page, "404")
    page.screenshot(path=str(tmp_path / "phone-404.png"), full_page=True)
    assert csp_violations == []


def test_the_favicon_is_served_as_svg(page: Page, live_server):
    response = page.request.get(f"{live_server.url}/favicon.ico")
    assert response.status == 200
    assert response.headers["content-type"] == "image/svg+xml"
    page.goto(f"{live_server.url}/login/")
    href = page.locator('link[rel="icon"]').get_attribute("href")
    linked = page.request.get(live_server.url + href)
    assert linked.status == 200 and linked.headers["content-type"] == "image/svg+xml"


def test_score_chips_explain_their_parts_on_hover(page: Page, log_in, user, content, live_server):
    from core import hybrid

    page.set_viewport_size(PHONE)
    log_in("alice")
    page.goto(f"{live_server.url}{reverse('memory_list')}?q=audit+log")
    chip = page.locator(".scores dt", has_text="lexical").first
    expect(chip).to_have_attribute("title", hybrid.SCORE_PARTS["lexical"])
    expect(chip).to_have_css("cursor", "help")
