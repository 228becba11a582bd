"""export_user / import_user: a user's whole data leaves as one archive and comes back field by field (issue 12)."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db.models import FileField

from agents.agent import Agent
from console.portability import MODELS, RENUMBERED, _rows
from knowledge import services as knowledge
from memories import graph
from memories.actions.rules import session_for_key
from memories.models import EditVia, Entity, EntityType, GraphEdit, Memory

pytestmark = pytest.mark.django_db


def snapshot(user) -> dict[str, list]:
    """Every exported row's every stored value (files by their bytes; renumbered rows without their number)."""
    state = {}
    for model in MODELS:
        rows = []
        for row in _rows(model, user):
            values = {}
            for field in model._meta.concrete_fields:
                value = getattr(row, field.attname)
                if isinstance(field, FileField):
                    value = value.read() if value else b""
                elif field.attname in ("api_key_id", "origin_key_id"):
                    continue  # keys stay behind (their secrets are not exported)
                elif field.attname == "origin":
                    continue  # an imported memory's origin is the import (tested on its own)
                elif field.attname == "mirrored_at":
                    continue  # the import rebuilds the mirrors, so this is the new mirroring's time
                elif field.primary_key and model in RENUMBERED:
                    continue
                elif field.is_relation and field.related_model is get_user_model():
                    value = (
                        getattr(row, field.name).get_username() if value else None
                    )  # new instance, new ids
                values[field.attname] = value
            for field in model._meta.many_to_many:
                if field.remote_field.through._meta.auto_created:
                    values[field.name] = sorted(
                        str(pk) for pk in getattr(row, field.name).values_list("pk", flat=True)
                    )
            rows.append(values)
        state[model._meta.label] = sorted(rows, key=repr)
    return state


def test_a_user_round_trips_through_an_archive_field_by_field(
    api, client, write_key, user, other_user, tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        kept = api(
            "post", "/memories/", {"content": "李四是前端工程师，擅长React", "memory_type": "semantic"}
        ).json()
        api("patch", f"/memories/{kept['id']}", {"importance": 0.9, "tags": ["同事"]})
        episode = {
            "content": "Team retro about the launch",
            "memory_type": "episodic",
            "context": "Friday",
            "outcome": "ship Monday",
            "participants": ["Ana"],
            "metadata": {"source": "notes", "n": 3},
            "created_at": "2024-05-08T13:56:00Z",
        }
        archived = api("post", "/memories/", episode).json()
        api("patch", f"/memories/{archived['id']}", {"archived": True})
        png = SimpleUploadedFile("board.png", b"\x89PNG\r\n\x1a\n" + b"7" * 64, content_type="image/png")
        client.post(
            "/api/v1/memories/perceptual", {"file": png, "content": "白板草图"}, HTTP_X_API_KEY=write_key
        )
        api("post", "/memories/search", {"query": "李四 前端工程师"})  # an access record
        Agent(user=user, session=session_for_key(user=user, key="chat-1")).run("I live in Lisbon.")
        # The graph's curation log: a rename from the page (her own edit) and a merge through her key.
        robert = Entity.objects.create(user=user, name="Robert", key="robert", entity_type=EntityType.PERSON)
        bob = Entity.objects.create(user=user, name="Bob", key="bob", entity_type=EntityType.PERSON)
        graph.entity_update(
            entity=robert, name="Robert Smith", editor=graph.Editor(user=user, via=EditVia.PAGE)
        )
        assert api("post", f"/entities/{bob.pk}/merge", {"into": str(robert.pk)}).status_code == 200
        # Another user's curation stays out of her archive (the import refuses any row not hers).
        GraphEdit.objects.create(user=other_user, via=EditVia.PAGE, action="delete", label="Theirs")
        document = knowledge.document_create_from_text(
            user=user,
            text="# Guide\n\nMnemo answers from documents. 文档问答。",
            title="Guide",
            background=False,
        ).document
    with django_capture_on_commit_callbacks(execute=True):  # a chunk's edit history goes with it
        edited = api(
            "patch",
            f"/documents/{document.pk}/chunks/{document.chunks.get().pk}",
            {"text": "Mnemo answers from documents, with citations. 文档问答。"},
        )
        assert edited.status_code == 200
    chunk = document.chunks.first()
    assert (
        api(
            "post",
            "/evaluation/questions",
            {"text": "文档问答？", "target": "knowledge", "expected_chunk_ids": [str(chunk.pk)]},
        ).status_code
        == 201
    )
    before = snapshot(user)
    assert [label for label, rows in before.items() if not rows] == ["console.EvaluationRun"]
    assert sorted(edit["action"] for edit in before["memories.GraphEdit"]) == ["merge", "rename"]

    archive = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(archive))
    user.delete()  # an empty instance: every row of hers is gone
    call_command("import_user", str(archive))

    alice = get_user_model().objects.get(username="alice")
    assert snapshot(alice) == before
    # Here they came from the archive; how each was first written stays in its sources.
    imported = Memory.objects.filter(user=alice)
    assert set(imported.values_list("origin", "origin_key")) == {("import", None)}
    assert imported.get(pk=kept["id"]).sources[0]["via"] == "api"
    assert list(GraphEdit.objects.exclude(user=alice).values_list("label", flat=True)) == ["Theirs"]
    # The mirrors were rebuilt: search finds memories and passages again.
    results = api("post", "/memories/search", {"query": "谁会写前端？"}, key=_key(alice)).json()["results"]
    assert results[0]["id"] == kept["id"]
    hits = api("post", "/knowledge/search", {"query": "文档问答"}, key=_key(alice)).json()["results"]
    assert hits and hits[0]["chunk_id"] == str(chunk.pk)


def _key(user) -> str:
    from core.services import api_key_create

    return api_key_create(user=user, name="after-import", scope="write")[1]


def test_an_archive_loads_as_another_user_but_never_twice(api, user, tmp_path):
    api("post", "/memories/", {"content": "Ana likes tea", "memory_type": "semantic"})
    archive = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(archive))
    with pytest.raises(CommandError, match="already holds memories from this archive"):
        call_command("import_user", str(archive), "--as", "bob")
    with pytest.raises(CommandError, match="not a Mnemo export archive"):
        call_command("import_user", str(tmp_path / "missing.zip"))
    with pytest.raises(CommandError, match="no user named"):
        call_command("export_user", "nobody", str(tmp_path / "x.zip"))


def test_the_api_exports_and_imports_as_the_keys_owner(
    api, client, write_key, read_key, other_user, tmp_path
):
    from core.services import api_key_create

    api("post", "/memories/", {"content": "用户喜欢喝茶", "memory_type": "semantic"})
    response = client.get("/api/v1/data/export", HTTP_X_API_KEY=read_key)  # reading is enough to export
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = b"".join(response.streaming_content)
    other_key = api_key_create(user=other_user, name="m", scope="write")[1]

    def upload(data: bytes, key: str):
        return client.post(
            "/api/v1/data/import", {"file": SimpleUploadedFile("a.zip", data)}, HTTP_X_API_KEY=key
        )

    assert upload(archive, read_key).status_code == 403
    refused = upload(archive, other_key)  # her rows are still here: loading them again is refused
    assert refused.status_code == 422 and "already holds" in refused.json()["detail"]
    assert upload(b"not a zip", other_key).status_code == 422
    other_user.__class__.objects.filter(username="alice").delete()  # now her rows are gone
    loaded = upload(archive, other_key)
    assert loaded.status_code == 201 and loaded.json()["username"] == other_user.username
    found = client.post(
        "/api/v1/memories/search",
        data='{"query": "喜欢喝什么茶"}',
        content_type="application/json",
        HTTP_X_API_KEY=other_key,
    ).json()["results"]
    assert found and found[0]["content"] == "用户喜欢喝茶"


def test_an_edited_archive_cannot_reach_another_users_data(api, user, other_user, tmp_path):
    import json
    import zipfile

    from console.portability import PortabilityError, import_archive
    from conversations.models import AgentSession

    theirs = AgentSession.objects.create(user=other_user, key="private")
    api("post", "/memories/", {"content": "Ana likes tea", "memory_type": "semantic", "session_id": "s1"})
    path = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(path))
    with zipfile.ZipFile(path) as archive:
        manifest = archive.read("manifest.json")
        rows = [json.loads(line) for line in archive.read("data.jsonl").decode().splitlines()]

    def edited(change) -> zipfile.Path:
        changed = [json.loads(json.dumps(row)) for row in rows]
        change(changed)
        target = tmp_path / "edited.zip"
        with zipfile.ZipFile(target, "w") as archive:
            archive.writestr("manifest.json", manifest)
            archive.writestr("data.jsonl", "\n".join(json.dumps(row) for row in changed))
        return target

    def into_their_session(changed):
        memory = next(row for row in changed if row["model"] == "memories.memory")
        memory["fields"]["session"] = str(theirs.pk)

    def as_them(changed):
        changed[0]["fields"]["user"] = [other_user.username]

    for change, message in ((into_their_session, "does not hold"), (as_them, "another user")):
        with pytest.raises(PortabilityError, match=message):
            import_archive(edited(change), as_username="carol")
    assert not theirs.memories.exists()


def test_the_settings_data_tab_downloads_and_loads_the_archive(logged_in, api, user, other_user, client):
    api("post", "/memories/", {"content": "用户喜欢喝茶", "memory_type": "semantic"})
    page = logged_in.get("/settings/data/").content.decode()
    assert 'href="/settings/data/export/"' in page and 'action="/settings/data/import/"' in page
    download = logged_in.get("/settings/data/export/")
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment")
    archive = b"".join(download.streaming_content)
    again = logged_in.post(
        "/settings/data/import/", {"archive": SimpleUploadedFile("mine.zip", archive)}, follow=True
    )
    assert "was not imported" in again.content.decode() and "already holds" in again.content.decode()
    client.logout()
    client.force_login(other_user)
    client.post("/settings/data/import/", {"archive": SimpleUploadedFile("bad.zip", b"nope")})
    assert not other_user.memories.exists()
    assert client.get("/settings/data/export/").status_code == 200  # her own, empty archive


@pytest.mark.parametrize("former_app", ["agents", "memories"])
def test_an_archive_from_before_sessions_moved_to_conversations_still_loads(former_app, user, tmp_path):
    """Sessions and chat messages were agents' models until issue 13 and memories' until issue 34: archives of
    either time name them so."""
    import json
    import zipfile

    from console.portability import import_archive
    from conversations.models import ChatMessage

    session = session_for_key(user=user, key="chat-1")
    ChatMessage.objects.create(session=session, role="user", content="I live in Lisbon.")
    path = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(path))
    with zipfile.ZipFile(path) as archive:
        manifest = archive.read("manifest.json")
        rows = [json.loads(line) for line in archive.read("data.jsonl").decode().splitlines()]
    old_labels = {
        f"conversations.{model}": f"{former_app}.{model}" for model in ("agentsession", "chatmessage")
    }
    assert {row["model"] for row in rows} >= old_labels.keys()
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(old, "w") as archive:
        archive.writestr("manifest.json", manifest)
        archive.writestr(
            "data.jsonl",
            "\n".join(
                json.dumps({**row, "model": old_labels.get(row["model"], row["model"])}) for row in rows
            ),
        )
    user.delete()

    imported = import_archive(old)

    assert imported.counts == {"conversations.agentsession": 1, "conversations.chatmessage": 1}
    message = ChatMessage.objects.select_related("session__user").get()
    assert (message.session.key, message.session.user.username, message.content) == (
        "chat-1",
        "alice",
        "I live in Lisbon.",
    )
