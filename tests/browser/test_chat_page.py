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
        expect(answer.locator(".bubble-text")).to_contain_text("Done: ✅ 记忆已添加", timeout=60_000)
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
