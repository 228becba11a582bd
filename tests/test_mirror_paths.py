"""One mirror path per mirrored model: a row deleted by any path (a service, the admin's delete page or action, a
queryset, a cascade) leaves no point or node behind, and each write or delete reaches the store once."""

import os
from collections import Counter

import pytest

from core import dispatch, stores
from knowledge.mirror import COLLECTION as CHUNK_COLLECTION
from knowledge.mirror import chunk_store
from knowledge.models import Chunk, Document
from knowledge.services import document_create_from_text, document_delete
from memories import mirror
from memories.actions.forgetting import memories_clear, memories_consolidate, memories_delete
from memories.actions.write import memory_create
from memories.graph import entity_delete, relation_delete
from memories.models import Entity, Memory, Relation

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
    assert dispatched["core.drain_mirror_outbox"] == 0  # memories are drained in the committing thread

    def delete_by(path, doomed: list[str]) -> None:
        store_calls.clear()
        dispatched.clear()
        before = memory_points()
        path()
        assert deletes(store_calls, mirror.COLLECTION) == [sorted(doomed)], path
        assert dispatched["core.drain_mirror_outbox"] == 0
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
        assert dispatched["core.drain_mirror_outbox"] == 1
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


def test_the_sweep_mirrors_a_chunk_edit_made_while_the_vector_store_was_down(user, settings):
    from core import hybrid
    from core.tasks import sweep_mirror_outbox
    from core.text import sparse_query_vector
    from core.vectorstore import SparseVector

    accepted = document_create_from_text(
        user=user, text=GUIDE, title="guide", chunk_size=50, chunk_overlap=0, background=False
    )
    chunk = Chunk.objects.filter(document=accepted.document).order_by("ordinal").first()
    settings.QDRANT_URL, settings.QDRANT_TIMEOUT = "http://127.0.0.1:9", 0.5  # nothing listens there
    stores.reset(embeddings=False)
    chunk.text = "The quasars chapter, edited in the admin during the outage."
    chunk.save()  # its mirror task fails and gives up (eager tasks do not retry)
    chunk.refresh_from_db()
    assert chunk.mirror_state == "failed" and "QDRANT_URL" in chunk.mirror_error

    settings.QDRANT_URL = ""
    stores.reset(embeddings=False)
    assert sweep_mirror_outbox() == 1
    assert Chunk.objects.get(pk=chunk.pk).mirror_state == "synced"
    hits = chunk_store().search(
        CHUNK_COLLECTION,
        using=hybrid.LEXICAL,
        vector=SparseVector.from_pairs(sparse_query_vector("quasars")),
        limit=1,
        where={"user_id": str(user.pk)},
    )
    assert [hit.id for hit in hits] == [str(chunk.pk)]
    assert sweep_mirror_outbox() == 0


@pytest.mark.neo4j
def test_entities_and_relations_deleted_by_any_path_leave_no_node_or_edge(
    settings, user, other_user, admin_client, neo4j_uri, dispatched, monkeypatch
):
    settings.NEO4J_URI = neo4j_uri
    settings.NEO4J_PASSWORD = os.environ.get("NEO4J_PASSWORD", "")
    stores.reset(embeddings=False)
    neo4j = stores.graph_store()
    writes: Counter = Counter()
    for method in ("upsert_entity", "upsert_relation"):
        original = getattr(neo4j, method)
        monkeypatch.setattr(
            neo4j, method, lambda row, original=original: (writes.update([row.id]), original(row))
        )
    owners = [str(user.pk), str(other_user.pk)]

    def in_neo4j() -> tuple[set[str], set[str]]:
        nodes = neo4j._run("MATCH (e:Entity) WHERE e.user_id IN $u RETURN e.id AS id", u=owners)
        edges = neo4j._run("MATCH ()-[r:REL]->() WHERE r.user_id IN $u RETURN r.id AS id", u=owners)
        return {record["id"] for record in nodes}, {record["id"] for record in edges}

    def in_database() -> tuple[set[str], set[str]]:
        return (
            {str(pk) for pk in Entity.objects.values_list("pk", flat=True)},
            {str(pk) for pk in Relation.objects.values_list("pk", flat=True)},
        )

    try:
        for content in ("李四擅长React", "李四也会用Vue.js"):
            memory_create(user=user, content=content, memory_type="working")
        assert not Entity.objects.exists()  # working memories are not linked
        # Promoting both links them in one transaction: 李四 is created by the first and counted again by the
        # second, yet each entity and relation is written once, by one task for the transaction.
        memories_consolidate(user=user, from_type="working", to_type="semantic", importance_threshold=0)
        entity_ids, relation_ids = in_database()
        assert Entity.objects.get(user=user, key="李四").frequency == 2
        assert len(entity_ids) == 3 and relation_ids
        assert writes == Counter({row_id: 1 for row_id in entity_ids | relation_ids})
        assert dispatched["core.drain_mirror_outbox"] == 1
        first = memory_create(user=user, content="钱七擅长Rust", memory_type="semantic")
        for content in (
            "张三在阿里巴巴工作，和王五是同事",
            "Alice works at Google with Bob",
            "赵六住在北京，喜欢Python",
        ):
            memory_create(user=user, content=content, memory_type="semantic")
        memory_create(user=other_user, content="Mallory works at Initech with Trent", memory_type="semantic")
        assert in_neo4j() == in_database()
        assert Relation.objects.filter(user=user).count() >= 4

        def delete_by(path) -> None:
            before = in_database()
            path()
            after = in_database()
            assert after[0] < before[0] or after[1] < before[1], path  # something was deleted
            assert in_neo4j() == after, path

        # The paths below take entities and relations other than `first`'s (random ids ordered by pk picked both of
        # its entities now and then, and deleting it then had nothing left to take): the last path needs them.
        def a_relation() -> Relation:
            mentioned = Entity.objects.filter(memory_links__memory=first)
            others = (
                Relation.objects.filter(user=user).exclude(source__in=mentioned).exclude(target__in=mentioned)
            )
            return others.order_by("pk").first()

        def an_entity() -> Entity:
            return Entity.objects.filter(user=user).exclude(memory_links__memory=first).order_by("pk").first()

        delete_by(lambda: relation_delete(relation=a_relation()))  # the graph service
        delete_by(lambda: entity_delete(entity=an_entity()))  # the service: its relations cascade
        delete_by(
            lambda: admin_client.post(f"/admin/memories/relation/{a_relation().pk}/delete/", {"post": "yes"})
        )
        delete_by(
            lambda: admin_client.post(f"/admin/memories/entity/{an_entity().pk}/delete/", {"post": "yes"})
        )
        delete_by(lambda: Relation.objects.filter(pk=a_relation().pk).delete())
        delete_by(lambda: Entity.objects.filter(pk=an_entity().pk).delete())
        # A deleted memory takes the entities only it mentioned, and their relations.
        delete_by(lambda: memories_delete(user=user, memory_ids=[first.pk]))
        delete_by(lambda: other_user.delete())  # the cascade from the user
        delete_by(lambda: memories_clear(user=user))
        assert in_neo4j() == (set(), set())
    finally:
        for owner in owners:
            neo4j.delete_user(owner)
        stores.reset(embeddings=False)
