"""Real headless Chromium against a live server: the chat page streams its answers under the CSP."""

import pytest
from playwright.sync_api import Page, expect

from memories.models import Memory
from tests.fake_llm import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def start_a_chat(page: Page, log_in) -> None:
    log_in("alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Chat").click()
    expect(page.get_by_role("heading", name="Chat", exact=True)).to_be_visible()
    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_text("No messages yet.")).to_be_visible()
    # The page shows before its deferred chat.js has run, and Enter pressed then only adds a line to the box
    # (the form without JavaScript): the message was never sent, and the test waited 60 s for an answer.
    page.wait_for_load_state()
    # A mark that a full page load would wipe: the answer must arrive without one (streamed by chat.js).
    page.evaluate("window.chatMark = 'still here'")


def test_without_an_llm_the_answer_is_marked_retrieval_only(
    page: Page, log_in, user, csp_violations, tmp_path
):
    start_a_chat(page, log_in)

    page.get_by_label("Message").fill("我叫小明，我是一名设计师。")
    page.get_by_label("Message").press("Enter")

    answer = page.locator(".chat-message.assistant")
    # The first turn loads the local embedding models, which can take a while on a cold start.
    expect(answer.locator(".tag.retrieval-only")).to_have_text("retrieval-only", timeout=60_000)
    expect(page.locator(".chat-message.user .bubble-text")).to_have_text("我叫小明，我是一名设计师。")
    expect(answer.locator(".chat-saved")).to_contain_text("我叫小明，我是一名设计师。")
    assert page.evaluate("window.chatMark") == "still here"
    expect(page.get_by_label("Message")).to_have_value("")
    page.screenshot(path=str(tmp_path / "chat-offline.png"), full_page=True)
    assert csp_violations == []


def test_with_an_llm_the_answer_streams_and_the_saved_memory_can_be_undone(
    page: Page, log_in, user, settings, csp_violations
):
    with FakeLLM() as fake:
        settings.LLM_BASE_URL = fake.url
        settings.LLM_API_KEY = "test"
        settings.LLM_MODEL = "fake-model"
        settings.LLM_TIMEOUT = 10
        start_a_chat(page, log_in)

        page.get_by_label("Message").fill("My name is Alice and I work as a data engineer.")
        page.get_by_role("button", name="Send").click()

        answer = page.locator(".chat-message.assistant")
        expect(answer.locator(".bubble-text")).to_contain_text("Done: ✅ Memory added", timeout=60_000)
        saved = answer.locator(".chat-saved")
        expect(saved).to_contain_text("The user's name is Alice and they work as a data engineer.")
        expect(answer.locator(".tag.retrieval-only")).to_have_count(0)
        assert page.evaluate("window.chatMark") == "still here"

        answer.locator("summary", has_text="Tool trace").click()
        expect(answer.locator(".trace-calls")).to_contain_text("memory_add")

        fact = saved.locator(".saved-item", has=page.locator(".tag.type-semantic"))
        fact.get_by_role("button", name="Undo").click()
        expect(saved.get_by_text("Undone: this memory was deleted.")).to_be_visible()
        expect(saved.locator(".saved-item")).to_have_count(2)  # the turn itself stays in working memory
        assert not Memory.objects.filter(user=user, memory_type="semantic").exists()
        assert page.evaluate("window.chatMark") == "still here"
    assert csp_violations == []


# --- where the newest message is, and what a retrieval-only answer shows ----------------------------------------

LINE = "A message about the audit log review, long enough to take a few lines on a phone screen."


def long_session(user):
    from conversations.models import ChatMessage, ChatRole
    from memories.actions.rules import session_for_key

    session = session_for_key(user=user, key="chat-long")
    for i in range(20):
        ChatMessage.objects.create(session=session, role=ChatRole.USER, content=f"Question {i}: {LINE}")
        ChatMessage.objects.create(
            session=session,
            role=ChatRole.ASSISTANT,
            content=f"Answer {i}: {LINE}",
            retrieved={"memories": [], "chunks": [], "saved": [], "retrieval_only": True},
        )
    return session


def assert_in_view_above_the_composer(page: Page, message) -> None:
    box = message.bounding_box()
    composer = page.locator("#chat-form").bounding_box()
    viewport = page.viewport_size
    assert box is not None and composer is not None and viewport is not None
    assert box["y"] >= 0, box
    assert box["y"] + box["height"] <= composer["y"] + 0.5, (box, composer)
    assert composer["y"] + composer["height"] <= viewport["height"] + 0.5, composer


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 720}, {"width": 390, "height": 844}])
def test_the_newest_message_is_in_view_on_opening_and_after_sending(
    page: Page, log_in, user, live_server, csp_violations, tmp_path, viewport
):
    session = long_session(user)
    page.set_viewport_size(viewport)
    log_in("alice")

    page.goto(f"{live_server.url}/chat/{session.pk}/")
    last = page.locator("#chat-log > .chat-message").last
    expect(last).to_contain_text("Answer 19:")
    assert page.evaluate("window.scrollY") > 0  # the session opened at its end, not its oldest message
    assert_in_view_above_the_composer(page, last)
    expect(page.locator("#chat-log > .chat-message").first).not_to_be_in_viewport()

    page.get_by_role("textbox", name="Message").fill("Where does the audit log live?")
    page.get_by_role("button", name="Send").click()
    answer = page.locator("#chat-log > .chat-message.assistant").last
    expect(answer.locator(".tag.retrieval-only")).to_be_visible(timeout=60_000)
    expect(page.locator("#chat-log > .chat-message")).to_have_count(42)
    assert_in_view_above_the_composer(page, page.locator("#chat-log > .chat-message").last)
    page.screenshot(path=str(tmp_path / f"chat-scrolled-{viewport['width']}.png"))
    assert csp_violations == []


def test_a_retrieval_only_answer_lists_each_passage_once(page: Page, log_in, user, csp_violations, tmp_path):
    from knowledge.services import document_create_from_text

    passage = "Tag the release, then publish the wheel to the package index."
    document_create_from_text(
        user=user, title="Release checklist", text=f"# Release checklist\n\n{passage}", background=False
    )
    start_a_chat(page, log_in)

    page.get_by_label("Message").fill("How do I publish the release wheel?")
    page.get_by_label("Message").press("Enter")

    answer = page.locator(".chat-message.assistant")
    expect(answer.locator(".tag.retrieval-only")).to_be_visible(timeout=60_000)
    expect(answer.locator(".cited-chunks li")).to_have_count(1)
    expect(answer.get_by_text(passage)).to_have_count(1)
    assert answer.inner_text().count(passage) == 1
    assert answer.inner_text().count("[1]") == 1
    page.reload()
    answer = page.locator(".chat-message.assistant")
    assert answer.inner_text().count(passage) == 1
    page.screenshot(path=str(tmp_path / "chat-retrieval-only.png"), full_page=True)
    assert csp_violations == []
