import uuid

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import IntegrityError

from conversations.models import AgentSession, ChatMessage
from knowledge.models import Chunk, Document
from memories.actions.write import memory_create
from memories.models import Entity, Memory, MemoryEntity, Relation

pytestmark = pytest.mark.django_db

MIRRORED = [Memory, Entity, Relation, Chunk]


def test_every_project_model_is_in_the_admin():
    for app in ("core", "agents", "conversations", "memories", "knowledge"):
        for model in apps.get_app_config(app).get_models():
            assert admin.site.is_registered(model), model


@pytest.mark.parametrize("model", [*MIRRORED, Document, AgentSession, ChatMessage])
def test_mirrored_models_have_uuid_primary_keys(model):
    assert isinstance(model._meta.pk, type(Memory._meta.pk))
    assert model._meta.pk.get_internal_type() == "UUIDField"


@pytest.mark.parametrize("model", MIRRORED)
def test_mirrored_models_carry_a_mirror_state(model):
    assert {"mirror_state", "mirror_error", "mirrored_at"} <= {f.name for f in model._meta.get_fields()}


def _on_the_file_database(tmp_path, code: str) -> str:
    """What `code` prints in `manage.py shell` on the file database `make run` uses (the test database lives in
    memory, which has no WAL and is never closed)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    environ |= {"MNEMO_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=Path(__file__).resolve().parent.parent,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_sqlite_runs_in_wal_mode(tmp_path):
    query = "from django.db import connection; c = connection.cursor(); c.execute('PRAGMA journal_mode'); "
    assert _on_the_file_database(tmp_path, query + "print(c.fetchone()[0])") == "wal"


def test_a_server_thread_keeps_its_sqlite_connection_from_one_request_to_the_next(tmp_path):
    """Django closes a connection at the end of each request unless CONN_MAX_AGE says otherwise."""
    code = (
        "from django.core.signals import request_finished, request_started\n"
        "from django.db import connection\n"
        "request_started.send(sender=None); connection.ensure_connection(); first = connection.connection\n"
        "request_finished.send(sender=None); request_started.send(sender=None)\n"
        "connection.ensure_connection(); print(connection.connection is first)"
    )
    assert _on_the_file_database(tmp_path, code) == "True"


def test_working_memory_gets_a_ttl_and_a_token_count(user):
    memory = memory_create(
        user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="working"
    )
    assert memory.expires_at is not None
    assert (memory.expires_at - memory.created_at).total_seconds() == 120 * 60
    assert memory.token_count > 10  # a Chinese sentence is many tokens, not one
    assert memory_create(user=user, content="a fact", memory_type="semantic").expires_at is None


def test_importance_outside_0_1_is_refused_by_the_database(user):
    with pytest.raises(IntegrityError):
        Memory.objects.create(user=user, content="x", importance=1.5)


def test_entities_are_unique_per_user_by_key(user, other_user):
    Entity.objects.create(user=user, name="Vue.js", key="vue.js", entity_type="PRODUCT")
    Entity.objects.create(user=other_user, name="Vue.js", key="vue.js", entity_type="PRODUCT")
    with pytest.raises(IntegrityError):
        Entity.objects.create(user=user, name="vue.js", key="vue.js", entity_type="PRODUCT")


def test_memory_entity_links_and_relations(user):
    memory = memory_create(user=user, content="李四擅长React", memory_type="episodic", extract_entities=False)
    li, react = (Entity.objects.create(user=user, name=n, key=n.lower()) for n in ("李四", "React"))
    MemoryEntity.objects.create(memory=memory, entity=li, mention="李四")
    MemoryEntity.objects.create(memory=memory, entity=react, mention="React")
    relation = Relation.objects.create(
        user=user, source=li, target=react, relation_type="SKILLED_IN", evidence=memory
    )
    assert set(memory.entities.values_list("name", flat=True)) == {"李四", "React"}
    assert str(relation) == "李四 -SKILLED_IN-> React"


def test_documents_are_unique_per_namespace_by_sha256(user):
    common = {"user": user, "title": "t", "sha256": "a" * 64}
    Document.objects.create(namespace="a", **common)
    Document.objects.create(namespace="b", **common)
    with pytest.raises(IntegrityError):
        Document.objects.create(namespace="a", **common)


def test_session_keys_are_unique_per_user(user, other_user):
    AgentSession.objects.create(user=user, key="s1")
    AgentSession.objects.create(user=other_user, key="s1")
    with pytest.raises(IntegrityError):
        AgentSession.objects.create(user=user, key="s1")


def test_new_rows_start_pending_in_the_mirror(user):
    memory = memory_create(user=user, content="fresh", memory_type="semantic")
    assert memory.mirror_state == "pending"
    assert isinstance(memory.pk, uuid.UUID)
