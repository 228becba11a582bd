"""Every page at a phone's 390 × 844 and a laptop's 1280 × 800 (issue 35 item 3): none is wider than the window,
the memory list shows cards whose text links to the memory, and Review's Approve and Reject are in view."""

import uuid
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from conversations.models import ChatMessage, ChatRole
from knowledge.models import Chunk, Document
from memories.actions.rules import session_for_key
from memories.actions.write import NewMemory, memory_bulk_create, memory_create
from memories.cleaning import propose, queue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 800}}
LONG = "The quarterly audit log review covers every change to the billing service and its configuration " * 2
WIDTH = "[document.scrollingElement.scrollWidth, window.innerWidth]"


@pytest.fixture
def pages(user, django_user_model):
    """alice (made staff, to see the Users page) with rows in every table, and one end-user to open."""
    user.is_staff = True
    user.save()
    lena = django_user_model.objects.create_user(username="lena", password="x" * 12)
    memory_create(user=lena, content="Lena keeps the harbour office keys", memory_type="semantic")
    session = session_for_key(user=user, key="chat-with-a-rather-long-session-key-2026-12-06")
    memory = memory_create(user=user, content=f"{LONG} (detail)", memory_type="episodic", session=session)
    for i in range(3):
        memory_create(
            user=user,
            content=f"{LONG} ({i})",
            memory_type="semantic",
            tags=["audit", "billing"],
            curate=False,
        )
    old = timezone.now() - timedelta(days=30)
    items = [
        NewMemory("Alice lives in the old town of Porto", "semantic", created_at=old),
        NewMemory("Alice lives in the old town of Porto.", "semantic", created_at=old + timedelta(days=1)),
    ]
    memory_bulk_create(user=user, items=items, curate=False)
    queue(user, propose(user))
    document = Document.objects.create(
        user=user,
        title="A very long document title about the quarterly audit log review of the billing service",
        original_name="quarterly-audit-log-review-of-the-billing-service-2026.md",
        sha256=uuid.uuid4().hex * 2,
        status="ready",
        progress=100,
        markdown=f"# Audit\n\n{LONG}\n",
    )
    Chunk.objects.create(
        document=document, user=user, namespace="default", ordinal=0, text=LONG, token_count=60
    )
    ChatMessage.objects.create(session=session, role=ChatRole.USER, content=LONG)
    return {
        "dashboard": reverse("dashboard"),
        "memories": reverse("memory_list"),
        "memory-search": reverse("memory_list") + "?q=audit+log",
        "memory": reverse("memory_detail", args=[memory.pk]),
        "memory-edit": reverse("memory_edit", args=[memory.pk]),
        "memory-add": reverse("memory_add"),
        "review": reverse("memory_review"),
        "sessions": reverse("session_list"),
        "session": reverse("session_detail", args=[session.pk]),
        "graph": reverse("graph"),
        "knowledge": reverse("library"),
        "knowledge-search": reverse("knowledge_search") + "?q=audit+log",
        "document": reverse("document_detail", args=[document.pk]),
        "chat": reverse("chat"),
        "chat-session": reverse("chat_session", args=[session.pk]),
        "evaluation": reverse("evaluation"),
        "settings-account": reverse("settings"),
        "settings-privacy": reverse("privacy_settings"),
        "settings-data": reverse("data_settings"),
        "settings-api-keys": reverse("api_keys"),
        "health": reverse("health"),
        "users": reverse("users"),
        "users-memories": f"/users/{lena.pk}/memories/",
        "api-docs": "/api/v1/docs",
        "not-found": "/no-such-page/",
    }


@pytest.mark.parametrize("size", SIZES)
def test_no_page_is_wider_than_the_window(
    page: Page, log_in, pages, live_server, size, csp_violations, tmp_path
):
    page.set_viewport_size(SIZES[size])
    log_in("alice")
    too_wide = {}
    for name, path in pages.items():
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        scroll_width, window_width = page.evaluate(WIDTH)
        if scroll_width > window_width:
            too_wide[name] = scroll_width
        page.screenshot(path=str(tmp_path / f"{size}-{name}.png"), full_page=True)  # kept in test-artifacts/
    page.context.clear_cookies()
    page.goto(live_server.url + reverse("login"))
    scroll_width, window_width = page.evaluate(WIDTH)
    if scroll_width > window_width:
        too_wide["login"] = scroll_width
    assert too_wide == {}
    assert csp_violations == []


def test_on_a_phone_the_memory_list_is_cards_whose_text_opens_the_memory(
    page: Page, log_in, pages, live_server
):
    page.set_viewport_size(SIZES["phone"])
    log_in("alice")
    page.goto(live_server.url + pages["memories"])
    rows = page.locator("#memory-table tbody tr.memory-row")
    expect(rows).to_have_count(6)
    for index in range(6):
        box = rows.nth(index).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        for action in ("Open", "Edit", "Delete"):
            link = (
                rows.nth(index)
                .get_by_role("link", name=action)
                .or_(rows.nth(index).get_by_role("button", name=action))
            )
            action_box = link.bounding_box()
            assert action_box is not None and action_box["x"] + action_box["width"] <= 390, action
    # The inline edit form replaces the card, in the card's width.
    rows.nth(1).get_by_role("link", name="Edit").click()
    expect(page.get_by_role("form", name="Edit memory")).to_be_visible()
    scroll_width, window_width = page.evaluate(WIDTH)
    assert scroll_width <= window_width
    text = rows.nth(0).locator("a.memory-text")
    expect(text).to_have_css("display", "block")
    href = text.get_attribute("href")
    text.click()
    expect(page).to_have_url(live_server.url + href)
    expect(page.get_by_role("heading", name="Memory")).to_be_visible()


def test_on_a_phone_reviews_approve_and_reject_are_in_view(page: Page, log_in, pages, live_server):
    page.set_viewport_size(SIZES["phone"])
    log_in("alice")
    page.goto(live_server.url + pages["review"])
    row = page.locator("table.review tbody tr").first
    for name in ("Approve", "Reject"):
        button = row.get_by_role("button", name=name, exact=True)
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, name
    for name in ("Approve selected", "Reject selected"):
        box = page.get_by_role("button", name=name).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, name
    row.get_by_role("button", name="Reject", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Proposal rejected.")).to_be_visible()
