"""The chat pages: sessions, a session's conversation, the streamed answer (SSE), undo, end, errors, scoping."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.answers import RETRIEVAL_ONLY
from conversations.models import AgentSession, ChatMessage, ChatRole
from knowledge.models import Chunk, Document
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import Memory

# The memory services mirror to the vector store on commit, and retrieval reads the mirror.
pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}
XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
ALICE = "My name is Alice and I work as a data engineer."
ALICE_FACT = "The user's name is Alice and they work as a data engineer."


@pytest.fixture
def session(user) -> AgentSession:
    return session_for_key(user=user, key="chat-test")


def page_url(session: AgentSession) -> str:
    return reverse("chat_session", args=[session.pk])


def stream(client: Client, session: AgentSession, text: str) -> list[tuple[str, dict]]:
    """POST to the SSE endpoint and parse its events into (name, payload) pairs."""
    response = client.post(reverse("chat_stream", args=[session.pk]), {"text": text})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    body = b"".join(response.streaming_content).decode()
    events = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def streamed_text(events: list[tuple[str, dict]]) -> str:
    return "".join(payload["text"] for name, payload in events if name == "delta")


def assistant(session: AgentSession) -> ChatMessage:
    return session.messages.get(role=ChatRole.ASSISTANT)


# --- sessions ------------------------------------------------------------------------------------------------


def test_sessions_list_shows_mine_newest_first_named_by_their_first_message(logged_in, user, other_user):
    older = session_for_key(user=user, key="chat-older")
    AgentSession.objects.filter(pk=older.pk).update(started_at=timezone.now() - timedelta(days=1))
    ChatMessage.objects.create(session=older, role=ChatRole.USER, content="What did I plan for Monday?")
    newer = session_for_key(user=user, key="chat-newer")
    titled = session_for_key(user=user, key="api-session")
    AgentSession.objects.filter(pk=titled.pk).update(
        title="Trip planning", started_at=timezone.now() - timedelta(days=2)
    )
    session_for_key(user=other_user, key="mallory-chat")

    response = logged_in.get(reverse("chat"))

    assert response.status_code == 200
    body = response.content.decode()
    assert [s.key for s in response.context["sessions"]] == ["chat-newer", "chat-older", "api-session"]
    assert [s.label for s in response.context["sessions"]] == [
        "chat-newer",
        "What did I plan for Monday?",
        "Trip planning",
    ]
    assert f'href="{page_url(newer)}"' in body
    assert "mallory-chat" not in body
    assert "retrieval-only" in body  # no LLM in tests: the page says what answers will be


def test_new_chat_creates_a_session_and_opens_it(logged_in, user):
    response = logged_in.post(reverse("chat_new"))
    session = AgentSession.objects.get(user=user)
    assert response.status_code == 302
    assert response["Location"] == page_url(session)
    assert session.key.startswith("chat-")
    assert logged_in.get(reverse("chat_new")).status_code == 405


def test_the_pages_need_a_login(client, session):
    for url in (reverse("chat"), page_url(session)):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")
    response = client.post(reverse("chat_stream", args=[session.pk]), {"text": "hi"})
    assert response.status_code == 302
    assert not ChatMessage.objects.exists()


def test_session_page_shows_the_conversation_escaped(logged_in, session):
    ChatMessage.objects.create(session=session, role=ChatRole.USER, content=f"user says {XSS}")
    ChatMessage.objects.create(
        session=session,
        role=ChatRole.ASSISTANT,
        content=f"model says {XSS}",
        tool_calls=[{"id": "c1", "name": f"evil{XSS}", "arguments": "{}", "ok": True, "result": XSS}],
        retrieved={"memories": [], "chunks": [], "saved": [], "retrieval_only": False},
        prompt_tokens=11,
        completion_tokens=7,
        latency_ms=321,
    )

    response = logged_in.get(page_url(session))

    assert response.status_code == 200
    body = response.content.decode()
    assert XSS not in body
    # The first message names the session (title, heading, sidebar) besides its bubble; then the answer,
    # the tool's name and the tool's result.
    assert body.count(ESCAPED) == 7
    assert "Tool trace" in body and "1 call" in body
    assert "11 prompt + 7 completion tokens · 321 ms" in body
    assert 'id="chat-form"' in body
    assert f'data-stream-url="{reverse("chat_stream", args=[session.pk])}"' in body
    assert re.search(r'<script src="/static/js/chat\.js" nonce="[\w+/=-]+" defer></script>', body)
    assert "retrieval-only</span>" not in body


def test_an_answer_cites_its_knowledge_passages_with_links(logged_in, user, session):
    document = Document.objects.create(user=user, title="Handbook", namespace="default")
    chunk = Chunk.objects.create(
        document=document, user=user, namespace="default", ordinal=0, text="Deploys happen on Tuesdays."
    )
    message = ChatMessage.objects.create(
        session=session,
        role=ChatRole.ASSISTANT,
        content="Deploys are on Tuesdays [1], not [7].",
        retrieved={"memories": [], "chunks": [str(chunk.pk)], "saved": [], "retrieval_only": False},
    )

    body = logged_in.get(page_url(session)).content.decode()

    assert f'href="/knowledge/{document.pk}/?cite={chunk.pk}#chunk-{chunk.pk}">Handbook</a>' in body
    assert f'<a href="#c-{message.pk}-1">[1]</a>' in body
    assert "not [7]" in body  # no such passage: left as text
    assert "Deploys happen on Tuesdays." in body


def test_a_cited_passage_names_its_page_and_says_when_it_was_disabled_since(logged_in, user, session):
    document = Document.objects.create(user=user, title="Handbook", namespace="default")
    chunk = Chunk.objects.create(
        document=document,
        user=user,
        namespace="default",
        ordinal=0,
        text="Deploys happen on Tuesdays.",
        page_start=3,
        page_end=4,
        enabled=False,
    )
    ChatMessage.objects.create(
        session=session,
        role=ChatRole.ASSISTANT,
        content="Deploys are on Tuesdays [1].",
        retrieved={"memories": [], "chunks": [str(chunk.pk)], "saved": [], "retrieval_only": False},
    )

    body = logged_in.get(page_url(session)).content.decode()

    assert '<span class="tag location">pages 3–4</span>' in body
    assert ">disabled</span>" in body


def test_the_session_page_costs_the_same_queries_however_many_turns(logged_in, user, session):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def add_turn(i: int) -> None:
        memory = memory_create(user=user, content=f"fact {i}", memory_type="semantic", session=session)
        ChatMessage.objects.create(session=session, role=ChatRole.USER, content=f"question {i}")
        ChatMessage.objects.create(
            session=session,
            role=ChatRole.ASSISTANT,
            content=f"answer {i}",
            retrieved={"memories": [str(memory.pk)], "chunks": [], "saved": [str(memory.pk)]},
        )

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert logged_in.get(page_url(session)).status_code == 200
        return len(queries)

    add_turn(0)
    one = count()
    for i in range(1, 5):
        add_turn(i)
    assert count() == one


# --- without an LLM ------------------------------------------------------------------------------------------


def test_without_an_llm_the_form_answers_retrieval_only_citing_the_memory(logged_in, user, session):
    memory = memory_create(
        user=user, content="The user works as a data engineer at Acme.", memory_type="semantic"
    )

    response = logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "What do I do for work?"})

    answer = assistant(session)
    assert response.status_code == 302
    assert response["Location"] == f"{page_url(session)}#message-{answer.pk}"
    assert answer.content.startswith(str(RETRIEVAL_ONLY))
    assert answer.retrieved["memories"] == [str(memory.pk)]
    body = logged_in.get(page_url(session)).content.decode()
    assert '<span class="tag retrieval-only"' in body
    assert f'href="/memories/{memory.pk}/">The user works as a data engineer at Acme.</a>' in body
    assert "What do I do for work?" in body


def test_without_an_llm_the_stream_sends_the_passages_and_a_done_event(logged_in, user, session):
    memory_create(user=user, content="The user works as a data engineer at Acme.", memory_type="semantic")

    events = stream(logged_in, session, "What do I do for work?")

    names = [name for name, _ in events]
    assert names[0] == "delta" and names[-1] == "done"
    assert streamed_text(events).startswith(str(RETRIEVAL_ONLY))
    assert "data engineer at Acme" in streamed_text(events)
    done = events[-1][1]
    assert done["id"] == str(assistant(session).pk)
    assert '<span class="tag retrieval-only"' in done["html"]
    assert done["html"].startswith(f'<li class="chat-message assistant" id="message-{done["id"]}">')


def test_chinese_round_trips_and_the_stated_fact_is_saved(logged_in, user, session):
    text = "我叫小明，我是一名设计师。"

    events = stream(logged_in, session, text)

    facts = Memory.objects.filter(user=user, memory_type="semantic").order_by("created_at")
    assert list(facts.values_list("content", flat=True)) == ["用户名叫小明", "用户是一名设计师"]
    assert session.messages.get(role=ChatRole.USER).content == text
    done = events[-1][1]["html"]
    assert "Memory from this turn" in done
    for fact in facts:
        assert f'href="/memories/{fact.pk}/">{fact.content}</a>' in done
    body = logged_in.get(page_url(session)).content.decode()
    assert body.count(text) >= 2  # the user's bubble and the turn kept in working memory
    assert "<title>我叫小明，我是一名设计师。 · Chat · Mnemo</title>" in body


# --- with the (fake) LLM -------------------------------------------------------------------------------------


def test_a_stated_fact_streams_its_tool_call_and_is_listed_with_undo(fake_llm, logged_in, user, session):
    events = stream(logged_in, session, ALICE)

    assert ("tool", {"name": "memory_add", "ok": True}) in events
    assert [name for name, _ in events].count("delta") > 1  # the answer came in pieces
    assert streamed_text(events).startswith("Done: ✅ Memory added")
    fact = Memory.objects.get(user=user, memory_type="semantic")
    assert fact.content == ALICE_FACT
    message = assistant(session)
    assert {"id": str(fact.pk), "action": "add", "superseded": []} in message.retrieved["saved"]
    done = events[-1][1]["html"]
    undo_url = reverse("chat_undo", args=[session.pk, message.pk, fact.pk])
    assert f'hx-post="{undo_url}"' in done
    assert "The user&#x27;s name is Alice and they work as a data engineer." in done
    assert "<code>memory_add</code>" in done and '<span class="tag trace-ok">ok</span>' in done
    assert "retrieval-only</span>" not in done
    assert "22 prompt + 14 completion tokens" in done  # two rounds of 11 + 7


def test_undo_deletes_the_saved_memory_and_swaps_the_item(fake_llm, logged_in, user, session):
    stream(logged_in, session, ALICE)
    fact = Memory.objects.get(user=user, memory_type="semantic")
    message = assistant(session)

    response = logged_in.post(
        reverse("chat_undo", args=[session.pk, message.pk, fact.pk]),
        **HTMX,
        HTTP_HX_TARGET=f"saved-{fact.pk}",
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body
    assert body.strip().startswith(f'<li id="saved-{fact.pk}" class="saved-item action-add is-undone">')
    assert "Undone: this memory was deleted." in body
    assert not Memory.objects.filter(pk=fact.pk).exists()
    page = logged_in.get(page_url(session)).content.decode()
    assert "No longer stored" in page


def test_undo_without_htmx_redirects_back_with_a_message(logged_in, user, session):
    logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "I live in Lisbon."})
    fact = Memory.objects.get(user=user, memory_type="semantic")
    message = assistant(session)

    response = logged_in.post(reverse("chat_undo", args=[session.pk, message.pk, fact.pk]), follow=True)

    assert response.redirect_chain == [(f"{page_url(session)}#message-{message.pk}", 302)]
    assert "Undone." in response.content.decode()
    assert not Memory.objects.filter(pk=fact.pk).exists()


def test_undo_refuses_a_memory_that_turn_did_not_save(logged_in, user, session):
    logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "I live in Lisbon."})
    message = assistant(session)
    unrelated = memory_create(user=user, content="Something said elsewhere.", memory_type="semantic")

    response = logged_in.post(reverse("chat_undo", args=[session.pk, message.pk, unrelated.pk]))

    assert response.status_code == 404
    assert Memory.objects.filter(pk=unrelated.pk).exists()
    user_message = session.messages.get(role=ChatRole.USER)
    saved = message.retrieved["saved"][0]["id"]
    # A user message never records saved memories: undo is for an answer's turn only.
    assert logged_in.post(reverse("chat_undo", args=[session.pk, user_message.pk, saved])).status_code == 404


def test_a_provider_error_shows_the_error_banner_not_a_500(fake_llm, logged_in, session):
    fake_llm.mode = "error"

    events = stream(logged_in, session, "Hello there")

    assert events[-1][0] == "done"
    assert (
        '<p class="chat-error" role="alert"><strong>The language model failed:</strong>'
        in events[-1][1]["html"]
    )
    response = logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "Hello again"}, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('class="chat-error"') == 2
    assert "the LLM provider answered 500" in body


def test_an_unexpected_failure_ends_the_stream_with_an_error_event(logged_in, session, monkeypatch):
    from agents.agent import Agent

    def explode(self, text):
        raise RuntimeError("vector store on fire")

    monkeypatch.setattr(Agent, "_memories", explode)

    events = stream(logged_in, session, "Hello")

    assert events[-1] == (
        "error",
        {"message": "The answer failed unexpectedly. Your message was kept; reload the page and try again."},
    )
    response = logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "Hello"}, follow=True)
    assert response.status_code == 200
    assert "The answer failed unexpectedly." in response.content.decode()


# --- the form and the session's end --------------------------------------------------------------------------


def test_an_empty_or_oversized_message_is_refused(logged_in, session):
    response = logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "   "})
    assert response.status_code == 422
    assert "Type a message first." in response.content.decode()
    response = logged_in.post(reverse("chat_stream", args=[session.pk]), {"text": "x" * 8001})
    assert response.status_code == 422
    assert "at most 8000 characters" in response.content.decode()
    assert not ChatMessage.objects.exists()


def test_ending_a_session_consolidates_its_important_working_memories(logged_in, user, session):
    for text in ("Remember the deploy key rotates Friday.", "记住：周五轮换部署密钥。"):
        memory_create(user=user, content=text, memory_type="working", importance=0.8, session=session)
    memory_create(user=user, content="small talk", memory_type="working", importance=0.3, session=session)

    response = logged_in.post(reverse("chat_end", args=[session.pk]), follow=True)

    body = response.content.decode()
    assert "Session ended: 2 important working memories consolidated into episodic memory." in body
    assert Memory.objects.filter(session=session, memory_type="episodic").count() == 2
    session.refresh_from_db()
    assert session.ended_at is not None
    assert 'id="chat-form"' not in body and "This session has ended." in body
    assert logged_in.post(reverse("chat_stream", args=[session.pk]), {"text": "hi"}).status_code == 409
    assert logged_in.post(reverse("chat_send", args=[session.pk]), {"text": "hi"}).status_code == 302
    assert not ChatMessage.objects.exists()


# --- scoping -------------------------------------------------------------------------------------------------


def test_another_users_session_is_404_everywhere(client, user, other_user):
    theirs = session_for_key(user=user, key="chat-alice")
    client.force_login(other_user)
    ChatMessage.objects.create(session=theirs, role=ChatRole.USER, content="Alice's private question")
    answer = ChatMessage.objects.create(
        session=theirs, role=ChatRole.ASSISTANT, content="private", retrieved={"saved": []}
    )
    secret = memory_create(user=user, content="Alice's secret", memory_type="semantic", session=theirs)
    answer.retrieved = {"saved": [str(secret.pk)]}
    answer.save()

    assert client.get(page_url(theirs)).status_code == 404
    for name in ("chat_send", "chat_stream", "chat_end"):
        assert client.post(reverse(name, args=[theirs.pk]), {"text": "hi"}).status_code == 404
    undo = reverse("chat_undo", args=[theirs.pk, answer.pk, secret.pk])
    assert client.post(undo, **HTMX).status_code == 404
    # Mallory's own session with Alice's message id in the URL is no way around it either.
    mine = session_for_key(user=other_user, key="chat-mallory")
    assert client.post(reverse("chat_undo", args=[mine.pk, answer.pk, secret.pk])).status_code == 404
    assert Memory.objects.filter(pk=secret.pk).exists()
    assert ChatMessage.objects.filter(session=theirs).count() == 2
    theirs.refresh_from_db()
    assert theirs.ended_at is None
    assert "Alice" not in client.get(reverse("chat")).content.decode()


# --- what a turn keeps (issue 14) ----------------------------------------------------------------------------


def semantic(user) -> list[str]:
    return list(
        Memory.objects.filter(user=user, memory_type="semantic")
        .order_by("created_at")
        .values_list("content", flat=True)
    )


def test_a_turn_keeps_each_stated_fact_once_in_the_third_person(logged_in, user, session):
    stream(logged_in, session, "我叫小明，我在上海做数据分析")
    stream(logged_in, session, "I also have a cat named Mochi. What should I feed her?")
    stream(logged_in, session, "我叫小明。")
    assert semantic(user) == ["用户名叫小明", "用户在上海做数据分析", "The user has a cat named Mochi"]
    assert Memory.objects.get(user=user, content="用户名叫小明").seen_count == 2
    question = Memory.objects.get(user=user, memory_type="working", content__startswith="I also have")
    assert question.importance == 0.3  # a question is never consolidated into long-term memory


def test_questions_and_small_talk_are_never_facts(logged_in, user, session):
    for text in ("What do I like to drink?", "Hi there!", "Can you summarise my notes?", "你对我了解多少？"):
        stream(logged_in, session, text)
    assert semantic(user) == []


def test_a_changed_fact_supersedes_and_undo_brings_the_old_one_back(logged_in, user, session):
    stream(logged_in, session, "I live in Lisbon.")
    events = stream(logged_in, session, "I moved to Porto.")
    lisbon, porto = (
        Memory.objects.get(user=user, content=c)
        for c in ("The user lives in Lisbon", "The user moved to Porto")
    )
    assert lisbon.superseded_by == porto
    done = events[-1][1]["html"]
    assert "replaces an older fact" in done and "was: <a" in done and "The user lives in Lisbon" in done
    message = session.messages.filter(role=ChatRole.ASSISTANT).order_by("-created_at").first()
    body = logged_in.post(
        reverse("chat_undo", args=[session.pk, message.pk, porto.pk]), **HTMX
    ).content.decode()
    assert "the fact it replaced is current again" in body
    assert not Memory.objects.filter(pk=porto.pk).exists()
    assert Memory.objects.get(pk=lisbon.pk).superseded_by is None


def test_undo_of_a_repeat_uncounts_it(logged_in, user, session):
    stream(logged_in, session, "I work at Acme.")
    stream(logged_in, session, "I work at Acme.")
    fact = Memory.objects.get(user=user, memory_type="semantic")
    assert fact.seen_count == 2
    message = session.messages.filter(role=ChatRole.ASSISTANT).order_by("-created_at").first()
    assert "already known" in logged_in.get(page_url(session)).content.decode()
    body = logged_in.post(
        reverse("chat_undo", args=[session.pk, message.pk, fact.pk]), **HTMX
    ).content.decode()
    assert "the repeat is no longer counted" in body
    fact.refresh_from_db()
    assert fact.seen_count == 1 and len(fact.sources) == 1


# --- what an answer cites ------------------------------------------------------------------------------------


def test_a_retrieval_only_answer_shows_each_passage_and_memory_once(logged_in, user, session):
    from knowledge.services import document_create_from_text

    document_create_from_text(
        user=user,
        title="Release checklist",
        text="# Release checklist\n\nTag the release, then publish the wheel to the package index.",
    )
    memory = memory_create(
        user=user, content="The user publishes releases on Fridays.", memory_type="semantic"
    )

    events = stream(logged_in, session, "How do I publish the release wheel?")

    answer = assistant(session)
    assert len(answer.retrieved["chunks"]) == 1 and answer.retrieved["memories"] == [str(memory.pk)]
    # The stored answer (what API clients read) still lists them; the page lists each once, with its link.
    assert "publish the wheel to the package index" in answer.content
    for html in (events[-1][1]["html"], logged_in.get(page_url(session)).content.decode()):
        assert html.count("publish the wheel to the package index") == 1
        assert html.count("The user publishes releases on Fridays.") == 1
        assert html.count('<span class="citation-n">[1]</span>') == 1
        # The bubble leads with the best match, said to the user; the list below holds it once.
        assert f"{RETRIEVAL_ONLY} You publish releases on Fridays.</div>" in html


def test_a_retrieval_only_answer_without_sources_keeps_its_text(logged_in, session):
    stream(logged_in, session, "Anything about volcanoes?")
    body = logged_in.get(page_url(session)).content.decode()
    assert f"{RETRIEVAL_ONLY} nothing in your memories or knowledge base matches this yet." in body


def test_the_users_current_message_is_never_cited_as_a_memory(logged_in, user, session):
    earlier = memory_create(
        user=user, content="The user works as a data engineer at Acme.", memory_type="semantic"
    )

    stream(logged_in, session, "I work as a data engineer at Acme and I live in Lisbon. Where do I work?")

    asked = session.messages.get(role=ChatRole.USER)
    own = set(Memory.objects.filter(source_message=asked).values_list("pk", flat=True))
    assert Memory.objects.filter(pk__in=own, memory_type="semantic").exists()  # the turn did state facts
    cited = assistant(session).retrieved["memories"]
    assert str(earlier.pk) in cited  # what was known before still answers
    assert not {str(pk) for pk in own} & set(cited)
    assert assistant(session).content.startswith(
        f"{RETRIEVAL_ONLY} Noted, I'll remember: you live in Lisbon. "
        "I already knew: you work as a data engineer at Acme. You work as a data engineer at Acme."
    )
    body = logged_in.get(page_url(session)).content.decode()
    start = body.index('<ul class="cited-memories">')
    sources = body[start : body.index("</ul>", start)]
    assert "lives in Lisbon" not in sources


def test_what_do_you_know_about_me_shows_the_groups_under_headings(logged_in, user, session):
    for fact in (
        "I live in Gdańsk",
        "I work at Amber Freight",
        "Zofia is my colleague",
        "Zofia works at Baltic Rail",
    ):
        memory_create(user=user, content=fact, memory_type="semantic")

    stream(logged_in, session, "What do you know about me?")

    answer = assistant(session)
    assert answer.content == (
        f"{RETRIEVAL_ONLY} here is what I know about you.\n"
        "**Identity**\n- I live in Gdańsk\n**Work**\n- I work at Amber Freight\n"
        "**People you know**\n- Zofia — colleague"
    )
    body = logged_in.get(page_url(session)).content.decode()
    bubble = body[body.index(f'id="message-{answer.pk}"') :]
    assert "<h4>Identity</h4>" in bubble and "<h4>People you know</h4>" in bubble
    assert "Zofia — colleague</a>" in bubble
    assert "Zofia works at Baltic Rail" not in bubble  # her facts are hers
    assert '<ul class="cited-memories">' not in bubble  # no flat list beside the groups

    stream(logged_in, session, "你对我了解多少？")
    chinese = session.messages.filter(role=ChatRole.ASSISTANT).order_by("-created_at").first()
    assert "**身份**\n- I live in Gdańsk\n**工作**" in chinese.content
