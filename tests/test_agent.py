"""The chat agent through the real HTTP path: the official `openai` client → Mnemo → a scripted LLM server."""

import pytest
from openai import APIStatusError, OpenAI

from agents.answers import RETRIEVAL_ONLY
from conversations.models import ChatMessage
from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)
RETRIEVAL_ONLY_ZH = "仅检索回答（未配置 LLM）："


@pytest.fixture
def mnemo(live_server, write_key) -> OpenAI:
    return OpenAI(base_url=f"{live_server.url}/v1", api_key=write_key, max_retries=0, timeout=30)


def ask(client: OpenAI, text: str, session: str, **kwargs) -> str:
    response = client.chat.completions.create(
        model="mnemo-agent", messages=[{"role": "user", "content": text}], user=session, **kwargs
    )
    if kwargs.get("stream"):
        return "".join(chunk.choices[0].delta.content or "" for chunk in response if chunk.choices)
    return response.choices[0].message.content


def test_a_fact_told_in_one_session_answers_a_question_in_the_next(fake_llm, mnemo, user):
    first = ask(mnemo, "Hi! My name is Alice and I work as a data engineer.", "session-1")
    assert first.startswith("Done: ✅ Memory added")
    fact = Memory.objects.get(user=user, memory_type="semantic")
    assert fact.content == "The user's name is Alice and they work as a data engineer."
    assert fact.source_message.content.startswith("Hi! My name is Alice")
    trace = ChatMessage.objects.filter(role="assistant").first().tool_calls
    assert trace[0]["name"] == "memory_add" and trace[0]["ok"] is True

    answer = ask(mnemo, "What do I do for work?", "session-2")
    assert "data engineer" in answer
    # The memory reached the model through the system prompt of the new session's request.
    assert "data engineer" in fake_llm.requests[-1]["messages"][0]["content"]


def test_streaming_gives_the_same_memory_enabled_answer(fake_llm, mnemo, user):
    ask(mnemo, "My name is Bo and I work as a nurse.", "s1", stream=True)
    assert Memory.objects.filter(user=user, memory_type="semantic", content__contains="nurse").exists()
    streamed = ask(mnemo, "What is my job?", "s2", stream=True)
    assert "nurse" in streamed


def test_models_lists_the_agent_and_needs_a_key(mnemo, live_server):
    assert [model.id for model in mnemo.models.list()] == ["mnemo-agent"]
    anonymous = OpenAI(base_url=f"{live_server.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(Exception) as error:
        anonymous.models.list()
    assert getattr(error.value, "status_code", None) == 401


def test_a_provider_timeout_is_a_502_with_a_clear_message(fake_llm, mnemo, settings):
    settings.LLM_TIMEOUT = 1
    fake_llm.mode = "slow"
    with pytest.raises(APIStatusError) as failed:
        ask(mnemo, "Hello there", "s-timeout")
    assert failed.value.status_code == 502
    assert "The language model failed" in failed.value.message and "timed out" in failed.value.message
    assert "timed out" in ChatMessage.objects.filter(role="assistant").first().error


def test_a_turn_stops_at_its_budget_even_when_every_read_is_quick(fake_llm, mnemo, settings):
    settings.LLM_TURN_SECONDS = 2
    fake_llm.mode = "drip"  # 40 words, 0.3 s apart: 12 s, but never a read over LLM_TIMEOUT
    with pytest.raises(APIStatusError) as failed:
        ask(mnemo, "Tell me a long story", "s-budget")
    assert failed.value.status_code == 502
    assert "longer than the 2 s a chat turn may take" in failed.value.message
    # Mnemo hung up on the model before the answer's 40 words were out: the budget ended the turn, not the
    # answer (counted in chunks, not seconds, so a busy machine does not decide it).
    assert fake_llm.abandoned.wait(timeout=30)
    assert fake_llm.chunks_sent < 40


def test_a_streamed_turn_stops_asking_the_model_when_its_client_goes_away(fake_llm, live_server, write_key):
    import httpx

    fake_llm.mode = "drip"  # 40 words over 12 s
    body = {
        "model": "mnemo-agent",
        "stream": True,
        "messages": [{"role": "user", "content": "Tell me a story"}],
    }
    headers = {"X-API-Key": write_key}
    with httpx.stream(
        "POST", f"{live_server.url}/v1/chat/completions", json=body, headers=headers
    ) as response:
        for line in response.iter_lines():
            if "slowly" in line:
                break  # the client leaves after the first words
    assert fake_llm.abandoned.wait(timeout=30)
    assert fake_llm.streams_abandoned == 1  # Mnemo hung up on the model, long before its 12 s answer ended
    assert fake_llm.chunks_sent < 40


def test_a_provider_error_is_a_502_with_a_clear_message(fake_llm, mnemo):
    fake_llm.mode = "error"
    with pytest.raises(APIStatusError) as failed:
        ask(mnemo, "Hello there", "s-error")
    assert failed.value.status_code == 502 and "500" in failed.value.message


def test_a_provider_error_while_streaming_ends_in_a_clear_message(fake_llm, mnemo):
    fake_llm.mode = "error"  # the status is sent before the model is asked, so the stream says it
    answer = ask(mnemo, "Hello there", "s-error-stream", stream=True)
    assert "The language model failed" in answer and "500" in answer


def test_malformed_tool_call_json_is_reported_back_and_the_turn_finishes(fake_llm, mnemo, user):
    fake_llm.mode = "malformed_tool_call"
    answer = ask(mnemo, "Remember that I like tea.", "s-bad-json")
    trace = ChatMessage.objects.filter(role="assistant").first().tool_calls
    assert trace[0]["ok"] is False
    assert "not a valid JSON object" in trace[0]["result"]
    assert answer.startswith("Done: error")
    assert not Memory.objects.filter(user=user, memory_type="semantic").exists()


def test_a_tool_that_raises_is_reported_not_a_500(fake_llm, mnemo, monkeypatch):
    from memories.tools import MemoryTool

    def explode(self, parameters):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(MemoryTool, "execute", explode)
    fake_llm.mode = "tool_call"
    answer = ask(mnemo, "save this please", "s-raise")
    trace = ChatMessage.objects.filter(role="assistant").first().tool_calls
    assert trace[0]["ok"] is False and "disk on fire" in trace[0]["result"]
    assert answer.startswith("Done: error: the tool failed")


def test_without_an_llm_the_answer_is_retrieval_only(mnemo, user):
    from memories.actions.write import memory_create

    memory_create(user=user, content="The user works as a data engineer at Acme.", memory_type="semantic")
    answer = ask(mnemo, "What do I do for work?", "s-offline")
    assert answer.startswith("Retrieval-only answer (no LLM is configured):")
    assert "data engineer at Acme" in answer


def test_without_an_llm_stated_facts_are_still_captured_once(mnemo, user):
    ask(mnemo, "I work as a pilot. What's up?", "s-facts")
    ask(mnemo, "I work as a pilot.", "s-facts")
    facts = Memory.objects.filter(user=user, memory_type="semantic")
    assert list(facts.values_list("content", flat=True)) == ["The user works as a pilot"]
    assert facts.get().seen_count == 2  # told twice: counted, not stored twice
    assert facts.get().source_message.role == "user"


def test_bad_requests_get_openai_style_errors(live_server, write_key):
    import requests

    url = f"{live_server.url}/v1/chat/completions"
    headers = {"Authorization": f"Bearer {write_key}"}
    assert requests.post(url, json={"messages": []}, headers=headers, timeout=10).status_code == 400
    response = requests.post(url, data="not json", headers=headers, timeout=10)
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]
    assert (
        requests.post(url, json={"messages": [{"role": "user", "content": "hi"}]}, timeout=10).status_code
        == 401
    )


def test_without_an_llm_a_question_about_oneself_is_not_saved_as_a_fact(mnemo, user):
    ask(mnemo, "What do I like to drink?", "s-question")
    assert not Memory.objects.filter(user=user, memory_type="semantic").exists()


# --- what an answer carries --------------------------------------------------------------------------------


def test_without_an_llm_where_do_i_work_leads_with_the_users_own_employer(mnemo, user):
    from memories.actions.write import memory_create

    for fact in (
        "Farida works at Kestrel Labs as a chemist.",
        "Tomasz works at Brightwave.",
        "The user works at Lumen Bank as a risk analyst.",
        "赵磊在阿里巴巴上班",
        "用户的妹妹在网易上班",
    ):
        memory_create(user=user, content=fact, memory_type="semantic")
    answer = ask(mnemo, "Where do I work?", "s-work")
    assert answer.splitlines()[0] == f"{RETRIEVAL_ONLY} You work at Lumen Bank as a risk analyst."
    # A question in Chinese gets the Chinese label, whatever the language of the memory it answers with.
    assert ask(mnemo, "我在哪儿上班？", "s-work").splitlines()[0] == (
        f"{RETRIEVAL_ONLY_ZH} You work at Lumen Bank as a risk analyst."
    )
    memory_create(user=user, content="用户在京东物流上班", memory_type="semantic")  # supersedes Lumen Bank
    assert ask(mnemo, "我在哪儿上班？", "s-work").splitlines()[0] == f"{RETRIEVAL_ONLY_ZH} 你在京东物流上班。"
    # Another person's employer, asked by name, is theirs.
    assert ask(mnemo, "Where does Farida work?", "s-work").splitlines()[0] == (
        f"{RETRIEVAL_ONLY} Farida works at Kestrel Labs as a chemist."
    )


def test_without_an_llm_a_statement_is_acknowledged_with_what_was_saved(mnemo, user):
    said = ask(mnemo, "I live in Bergen and I prefer rooibos", "s-told")
    assert said == f"{RETRIEVAL_ONLY} Noted, I'll remember: you live in Bergen; you prefer rooibos."
    moved = ask(mnemo, "I now live in Tromsø.", "s-told")
    assert (
        moved
        == f"{RETRIEVAL_ONLY} Noted, I'll remember: you now live in Tromsø (no longer: you live in Bergen)."
    )
    assert ask(mnemo, "I prefer rooibos", "s-told") == f"{RETRIEVAL_ONLY} I already knew: you prefer rooibos."
    assert ask(mnemo, "我住在厦门，我喜欢喝乌龙茶", "s-told") == (
        f"{RETRIEVAL_ONLY_ZH} 记下了：你住在厦门（不再是：you now live in Tromsø）；你喜欢喝乌龙茶。"
    )
    # A statement with a question gets both: what was saved, then the answer.
    both = ask(mnemo, "I keep bees. What do I prefer?", "s-told")
    assert both.startswith(f"{RETRIEVAL_ONLY} Noted, I'll remember: you keep bees. You prefer rooibos.")


def test_an_answer_and_the_models_context_hold_only_memories_above_the_relevance_floor(fake_llm, mnemo, user):
    from memories.actions.write import memory_create

    memory_create(user=user, content="Yaw Boateng runs the Accra depot.", memory_type="semantic")
    memory_create(user=user, content="The Accra depot moved to Tema last spring.", memory_type="semantic")
    ask(mnemo, "What does Yaw Boateng do?", "s-floor")
    context = fake_llm.requests[-1]["messages"][0]["content"]
    assert "Yaw Boateng runs the Accra depot." in context
    # Linked to Yaw only through the depot in the graph, and matching nothing the question says.
    assert "Tema" not in context


def test_without_an_llm_nothing_weak_pads_the_answer(mnemo, user):
    from memories.actions.write import memory_create

    memory_create(user=user, content="Yaw Boateng runs the Accra depot.", memory_type="semantic")
    memory_create(user=user, content="The Accra depot moved to Tema last spring.", memory_type="semantic")
    answer = ask(mnemo, "What does Yaw Boateng do?", "s-floor")
    assert answer == f"{RETRIEVAL_ONLY} Yaw Boateng runs the Accra depot."


def test_with_an_llm_what_do_you_know_about_me_sends_the_grouped_profile(fake_llm, mnemo, user):
    from memories.actions.write import memory_create, memory_write

    user.first_name = "Amara"
    user.save()
    for fact in ("I teach chemistry", "Kwesi is my brother", "Kwesi lives in Kumasi"):
        memory_create(user=user, content=fact, memory_type="semantic")
    memory_write(user=user, content="用户陈静是一名护士", memory_type="semantic")
    ask(mnemo, "What do you know about me?", "s-profile")
    context = fake_llm.requests[-1]["messages"][0]["content"]
    assert "**People you know**\n- Kwesi — brother" in context
    assert "⚠ Conflicting name: Amara (your account) or 陈静 (“用户陈静是一名护士”)?" in context
    assert "Kwesi lives in Kumasi" not in context
