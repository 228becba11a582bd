"""One mirror path per mirrored model: a row deleted by any path (a service, the admin's delete page or action, a
queryset, a cascade) leaves no point or node behind, and each write or delete reaches the store once."""

from collections import Counter

import pytest

from core import dispatch, stores
from knowledge.models import Chunk, Document
from knowledge.services import COLLECTION as CHUNK_COLLECTION
from knowledge.services import chunk_store, document_create_from_text, document_delete
from memories import mirror
from memories.models import Memory
from memories.services import memories_clear, memories_delete, memory_create

pytestmark = pytest.mark.django_db(transaction=True)  # real commits, so the on-commit mirrors run


@pytest.fixture
def store_calls(monkeypatch) -> list[tuple[str, str, list[str]]]:
    """Every write to the vector store as (method, collection, ids), in order."""
    store = stores.vector_store()
    calls: list[tuple[str, str, list[str]]] = []

    def spy(method):
        original = getattr(store, method)

        def record(collection, arg):
            ids = [point.id for point in arg] if method == "upsert" else arg
            calls.append((method, collection, sorted(ids) if method != "delete_where" else [str(arg)]))
            return original(collection, arg)

        monkeypatch.setattr(store, method, record)

    for method in ("upsert", "delete", "delete_where"):
        spy(method)
    return calls


@pytest.fixture
def dispatched(monkeypatch) -> Counter:
    """How many times each task was started."""
    counts: Counter = Counter()
    original = dispatch.dispatch

    def count(task, *args, **kwargs):
        counts[task.name] += 1
        return original(task, *args, **kwargs)

    monkeypatch.setattr(dispatch, "dispatch", count)
    return counts


def memory_points() -> set[str]:
    return set(mirror.memory_store().ids(mirror.COLLECTION))


def chunk_points() -> set[str]:
    return set(chunk_store().ids(CHUNK_COLLECTION))


def deletes(calls, collection: str) -> list[list[str]]:
    return [ids for method, name, ids in calls if name == collection and method.startswith("delete")]


def test_a_memory_deleted_by_any_path_loses_its_point_in_one_delete(
    user, other_user, admin_client, store_calls, dispatched
):
    def remember(owner, text: str) -> str:
        return str(memory_create(user=owner, content=text, memory_type="semantic").pk)

    mine = [remember(user, f"Fact number {n} about the {word} project") for n, word in enumerate("ABCDEFG")]
    theirs = [remember(other_user, "Mallory keeps a plan"), remember(other_user, "Mallory likes tea")]
    assert memory_points() == {*mine, *theirs}
    # Each memory the service wrote was embedded and written once, by the service itself: no mirror task.
    assert Counter(i for method, _, ids in store_calls if method == "upsert" for i in ids) == Counter(
        {memory_id: 1 for memory_id in [*mine, *theirs]}
    )
    assert dispatched["memories.sync_memories"] == 0

    def delete_by(path, doomed: list[str]) -> None:
        store_calls.clear()
        dispatched.clear()
        before = memory_points()
        path()
        assert deletes(store_calls, mirror.COLLECTION) == [sorted(doomed)], path
        assert dispatched["memories.sync_memories"] == 1
        assert memory_points() == before - set(doomed)
        assert memory_points() == {str(pk) for pk in Memory.objects.values_list("pk", flat=True)}

    delete_by(lambda: memories_delete(user=user, memory_ids=mine[:2]), mine[:2])
    delete_by(
        lambda: admin_client.post(f"/admin/memories/memory/{mine[2]}/delete/", {"post": "yes"}), mine[2:3]
    )
    delete_by(
        lambda: admin_client.post(
            "/admin/memories/memory/",
            {"action": "delete_selected", "_selected_action": mine[3:5], "post": "yes"},
        ),
        mine[3:5],
    )
    delete_by(lambda: Memory.objects.filter(pk=mine[5]).delete(), mine[5:6])
    delete_by(lambda: other_user.delete(), theirs)  # the cascade from the user
    delete_by(lambda: memories_clear(user=user), mine[6:])
    assert memory_points() == set()


GUIDE = "\n\n".join(
    f"## Part {n}\n\n"
    + " ".join(f"Step {n}.{k} of the {word} setup checks one more setting." for k in range(6))
    for n, word in enumerate("ABCDEF")
)


def test_a_chunk_deleted_by_any_path_loses_its_point_in_one_delete_per_transaction(
    user, other_user, admin_client, store_calls, dispatched
):
    def ingest(owner, title: str) -> tuple[Document, list[str]]:
        accepted = document_create_from_text(
            user=owner,
            text=f"# {title}\n\n{GUIDE}",
            title=title,
            chunk_size=50,
            chunk_overlap=0,
            background=False,
        )
        document = Document.objects.get(pk=accepted.document.pk)
        assert document.status == "ready", document.error
        return document, [str(pk) for pk in document.chunks.order_by("ordinal").values_list("pk", flat=True)]

    first, first_chunks = ingest(user, "first")
    second, second_chunks = ingest(user, "second")
    third, third_chunks = ingest(user, "third")
    _, theirs = ingest(other_user, "theirs")
    assert len(first_chunks) >= 4
    assert chunk_points() == {*first_chunks, *second_chunks, *third_chunks, *theirs}

    def delete_by(path, doomed: list[str]) -> None:
        store_calls.clear()
        dispatched.clear()
        before = chunk_points()
        path()
        assert deletes(store_calls, CHUNK_COLLECTION) == [sorted(doomed)], path
        assert dispatched["knowledge.sync_chunks"] == 1
        assert chunk_points() == before - set(doomed)
        assert chunk_points() == {str(pk) for pk in Chunk.objects.values_list("pk", flat=True)}

    delete_by(
        lambda: admin_client.post(f"/admin/knowledge/chunk/{first_chunks[0]}/delete/", {"post": "yes"}),
        first_chunks[:1],
    )
    delete_by(
        lambda: admin_client.post(
            "/admin/knowledge/chunk/",
            {"action": "delete_selected", "_selected_action": first_chunks[1:3], "post": "yes"},
        ),
        first_chunks[1:3],
    )
    delete_by(lambda: Chunk.objects.filter(pk=first_chunks[3]).delete(), first_chunks[3:4])
    delete_by(lambda: document_delete(document=first), first_chunks[4:])  # the service: its chunks cascade
    delete_by(lambda: Document.objects.filter(pk=second.pk).delete(), second_chunks)  # a queryset cascade
    delete_by(
        lambda: admin_client.post(f"/admin/knowledge/document/{third.pk}/delete/", {"post": "yes"}),
        third_chunks,
    )
    delete_by(lambda: other_user.delete(), theirs)  # the cascade from the user
    assert chunk_points() == set()
