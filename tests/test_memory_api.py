import json
import uuid

import pytest

from core import hybrid, stores
from core.models import MirrorState
from memories import mirror
from memories.actions.write import memory_create
from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def other_key(other_user):
    from core.services import api_key_create

    return api_key_create(user=other_user, name="mallory")[1]


def test_a_new_memory_is_searchable_when_the_call_returns(api):
    response = api(
        "post",
        "/memories/",
        {"content": "李四是前端工程师，擅长React", "memory_type": "semantic", "importance": 0.7},
    )
    assert response.status_code == 201
    memory_id = response.json()["id"]
    assert Memory.objects.get(pk=memory_id).mirror_state == MirrorState.SYNCED
    results = api("post", "/memories/search", {"query": "前端工程师"}).json()["results"]
    assert results[0]["id"] == memory_id
    assert set(results[0]["scores"]) >= {"dense", "lexical", "fused", "recency", "importance", "graph"}
    assert results[0]["scores"]["lexical"] > 0


def test_a_collection_answers_without_its_trailing_slash(api, client, user):
    # A 301 to /memories/ was followed with a GET by HTTP clients: the new memory became a listing, 200, and
    # nothing was stored. The API serves the slashed address with the request's method and body instead.
    response = api(
        "post", "/memories", {"content": "Ana's manager is Kofi Mensah.", "memory_type": "semantic"}
    )
    assert response.status_code == 201
    assert Memory.objects.filter(user=user, content="Ana's manager is Kofi Mensah.").count() == 1
    listed = api("get", "/memories")
    assert listed.status_code == 200 and listed.json()["count"] == 1
    assert api("get", "/sessions").status_code == 200
    assert api("get", "/documents/").status_code == 200  # and the other way round
    assert api("get", "/no-such-collection").status_code == 404
    # Pages keep Django's redirect to the slashed address.
    client.force_login(user)
    page = client.get("/memories")
    assert page.status_code == 301 and page["Location"] == "/memories/"


def test_an_edit_is_searchable_when_the_call_returns(api):
    memory_id = api(
        "post", "/memories/", {"content": "the meeting is in Berlin", "memory_type": "episodic"}
    ).json()["id"]
    assert (
        api("patch", f"/memories/{memory_id}", {"content": "the meeting moved to Lisbon"}).status_code == 200
    )
    results = api("post", "/memories/search", {"query": "Lisbon meeting"}).json()["results"]
    assert [r["id"] for r in results][:1] == [memory_id]
    assert results[0]["content"] == "the meeting moved to Lisbon"


def test_bulk_add_returns_ids_and_every_item_is_searchable(api):
    items = [{"content": f"fact number {i} about topic{i}", "memory_type": "semantic"} for i in range(50)]
    response = api("post", "/memories/bulk", {"items": items})
    assert response.status_code == 201
    ids = response.json()["ids"]
    assert len(ids) == 50
    assert mirror.memory_store().count(mirror.COLLECTION) == 50
    hit = api("post", "/memories/search", {"query": "topic37", "limit": 1}).json()["results"][0]
    assert hit["id"] == ids[37]


def test_bulk_refuses_more_than_1000_items_and_stores_nothing(api):
    response = api("post", "/memories/bulk", {"items": [{"content": "x"}] * 1001})
    assert response.status_code == 422
    assert Memory.objects.count() == 0


def test_bulk_with_one_bad_item_stores_nothing_and_names_it(api):
    items = [
        {"content": "fine", "memory_type": "working"},
        {"content": "词" * 2500, "memory_type": "working"},
    ]
    response = api("post", "/memories/bulk", {"items": items})
    assert response.status_code == 422
    assert "items[1]" in response.json()["detail"]
    assert Memory.objects.count() == 0


def test_created_at_is_kept_for_imported_memories(api):
    body = {
        "content": "we met at the conference",
        "memory_type": "episodic",
        "created_at": "2023-05-08T13:56:00Z",
    }
    memory_id = api("post", "/memories/", body).json()["id"]
    assert api("get", f"/memories/{memory_id}").json()["created_at"].startswith("2023-05-08T13:56:00")


def test_list_filters_and_paginates(api, user):
    for index in range(7):
        memory_create(user=user, content=f"episode {index}", memory_type="episodic", importance=index / 10)
    memory_create(user=user, content="a fact", memory_type="semantic")
    page = api("get", "/memories/?memory_type=episodic&min_importance=0.3&limit=2&offset=0").json()
    assert page["count"] == 4
    assert len(page["items"]) == 2
    assert all(item["memory_type"] == "episodic" for item in page["items"])


def test_validation_errors_are_422_with_a_message(api):
    response = api("post", "/memories/", {"content": "x", "importance": 2})
    assert response.status_code == 422
    assert "importance" in json.dumps(response.json())
    response = api("post", "/memories/", {"content": "x", "memory_type": "dream"})
    assert response.status_code == 422


def test_a_read_only_key_cannot_write(api, read_key):
    response = api("post", "/memories/", {"content": "x"}, key=read_key)
    assert response.status_code == 403
    assert "read-only" in response.json()["detail"]
    assert api("post", "/memories/search", {"query": "x"}, key=read_key).status_code == 200


def test_another_users_memory_is_404_everywhere_and_never_in_search(api, other_user, other_key):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    path = f"/memories/{theirs.pk}"
    assert api("get", path).status_code == 404
    assert api("patch", path, {"content": "hijacked"}).status_code == 404
    assert api("delete", path).status_code == 404
    assert api("post", "/memories/search", {"query": "secret plan"}).json()["results"] == []
    assert api("get", "/memories/").json()["count"] == 0
    tool_reply = api("post", "/tools/memory", {"action": "remove", "memory_id": str(theirs.pk)}).json()
    assert tool_reply["ok"] is False
    theirs.refresh_from_db()
    assert theirs.content == "mallory's secret plan"
    assert api("get", path, key=other_key).status_code == 200


def test_delete_removes_the_row_and_its_point(api):
    memory_id = api("post", "/memories/", {"content": "to be deleted", "memory_type": "semantic"}).json()[
        "id"
    ]
    assert api("delete", f"/memories/{memory_id}").status_code == 204
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert mirror.memory_store().retrieve(mirror.COLLECTION, [memory_id]) == []


def test_archive_hides_from_search_and_restore_brings_back(api):
    memory_id = api(
        "post", "/memories/", {"content": "archived fact about zebras", "memory_type": "semantic"}
    ).json()["id"]
    api("patch", f"/memories/{memory_id}", {"archived": True})
    assert api("post", "/memories/search", {"query": "zebras"}).json()["results"] == []
    api("patch", f"/memories/{memory_id}", {"archived": False})
    assert api("post", "/memories/search", {"query": "zebras"}).json()["results"][0]["id"] == memory_id


def test_search_honours_types_importance_session_and_time_range(api):
    api(
        "post",
        "/memories/",
        {
            "content": "coffee with Ana",
            "memory_type": "episodic",
            "importance": 0.9,
            "session_id": "s1",
            "created_at": "2024-01-10T10:00:00Z",
        },
    )
    api(
        "post",
        "/memories/",
        {
            "content": "coffee preference: oat milk",
            "memory_type": "semantic",
            "importance": 0.3,
            "session_id": "s2",
        },
    )

    def search(**body):
        return [
            r["content"]
            for r in api("post", "/memories/search", {"query": "coffee", **body}).json()["results"]
        ]

    assert search(memory_types=["semantic"]) == ["coffee preference: oat milk"]
    assert search(min_importance=0.5) == ["coffee with Ana"]
    assert search(session_id="s2") == ["coffee preference: oat milk"]
    assert search(time_range=["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"]) == ["coffee with Ana"]
    assert len(search()) == 2


def test_the_limit_is_not_split_per_type(api, user):
    for index in range(6):
        memory_create(user=user, content=f"python tip {index}", memory_type="semantic", importance=0.8)
    memory_create(user=user, content="python meetup", memory_type="episodic", importance=0.8)
    results = api("post", "/memories/search", {"query": "python tip", "limit": 5}).json()["results"]
    assert len(results) == 5
    assert all(r["memory_type"] == "semantic" for r in results)


def test_search_leaves_out_memories_that_do_not_match_at_all(api, user):
    memory_create(user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="semantic")
    memory_create(
        user=user, content="The user prefers short answers with code examples.", memory_type="semantic"
    )
    memory_create(user=user, content="用户刚刚询问了如何部署Django应用", memory_type="working")
    results = api("post", "/memories/search", {"query": "前端工程师", "limit": 10}).json()["results"]
    # The other two share no term with the query and their dense similarity is below core.hybrid.NOISE_FLOOR.
    assert [r["content"] for r in results] == ["李四是前端工程师，擅长React和Vue.js开发"]


def test_a_search_answers_when_its_access_record_cannot_be_written(api, user, monkeypatch, caplog):
    """Under load SQLite can refuse a write once its busy timeout runs out: the search still has its answer."""
    from django.db import OperationalError

    from memories.models import MemoryAccess

    memory = memory_create(user=user, content="Kofi Mensah manages the data team", memory_type="semantic")

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(MemoryAccess.objects, "bulk_create", locked)
    response = api("post", "/memories/search", {"query": "Who manages the data team?"})
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["results"]] == [str(memory.pk)]
    assert "without recording its 1 accesses: database is locked" in caplog.text
    memory.refresh_from_db()
    assert memory.access_count == 0  # all or nothing: the counter did not move without its record


def test_forget_consolidate_and_summary_endpoints(api, user):
    memory_create(user=user, content="noise", memory_type="episodic", importance=0.05)
    important = memory_create(
        user=user, content="remember the deadline", memory_type="working", importance=0.8
    )
    assert api("post", "/memories/forget", {"strategy": "importance_based", "threshold": 0.1}).json() == {
        "forgotten": 1
    }
    promoted = api("post", "/memories/consolidate", {"from_type": "working", "to_type": "episodic"}).json()
    assert promoted == {"consolidated": [str(important.pk)]}
    summary = api("get", "/memories/summary").json()
    assert summary["ok"] is True
    assert summary["data"]["by_type"]["episodic"]["count"] == 1


def test_sessions_list_and_detail(api):
    api("post", "/memories/", {"content": "first", "session_id": "chat-1"})
    api("post", "/memories/", {"content": "second", "session_id": "chat-1"})
    sessions = api("get", "/sessions/").json()
    assert sessions["count"] == 1
    session = sessions["items"][0]
    assert (session["key"], session["memory_count"]) == ("chat-1", 2)
    detail = api("get", f"/sessions/{session['id']}").json()
    assert [m["content"] for m in detail["memories"]] == ["first", "second"]
    assert api("get", f"/sessions/{uuid.uuid4()}").status_code == 404


def test_memory_tool_endpoint_takes_the_same_dict(api):
    reply = api(
        "post", "/tools/memory", {"action": "add", "content": "王五是产品经理", "memory_type": "semantic"}
    ).json()
    assert reply["ok"] is True
    assert reply["text"] == f"✅ 记忆已添加 (ID: {reply['data']['id']})"
    found = api("post", "/tools/memory", {"action": "search", "query": "产品经理"}).json()
    assert found["data"]["results"][0]["id"] == reply["data"]["id"]
    assert api("post", "/tools/memory", {"action": "nope"}).json()["ok"] is False


def test_the_vector_mirror_is_idempotent(user):
    memory = memory_create(user=user, content="idempotent", memory_type="semantic")
    mirror.sync_memories([str(memory.pk)])
    mirror.sync_memories([str(memory.pk)])
    assert mirror.memory_store().count(mirror.COLLECTION, {"user_id": str(user.pk)}) == 1


def test_with_the_vector_store_down_writes_commit_and_sync_when_it_is_back(api, settings, user):
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT = 0.5
    stores.reset(embeddings=False)
    response = api("post", "/memories/", {"content": "written during the outage", "memory_type": "semantic"})
    assert response.status_code == 201
    memory = Memory.objects.get(pk=response.json()["id"])
    assert memory.mirror_state in {MirrorState.PENDING, MirrorState.FAILED}
    assert "QDRANT_URL" in memory.mirror_error
    degraded = api("post", "/memories/search", {"query": "outage"}).json()
    assert degraded["results"][0]["id"] == str(memory.pk)
    assert "unavailable" in degraded["notice"]

    settings.QDRANT_URL = ""
    stores.reset(embeddings=False)
    from django.core.management import call_command

    call_command("resync_mirrors")
    memory.refresh_from_db()
    assert memory.mirror_state == MirrorState.SYNCED
    assert api("post", "/memories/search", {"query": "outage"}).json()["notice"] == ""


def test_with_the_qdrant_server_hanging_only_the_first_request_waits(api, settings, user):
    """A socket that accepts and never answers: the first call waits QDRANT_TIMEOUT, the rest do not try it again.
    The connections the socket received tell, where timings on a busy machine could not."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    silent.setblocking(False)
    held: list[socket.socket] = []

    def new_connections() -> int:
        before = len(held)
        while True:
            try:
                held.append(silent.accept()[0])  # held open: the server never answers
            except BlockingIOError:
                return len(held) - before

    api("post", "/memories/search", {"query": "warm-up"})  # the embedders load here, not in a timed call
    settings.QDRANT_URL = f"http://127.0.0.1:{silent.getsockname()[1]}"
    settings.QDRANT_TIMEOUT = 1
    stores.reset(embeddings=False)
    try:
        ids, connections = [], []
        for content in ("Ana works at Acme", "用户住在上海", "Kofi manages the data team"):
            response = api("post", "/memories/", {"content": content, "memory_type": "semantic"})
            connections.append(new_connections())
            assert response.status_code == 201
            ids.append(response.json()["id"])
        search = api("post", "/memories/search", {"query": "Who manages the data team?"})
        connections.append(new_connections())
    finally:
        for connection in [*held, silent]:
            connection.close()
        settings.QDRANT_URL = ""
        stores.reset(embeddings=False)
    assert connections[0] >= 1 and connections[1:] == [0, 0, 0], connections
    assert search.status_code == 200 and "unavailable" in search.json()["notice"]
    assert search.json()["results"][0]["id"] == ids[2]
    assert set(Memory.objects.filter(pk__in=ids).values_list("mirror_state", flat=True)) <= {
        MirrorState.PENDING,
        MirrorState.FAILED,
    }


def test_read_your_writes_on_a_qdrant_server_too(api, settings):
    # qdrant-client's :memory: mode speaks the server's API: the production code path.
    settings.QDRANT_URL = ":memory:"
    stores.reset(embeddings=False)
    assert stores.vector_store().backend == "qdrant"
    memory_id = api(
        "post", "/memories/", {"content": "王五负责用户体验设计", "memory_type": "semantic"}
    ).json()["id"]
    results = api("post", "/memories/search", {"query": "用户体验"}).json()["results"]
    assert results[0]["id"] == memory_id
    assert Memory.objects.get(pk=memory_id).mirror_state == MirrorState.SYNCED


def test_an_admin_edit_is_mirrored_through_the_signal(admin_client, user):
    memory = memory_create(user=user, content="original wording", memory_type="semantic")
    response = admin_client.post(
        f"/admin/memories/memory/{memory.pk}/change/",
        {
            "user": user.pk,
            "memory_type": "semantic",
            "content": "edited in the admin about quasars",
            "importance": 0.5,
            "metadata": "{}",
            "token_count": 3,
            "access_count": 0,
            "participants": "[]",
            "tags": "[]",
            "modality": "text",
            "created_at_0": memory.created_at.strftime("%Y-%m-%d"),
            "created_at_1": memory.created_at.strftime("%H:%M:%S"),
            "edits-TOTAL_FORMS": 0,
            "edits-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content[:2000]
    hits = mirror.memory_store().search(
        mirror.COLLECTION,
        using=hybrid.LEXICAL,
        vector=_sparse("quasars"),
        limit=1,
        where={"user_id": str(user.pk)},
    )
    assert [hit.id for hit in hits] == [str(memory.pk)]


def _sparse(text):
    from core.text import sparse_query_vector
    from core.vectorstore import SparseVector

    return SparseVector.from_pairs(sparse_query_vector(text))


def test_resync_mirrors_removes_orphaned_points_and_repairs_pending_rows(user):
    from django.core.management import call_command

    kept = memory_create(user=user, content="kept", memory_type="semantic")
    gone = memory_create(user=user, content="gone", memory_type="semantic")
    # Simulate drift: a delete whose mirror task was lost, and a row that never synced.
    Memory.objects.filter(pk=gone.pk).delete()
    mirror.memory_store().upsert(mirror.COLLECTION, list(mirror._points([gone])))
    Memory.objects.filter(pk=kept.pk).update(mirror_state=MirrorState.PENDING)
    call_command("resync_mirrors")
    assert mirror.memory_store().ids(mirror.COLLECTION) == [str(kept.pk)]
    assert Memory.objects.get(pk=kept.pk).mirror_state == MirrorState.SYNCED


def test_perceptual_memory_keeps_its_file_and_is_found_by_its_description(client, write_key, other_key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    png = SimpleUploadedFile("whiteboard.png", b"\x89PNG\r\n\x1a\n" + b"0" * 64, content_type="image/png")
    response = client.post(
        "/api/v1/memories/perceptual",
        {"file": png, "content": "白板上的系统架构草图", "importance": "0.6"},
        HTTP_X_API_KEY=write_key,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["memory_type"], body["modality"], body["has_file"]) == ("perceptual", "image", True)
    found = client.post(
        "/api/v1/memories/search",
        data=json.dumps({"query": "架构草图"}),
        content_type="application/json",
        HTTP_X_API_KEY=write_key,
    ).json()["results"]
    assert found[0]["id"] == body["id"]
    download = client.get(f"/api/v1/memories/{body['id']}/file", HTTP_X_API_KEY=write_key)
    assert download.status_code == 200
    assert b"".join(download.streaming_content).startswith(b"\x89PNG")
    assert client.get(f"/api/v1/memories/{body['id']}/file", HTTP_X_API_KEY=other_key).status_code == 404


def test_an_empty_perceptual_file_is_refused(client, write_key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        "/api/v1/memories/perceptual",
        {"file": SimpleUploadedFile("empty.png", b"", content_type="image/png")},
        HTTP_X_API_KEY=write_key,
    )
    assert response.status_code == 422
    assert Memory.objects.count() == 0


def test_the_sweeper_mirrors_rows_written_while_the_store_was_unreachable(user):
    from core.tasks import sweep_mirror_outbox

    memory = memory_create(user=user, content="written elsewhere", memory_type="semantic")
    mirror.memory_store().delete(mirror.COLLECTION, [str(memory.pk)])
    Memory.objects.filter(pk=memory.pk).update(mirror_state=MirrorState.FAILED, mirror_error="locked")
    assert sweep_mirror_outbox() == 1
    assert Memory.objects.get(pk=memory.pk).mirror_state == MirrorState.SYNCED
    assert mirror.memory_store().ids(mirror.COLLECTION) == [str(memory.pk)]


def test_a_new_memory_is_embedded_and_written_to_the_vector_store_once(api, monkeypatch):
    from core.vectorstore.edge import EdgeVectorStore

    writes = []
    upsert = EdgeVectorStore.upsert

    def counting(self, collection, points):
        writes.extend((collection, point.id) for point in points)
        return upsert(self, collection, points)

    monkeypatch.setattr(EdgeVectorStore, "upsert", counting)
    created = api("post", "/memories/", {"content": "Kofi manages the data team", "memory_type": "semantic"})
    edited = api("patch", f"/memories/{created.json()['id']}", {"content": "Kofi leads the data team"})
    assert (created.status_code, edited.status_code) == (201, 200)
    assert writes == [("memories", created.json()["id"])] * 2  # one write per change, not two


def test_search_leaves_out_chat_copies_unless_asked_and_the_browser_shows_them(api, user, logged_in):
    from agents.agent import Agent
    from memories.actions.rules import session_for_key

    Agent(user=user, session=session_for_key(user=user, key="garden")).run("Is the tomato seedling tray dry?")
    memory_create(
        user=user, content="The tomato seedlings need water every second day.", memory_type="semantic"
    )

    def search(**body) -> list[str]:
        results = api("post", "/memories/search", {"query": "tomato seedling tray", **body}).json()["results"]
        return [result["content"] for result in results]

    assert search() == ["The tomato seedlings need water every second day."]
    assert "Is the tomato seedling tray dry?" in search(include_chat_copies=True)
    assert search(session_id="garden") == ["Is the tomato seedling tray dry?"]
    page = logged_in.get("/memories/", {"q": "tomato seedling tray"}).content.decode()
    assert "Is the tomato seedling tray dry?" in page
