"""Sessions and chat messages moved from agents to memories (issue 13): an install migrated at the old layout keeps
every session, message and the links memories and accesses hold to them, and its admin history follows them."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.models import AgentSession, ChatMessage, Memory, MemoryAccess

pytestmark = pytest.mark.django_db(transaction=True)

MOVED = ["agentsession", "chatmessage"]
BEFORE = [("agents", "0001_initial"), ("memories", "0008_user_archived_created_index")]


def _migrate(targets):
    """Run migrations to `targets` and return the models as they were at that point."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def test_rows_written_before_the_move_survive_it():
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
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
    finally:
        _migrate(leaves)
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
    assert not ContentType.objects.filter(app_label="agents").exists()
    # The table is the one agents created: nothing was copied or renamed.
    assert AgentSession._meta.db_table == "agents_agentsession" and ChatMessage._meta.db_table in (
        connection.introspection.table_names()
    )


def test_the_session_admin_keeps_its_messages_and_its_old_address(admin_client, user):
    session = AgentSession.objects.create(user=user, key="chat-7", title="Planning")
    ChatMessage.objects.create(session=session, role="user", content="Book the venue for Friday")

    old = admin_client.get(f"/admin/agents/agentsession/{session.pk}/change/?_changelist_filters=x")

    assert (old.status_code, old["Location"]) == (
        302,
        f"/admin/memories/agentsession/{session.pk}/change/?_changelist_filters=x",
    )
    page = admin_client.get(old["Location"])
    assert page.status_code == 200
    assert "Book the venue for Friday" in page.text  # the messages inline
    listed = admin_client.get("/admin/memories/chatmessage/")
    assert listed.status_code == 200 and "user: Book the venue for Friday" in listed.text  # its row
