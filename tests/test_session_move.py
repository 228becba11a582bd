"""Sessions and chat messages moved twice: from agents to memories (issue 13) and from memories to the
conversations app that owns them (issue 34). An install migrated at either old layout keeps every session, message
and the links memories and accesses hold to them, and its admin history follows them."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from conversations.models import AgentSession, ChatMessage
from memories.models import Memory, MemoryAccess
from tests.migrating import models_as_of

pytestmark = pytest.mark.django_db(transaction=True)

MOVED = ["agentsession", "chatmessage"]
BEFORE_ISSUE_13 = [("agents", "0001_initial"), ("memories", "0008_user_archived_created_index")]
BEFORE_ISSUE_34 = [("memories", "0014_message_keys"), ("conversations", None)]


def test_rows_written_before_the_first_move_survive_both():
    with models_as_of(BEFORE_ISSUE_13) as old:
        user = old.get_model("auth", "User").objects.create(username="alice")
        session = old.get_model("agents", "AgentSession").objects.create(
            user=user, key="chat-1", title="Chat"
        )
        message = old.get_model("agents", "ChatMessage").objects.create(
            session=session, role="user", content="I live in Lisbon."
        )
        memory = old.get_model("memories", "Memory").objects.create(
            user_id=user.pk, session=session, source_message=message, content="lives in Lisbon"
        )
        old.get_model("memories", "MemoryAccess").objects.create(
            memory=memory, user_id=user.pk, session=session, query="where", via="api"
        )
        # Migrating back gave agents its content types again (memories 0009 reversed).
        before = [ContentType.objects.get(app_label="agents", model=model).pk for model in MOVED]
    ContentType.objects.clear_cache()

    moved = AgentSession.objects.get(pk=session.pk)
    assert (moved.key, moved.title, moved.user.username) == ("chat-1", "Chat", "alice")
    assert list(moved.messages.values_list("pk", "content")) == [(message.pk, "I live in Lisbon.")]
    kept = Memory.objects.get(pk=memory.pk)
    assert (kept.session_id, kept.source_message_id) == (session.pk, message.pk)
    assert list(kept.source_message.captured_memories.all()) == [kept]
    assert MemoryAccess.objects.get(memory=kept).session == moved
    # Same content type rows, so admin log entries and permissions follow the models.
    assert [ContentType.objects.get_for_model(model).pk for model in (AgentSession, ChatMessage)] == before
    assert not ContentType.objects.filter(app_label__in=["agents", "memories"], model__in=MOVED).exists()
    # The tables were renamed in place to the app's names, not copied.
    tables = connection.introspection.table_names()
    assert {"conversations_agentsession", "conversations_chatmessage"} <= set(tables)
    assert not {"agents_agentsession", "agents_chatmessage"} & set(tables)


def _everything() -> dict[str, list]:
    """Every row the move could lose, with the links between them."""
    return {
        "sessions": sorted(AgentSession.objects.values_list("pk", "user_id", "key", "title")),
        "messages": sorted(ChatMessage.objects.values_list("pk", "session_id", "role", "content")),
        "memories": sorted(Memory.objects.values_list("pk", "session_id", "source_message_id", "content")),
        "accesses": sorted(MemoryAccess.objects.values_list("pk", "memory_id", "session_id")),
        "content types": sorted(
            ContentType.objects.filter(model__in=MOVED).values_list("pk", "app_label", "model")
        ),
    }


def test_an_install_filled_through_the_api_loses_nothing_moving_sessions_to_conversations(
    api, chat_completions
):
    """Filled as agents fill it (memories in sessions, chat turns through the OpenAI endpoint, searches that log
    accesses), migrated back to the layout before issue 34 and forward again: every row and link is there."""
    for session, content in [
        ("trip", "The ferry to Skiathos leaves at 7:40."),
        ("work", "Standup is at 9:15."),
    ]:
        body = {"content": content, "memory_type": "episodic", "session_id": session}
        assert api("post", "/memories/", body).status_code == 201
    for text in ("I keep my passport in the blue folder.", "Where is my passport?"):
        turn = chat_completions({"messages": [{"role": "user", "content": text}], "user": "planning"})
        assert turn.status_code == 200, turn.content
    assert api("post", "/memories/search", {"query": "ferry", "session_id": "trip"}).status_code == 200
    filled = _everything()
    assert len(filled["sessions"]) >= 3 and len(filled["messages"]) >= 4 and filled["accesses"]
    assert any(message_id for _, _, message_id, _ in filled["memories"])  # a memory captured from the chat

    with models_as_of(BEFORE_ISSUE_34) as old:
        assert old.get_model("memories", "AgentSession").objects.count() == len(filled["sessions"])
        assert old.get_model("memories", "ChatMessage").objects.count() == len(filled["messages"])
        assert "agents_chatmessage" in connection.introspection.table_names()
    ContentType.objects.clear_cache()

    assert _everything() == filled
    assert {app for _, app, _ in filled["content types"]} == {"conversations"}


@pytest.mark.parametrize("former_app", ["agents", "memories"])
def test_the_session_admin_keeps_its_messages_and_its_old_addresses(former_app, admin_client, user):
    session = AgentSession.objects.create(user=user, key="chat-7", title="Planning")
    ChatMessage.objects.create(session=session, role="user", content="Book the venue for Friday")

    old = admin_client.get(f"/admin/{former_app}/agentsession/{session.pk}/change/?_changelist_filters=x")

    assert (old.status_code, old["Location"]) == (
        302,
        f"/admin/conversations/agentsession/{session.pk}/change/?_changelist_filters=x",
    )
    page = admin_client.get(old["Location"])
    assert page.status_code == 200
    assert "Book the venue for Friday" in page.text  # the messages inline
    listed = admin_client.get("/admin/conversations/chatmessage/")
    assert listed.status_code == 200 and "user: Book the venue for Friday" in listed.text  # its row
    # memories' own admin pages stay where they are.
    assert admin_client.get("/admin/memories/memory/").status_code == 200
