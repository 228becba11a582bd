"""The mirror outbox (core/mirror_outbox.py): an entry is written with the row in its transaction, and one drain path
writes memory vectors, chunk vectors and the Neo4j graph, so a crash between the commit and the drain loses nothing
and doubles nothing."""

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core import hybrid, mirror_outbox, stores
from core.models import MirrorOutbox, MirrorState
from core.tasks import sweep_mirror_outbox
from core.text import sparse_query_vector
from core.vectorstore import SparseVector
from knowledge import mirror as chunk_mirror
from knowledge.models import Chunk
from knowledge.services import document_create_from_text
from memories import mirror
from memories.actions.edit import memory_archive, memory_update
from memories.actions.write import NewMemory, memory_bulk_create, memory_create
from memories.graph.service import ENTITY_KIND, RELATION_KIND
from memories.models import Entity, Memory, Relation

NOTES = [
    "The lighthouse keeper logs the fog horn hours in a green ledger.",
    "Our choir rehearses the winter cantata in the old boathouse.",
    "The allotment rota gives Piotr the compost heap in March.",
    "A retired pilot repairs kites for the children on the pier.",
]


class Crash(Exception):
    pass


def crash() -> None:
    raise Crash


@contextmanager
def crash_after_commit() -> Iterator[None]:
    """A transaction whose process dies right after its commit: the first callback after the commit raises, so the
    ones after it (the outbox's drain) never run, as when the process is killed there."""
    with pytest.raises(Crash), transaction.atomic():
        transaction.on_commit(crash)
        yield


def outbox() -> list[tuple[str, str]]:
    return list(MirrorOutbox.objects.order_by("id").values_list("kind", "object_id"))


def memory_points() -> list[str]:
    """Every point id in the memories collection, repeats kept (a doubled write would show twice)."""
    return mirror.memory_store().ids(mirror.COLLECTION)


def memory_rows() -> list[str]:
    return sorted(str(pk) for pk in mirror.mirrored_rows().values_list("pk", flat=True))


@pytest.fixture
def store_writes(monkeypatch) -> list[tuple[str, str, list[str]]]:
    """Every write to the vector store as (method, collection, ids), in order (the real store still does it)."""
    store = stores.vector_store()
    calls: list[tuple[str, str, list[str]]] = []
    for method in ("upsert", "delete"):
        original = getattr(store, method)

        def record(collection, arg, method=method, original=original):
            ids = [point.id for point in arg] if method == "upsert" else list(arg)
            calls.append((method, collection, sorted(ids)))
            return original(collection, arg)

        monkeypatch.setattr(store, method, record)
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_write_adds_its_entry_in_its_own_transaction_and_the_commit_drains_it(user):
    with transaction.atomic():
        memory = memory_create(user=user, content=NOTES[0], memory_type="semantic")
        assert outbox() == [("memory", str(memory.pk))]  # written with the row, before the commit
        assert memory_points() == []
    assert outbox() == []  # drained right after the commit, in this thread
    assert memory_points() == [str(memory.pk)]
    assert Memory.objects.get(pk=memory.pk).mirror_state == MirrorState.SYNCED


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_leaves_no_entry_and_no_point(user):
    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        memory_create(user=user, content=NOTES[0], memory_type="semantic")
        assert len(outbox()) == 1
        raise Abandoned
    assert (Memory.objects.count(), outbox(), memory_points()) == (0, [], [])


@pytest.mark.django_db(transaction=True)
def test_a_crash_between_the_commit_and_the_drain_loses_nothing_and_the_sweep_doubles_nothing(user):
    kept = memory_create(user=user, content=NOTES[3], memory_type="episodic")  # mirrored before the crash
    assert (memory_points(), outbox()) == ([str(kept.pk)], [])
    with crash_after_commit():
        written = [memory_create(user=user, content=text, memory_type="semantic") for text in NOTES[:3]]
        memory_update(
            memory=kept, via="system", content="A retired pilot now repairs kites and sails on the pier."
        )
        memory_bulk_create(
            user=user, items=[NewMemory(content="Bulk-written: the ferry timetable changed in May.")]
        )
    bulk = Memory.objects.get(content__startswith="Bulk-written")
    assert Memory.objects.count() == 5  # committed
    assert sorted(object_id for _, object_id in outbox()) == sorted(
        str(pk) for pk in [*(m.pk for m in written), kept.pk, bulk.pk]
    )
    assert memory_points() == [str(kept.pk)]  # the store has only what was there before

    assert sweep_mirror_outbox.run() == 5  # the three new memories, the edited one, the bulk-written one
    assert outbox() == []
    assert sorted(memory_points()) == memory_rows()  # nothing lost
    assert Counter(memory_points()).most_common(1)[0][1] == 1  # nothing doubled
    hits = mirror.memory_store().search(
        mirror.COLLECTION,
        using=hybrid.LEXICAL,
        vector=SparseVector.from_pairs(sparse_query_vector("sails")),
        limit=1,
        where={"user_id": str(user.pk)},
    )
    assert [hit.id for hit in hits] == [str(kept.pk)]  # the edit's text, not the old one
    assert sweep_mirror_outbox.run() == 0


@pytest.mark.django_db
def test_a_crash_between_the_store_write_and_the_entry_delete_doubles_nothing(user, store_writes):
    memories = [memory_create(user=user, content=text, memory_type="semantic") for text in NOTES]
    ids = [str(m.pk) for m in memories]
    mirror.sync_memories(ids)  # the drain wrote the store, then died before deleting its entries
    assert len(outbox()) == 4
    assert sweep_mirror_outbox.run() == 4  # written again, by id
    assert sorted(memory_points()) == sorted(ids) == memory_rows()
    assert [method for method, _, _ in store_writes] == ["upsert", "upsert"]
    assert outbox() == []


@pytest.mark.django_db(transaction=True)
def test_an_edit_then_a_delete_of_one_memory_coalesce_into_one_delete(user, store_writes):
    memory = memory_create(user=user, content=NOTES[1], memory_type="semantic")
    other = memory_create(user=user, content=NOTES[2], memory_type="semantic")
    store_writes.clear()
    with transaction.atomic():
        memory_update(memory=memory, via="system", content="The choir rehearses the spring cantata instead.")
        memory_update(memory=memory, via="system", importance=0.9)
        Memory.objects.filter(pk=memory.pk).delete()
        assert outbox() == [("memory", str(memory.pk))] * 3  # the two saves and the delete
    # One drain: the row is gone, so the entries became one delete, and nothing was embedded for the edits.
    assert store_writes == [("delete", mirror.COLLECTION, [str(memory.pk)])]
    assert (outbox(), memory_points()) == ([], [str(other.pk)])


@pytest.mark.django_db
def test_a_repeated_write_that_changes_no_payload_is_not_embedded_again(
    user, store_writes, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        memory = memory_create(user=user, content=NOTES[1], memory_type="semantic", importance=0.8)
    store_writes.clear()
    with django_capture_on_commit_callbacks(execute=True):
        repeat = memory_create(user=user, content=NOTES[1], memory_type="semantic", importance=0.2)
    assert repeat.pk == memory.pk and Memory.objects.get(pk=memory.pk).seen_count == 2
    assert (store_writes, outbox()) == ([], [])


@pytest.mark.django_db
def test_the_old_instance_flag_is_gone_and_every_save_goes_through_the_outbox(user):
    assert not hasattr(mirror, "save_mirrored") and not hasattr(mirror, "mirror_on_commit")
    memory = memory_create(user=user, content=NOTES[0], memory_type="semantic")
    assert not hasattr(memory, "mirrored_by_service")
    MirrorOutbox.objects.all().delete()
    memory.mirrored_by_service = True  # type: ignore[attr-defined]  # the flag the signal used to obey
    memory.importance = 0.4
    memory.save()
    assert outbox() == [("memory", str(memory.pk))]


@pytest.mark.django_db
def test_a_drain_leaves_a_row_another_drain_holds_until_its_lease_ends(user):
    memory = memory_create(user=user, content=NOTES[0], memory_type="semantic")
    # Another drain claimed this row's entry and is writing it (or died doing so).
    MirrorOutbox.objects.update(claim="elsewhere", claimed_until=timezone.now() + timedelta(minutes=5))
    mirror.enqueue([memory.pk])  # a newer edit's entry waits for it: no older read may land after this one
    assert sweep_mirror_outbox.run() == 0
    assert (len(outbox()), memory_points()) == (2, [])

    MirrorOutbox.objects.filter(claim="elsewhere").update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert sweep_mirror_outbox.run() == 1  # the lease ran out: the sweep takes both entries, one write
    assert (outbox(), memory_points()) == ([], [str(memory.pk)])


@pytest.mark.django_db
def test_a_store_down_keeps_the_entries_until_the_sweep_after_it_is_back(
    user, settings, django_capture_on_commit_callbacks
):
    settings.QDRANT_URL, settings.QDRANT_TIMEOUT = "http://127.0.0.1:9", 0.5  # nothing listens there
    stores.reset(embeddings=False)
    with django_capture_on_commit_callbacks(execute=True):  # the drain, then its task's first try, both fail
        memory = memory_create(user=user, content=NOTES[2], memory_type="semantic")
    assert outbox() == [("memory", str(memory.pk))]
    assert Memory.objects.get(pk=memory.pk).mirror_state == MirrorState.FAILED

    settings.QDRANT_URL = ""
    stores.reset(embeddings=False)
    assert sweep_mirror_outbox.run() == 1
    assert (outbox(), memory_points()) == ([], [str(memory.pk)])
    assert Memory.objects.get(pk=memory.pk).mirror_state == MirrorState.SYNCED


@pytest.mark.django_db
def test_the_sweep_gives_rows_left_unsynced_without_an_entry_one(user):
    memories = [memory_create(user=user, content=text, memory_type="semantic") for text in NOTES[:2]]
    MirrorOutbox.objects.all().delete()
    # As rows written in bulk before the outbox existed, or marked by hand: pending, no entry.
    Memory.objects.update(mirror_state=MirrorState.PENDING)
    assert sweep_mirror_outbox.run() == 2
    assert sorted(memory_points()) == sorted(str(m.pk) for m in memories)
    assert set(Memory.objects.values_list("mirror_state", flat=True)) == {MirrorState.SYNCED}
    assert sweep_mirror_outbox.run() == 0


@pytest.mark.django_db(transaction=True)
def test_an_archived_memory_loses_its_point_and_is_not_swept_again(user):
    memory = memory_create(user=user, content=NOTES[0], memory_type="semantic")
    memory_archive(memory=memory, via="system", archived=True)
    assert (memory_points(), outbox()) == ([], [])
    assert Memory.objects.get(pk=memory.pk).mirror_state == MirrorState.SYNCED
    assert sweep_mirror_outbox.run() == 0


GUIDE = "\n\n".join(
    f"## Part {n}\n\n" + " ".join(f"Step {n}.{k} of the {word} setup checks one more dial." for k in range(6))
    for n, word in enumerate("ABC")
)


@pytest.mark.django_db(transaction=True)
def test_chunk_vectors_go_through_the_same_outbox(user):
    accepted = document_create_from_text(
        user=user, text=GUIDE, title="guide", chunk_size=50, chunk_overlap=0, background=False
    )
    chunks = list(Chunk.objects.filter(document=accepted.document).order_by("ordinal"))
    store = chunk_mirror.chunk_store()
    assert sorted(store.ids(chunk_mirror.COLLECTION)) == sorted(str(c.pk) for c in chunks)
    with crash_after_commit():
        chunks[0].text = "The nebula chapter, rewritten in the admin."
        chunks[0].save()
        Chunk.objects.filter(pk=chunks[1].pk).delete()
    assert outbox() == [("chunk", str(chunks[0].pk)), ("chunk", str(chunks[1].pk))]

    assert sweep_mirror_outbox.run() == 2
    assert sorted(store.ids(chunk_mirror.COLLECTION)) == sorted(str(c.pk) for c in [chunks[0], *chunks[2:]])
    hits = store.search(
        chunk_mirror.COLLECTION,
        using=hybrid.LEXICAL,
        vector=SparseVector.from_pairs(sparse_query_vector("nebula")),
        limit=1,
        where={"user_id": str(user.pk)},
    )
    assert [hit.id for hit in hits] == [str(chunks[0].pk)]
    assert outbox() == []


@pytest.mark.django_db
def test_without_neo4j_the_graph_adds_no_entries(user, settings):
    settings.NEO4J_URI = ""
    memory_create(user=user, content="Alice works at Google with Bob", memory_type="semantic")
    assert Entity.objects.exists() and Relation.objects.exists()
    assert {kind for kind, _ in outbox()} == {"memory"}  # the SQL graph store reads the tables themselves


def test_every_mirror_is_drained_by_the_outbox_in_dependency_order():
    kinds = [writer.kind for writer in mirror_outbox.writers()]
    assert sorted(kinds) == sorted([mirror.KIND, chunk_mirror.KIND, ENTITY_KIND, RELATION_KIND])
    assert kinds.index(ENTITY_KIND) < kinds.index(RELATION_KIND)
    assert [writer.kind for writer in mirror_outbox.writers() if writer.inline] == [mirror.KIND]


@pytest.mark.neo4j
@pytest.mark.django_db(transaction=True)
def test_the_graph_goes_through_the_same_outbox(settings, user, neo4j_uri):
    settings.NEO4J_URI = neo4j_uri
    settings.NEO4J_PASSWORD = os.environ.get("NEO4J_PASSWORD", "")
    stores.reset(embeddings=False)
    neo4j = stores.graph_store()

    def in_neo4j() -> tuple[set[str], set[str]]:
        nodes = neo4j._run("MATCH (e:Entity) WHERE e.user_id = $u RETURN e.id AS id", u=str(user.pk))
        edges = neo4j._run("MATCH ()-[r:REL]->() WHERE r.user_id = $u RETURN r.id AS id", u=str(user.pk))
        return {record["id"] for record in nodes}, {record["id"] for record in edges}

    try:
        with crash_after_commit():
            memory = memory_create(
                user=user, content="Alice works at Google with Bob", memory_type="semantic"
            )
        entities = {str(pk) for pk in Entity.objects.values_list("pk", flat=True)}
        relations = {str(pk) for pk in Relation.objects.values_list("pk", flat=True)}
        assert entities and relations
        assert {kind for kind, _ in outbox()} == {"memory", ENTITY_KIND, RELATION_KIND}
        assert in_neo4j() == (set(), set())

        sweep_mirror_outbox.run()
        assert in_neo4j() == (entities, relations)
        assert outbox() == []
        with transaction.atomic():
            Memory.objects.filter(pk=memory.pk).delete()
            Entity.objects.filter(user=user).delete()  # their relations go with them
        assert in_neo4j() == (set(), set())
    finally:
        neo4j.delete_user(str(user.pk))
        stores.reset(embeddings=False)
