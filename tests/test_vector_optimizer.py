"""core.vectorstore.optimizer on a real Qdrant Edge store: a copy is optimized in a child process and swapped in
while the store keeps serving, and no write made meanwhile is lost or comes back.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from core.vectorstore import CollectionSpec, Point, SparseVector, edge, optimizer
from core.vectorstore.edge import EdgeVectorStore

SPEC = CollectionSpec(name="memories", dense={"dense": 384}, sparse=("lexical",), keyword_fields=("user_id",))
# Enough 384-dimensional points for Edge to build an HNSW index (its default indexing threshold is ~10 MB).
POINTS = 8_000


def point_id(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def make_point(n: int, version: int = 0) -> Point:
    vector = np.random.default_rng(n).standard_normal(384).tolist()
    sparse = {"lexical": SparseVector.from_pairs({n % 97 + 1: 1.0})}
    return Point(
        id=point_id(n), dense={"dense": vector}, sparse=sparse, payload={"user_id": "42", "v": version}
    )


@pytest.fixture(scope="module")
def filled_store_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files of a closed store holding the POINTS points, written once for the module's tests to copy."""
    path = tmp_path_factory.mktemp("filled") / "vectors"
    store = EdgeVectorStore(path)
    store.ensure_collection(SPEC)
    for start in range(0, POINTS, 1000):
        store.upsert("memories", [make_point(n) for n in range(start, start + 1000)])
    store.close()
    return path


@pytest.fixture
def store(tmp_path: Path, filled_store_files: Path) -> Iterator[EdgeVectorStore]:
    """A store of its own for each test, with the POINTS points, unoptimized (a copy of the files above)."""
    shutil.copytree(filled_store_files, tmp_path / "vectors")
    store = EdgeVectorStore(tmp_path / "vectors")
    yield store
    store.close()


class Writer(threading.Thread):
    """Writes from another thread until stopped: new points, new versions of old ones, and deletions."""

    def __init__(self, store: EdgeVectorStore, first: int) -> None:
        super().__init__(name="test-writer")
        self.store, self.next = store, first
        self.stop = threading.Event()
        self.written: set[int] = set()
        self.deleted: set[int] = set()
        self.rewritten: set[int] = set()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                n = self.next
                self.next += 1
                self.store.upsert("memories", [make_point(n)])
                self.written.add(n)
                old = n % POINTS
                if n % 3 == 0:
                    self.store.delete("memories", [point_id(old)])
                    self.deleted.add(old)
                    self.rewritten.discard(old)
                elif old not in self.deleted:
                    self.store.upsert("memories", [make_point(old, version=1)])
                    self.rewritten.add(old)
                self.store.search(
                    "memories", using="dense", vector=[1.0] * 384, limit=5, where={"user_id": "42"}
                )
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - asserted by the test
            self.errors.append(exc)


def test_a_copy_is_optimized_and_swapped_in_while_writes_keep_arriving(
    store: EdgeVectorStore, monkeypatch
) -> None:
    # The writer below writes faster than a server would for the whole pass: keep every update journaled.
    monkeypatch.setattr("core.vectorstore.edge_shard.JOURNAL_LIMIT", 1_000_000)
    points, indexed_before, _ = store.index_status("memories")
    assert (points, indexed_before) == (
        POINTS,
        POINTS,
    )  # only the sparse vectors: dense ones are brute-forced
    writer = Writer(store, first=1_000_000)
    writer.start()
    try:
        record = optimizer.optimize_copy(store, "memories")
    finally:
        writer.stop.set()
        writer.join()
    assert writer.errors == []
    during = set(writer.written)
    assert record["replayed"] > 0  # writes arrived while the child optimized, and were replayed onto the copy

    # After the swap the store takes writes as before.
    store.upsert("memories", [make_point(2_000_000)])
    store.delete("memories", [point_id(1)])
    after_deleted = writer.deleted | {1}

    ids = store.ids("memories")
    assert len(ids) == len(set(ids))  # every point exactly once
    expected = ({point_id(n) for n in range(POINTS)} - {point_id(n) for n in after_deleted}) | {
        point_id(n) for n in during | {2_000_000}
    }
    assert set(ids) == expected
    assert store.count("memories") == len(expected)
    rewritten = sorted(writer.rewritten - after_deleted)[:50]
    assert rewritten and all(
        hit.payload["v"] == 1 for hit in store.retrieve("memories", map(point_id, rewritten))
    )
    assert store.retrieve("memories", [point_id(n) for n in sorted(after_deleted)[:50]]) == []

    # The copied points now sit in HNSW-indexed segments: dense and sparse vectors of at least POINTS points.
    points_after, indexed_after, _ = store.index_status("memories")
    assert indexed_after >= 2 * (POINTS - len(after_deleted))
    assert record["unindexed_share"] == 0.5 and record["unindexed_share_after"] < 0.2
    assert [line["state"] for line in optimizer.history(store.path)] == ["started", "done"]
    # Nothing of the pass is left beside the collection, and a fresh open sees the same points.
    assert sorted(p.name for p in store.path.iterdir() if p.is_dir()) == ["memories"]
    store.close()
    reopened = EdgeVectorStore(store.path)
    assert set(reopened.ids("memories")) == expected
    reopened.close()


def test_search_finds_the_same_neighbours_after_the_swap(store: EdgeVectorStore) -> None:
    query = make_point(123).dense["dense"]
    before = store.search("memories", using="dense", vector=query, limit=1)
    optimizer.optimize_copy(store, "memories")
    after = store.search("memories", using="dense", vector=query, limit=1)
    assert [hit.id for hit in before] == [hit.id for hit in after] == [point_id(123)]


def test_a_pass_starts_only_when_the_store_is_quiet_and_one_at_a_time(store: EdgeVectorStore) -> None:
    store.search("memories", using="dense", vector=[1.0] * 384, limit=1)
    assert optimizer.start_when_due(store, quiet_seconds=60) is None  # searched just now
    assert optimizer.due_collections(store) == ["memories"]
    edge._last_used[store.path] -= (
        1.0  # the store's clock moves on a second: quiet for 0.2 s now, without a sleep
    )
    thread = optimizer.start_when_due(store, quiet_seconds=0.2)
    assert thread is not None
    time.sleep(0.2)
    assert optimizer.start_when_due(store, quiet_seconds=0) is None  # the first one is still running
    thread.join(timeout=300)
    assert optimizer.due_collections(store) == []  # indexed now
    assert [line["state"] for line in optimizer.history(store.path)] == ["started", "done"]


def test_a_small_collection_is_not_due(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path / "vectors")
    store.ensure_collection(SPEC)
    store.upsert("memories", [make_point(n) for n in range(100)])
    assert optimizer.unindexed_share(store, "memories") == (100, 0.5)
    assert optimizer.due_collections(store) == []  # under MIN_UNINDEXED_POINTS brute force is fast enough
    store.close()


def test_a_swap_interrupted_by_a_crash_is_undone_when_the_store_opens(tmp_path: Path) -> None:
    path = tmp_path / "vectors"
    store = EdgeVectorStore(path)
    store.ensure_collection(SPEC)
    store.upsert("memories", [make_point(n) for n in range(10)])
    store.close()
    # The state swap_optimized leaves if the process dies after moving the old shard aside: the copy in its
    # place may lack the journaled writes, so the old shard is the true one.
    (path / "memories").rename(path / ".replaced-memories")
    (path / "memories").mkdir()
    (path / "memories" / "edge_config.json").write_text(json.dumps({"vectors": {}}))
    store = EdgeVectorStore(path)
    assert store.count("memories") == 10
    assert store.collections() == ["memories"]
    assert not (path / ".replaced-memories").exists()
    store.close()


def test_dropping_the_collection_during_a_pass_abandons_the_swap(store: EdgeVectorStore, monkeypatch) -> None:
    def drop_meanwhile(directory: Path) -> dict:
        store.drop_collection("memories")
        return {}

    monkeypatch.setattr(optimizer, "_run_child", drop_meanwhile)
    with pytest.raises(Exception, match="memories"):
        optimizer.optimize_copy(store, "memories")
    assert store.collections() == []
    assert not any(store.path.glob(".optimizing-*"))
    assert optimizer.history(store.path)[-1]["state"] == "failed"


@pytest.mark.django_db
def test_the_periodic_task_optimizes_the_servers_store_once_it_is_quiet(
    user, settings, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    from core import stores
    from core.tasks import optimize_vectors_when_quiet
    from memories import mirror
    from memories.actions.write import memory_create

    with django_capture_on_commit_callbacks(execute=True):  # the mirror writes on commit
        memory_create(user=user, content="李四是前端工程师", memory_type="semantic")
    settings.MNEMO_VECTOR_OPTIMIZE_QUIET_SECONDS = 60
    assert optimize_vectors_when_quiet.run() == "nothing to do now"  # one point: never due
    monkeypatch.setattr(optimizer, "MIN_UNINDEXED_POINTS", 0)
    assert optimize_vectors_when_quiet.run() == "nothing to do now"  # due, but the store was just written
    settings.MNEMO_VECTOR_OPTIMIZE_QUIET_SECONDS = 0
    assert optimize_vectors_when_quiet.run() == "started"
    for _ in range(600):
        if [line["state"] for line in optimizer.history(settings.QDRANT_EDGE_PATH)][-1:] == ["done"]:
            break
        time.sleep(0.1)
    assert [line["collection"] for line in optimizer.history(settings.QDRANT_EDGE_PATH)] == [
        mirror.COLLECTION
    ] * 2
    assert stores.vector_store().count(mirror.COLLECTION) == 1
    # One point stays below Edge's indexing threshold: the pass changed nothing, so it is not repeated.
    assert optimizer.due_collections(stores.vector_store()) == []


def test_a_pass_during_heavy_writes_is_abandoned_and_the_store_keeps_them(
    store: EdgeVectorStore, monkeypatch
) -> None:
    monkeypatch.setattr("core.vectorstore.edge_shard.JOURNAL_LIMIT", 5)

    def write_a_lot_meanwhile(directory: Path) -> dict:
        for n in range(POINTS, POINTS + 10):
            store.upsert("memories", [make_point(n)])
        return {}

    monkeypatch.setattr(optimizer, "_run_child", write_a_lot_meanwhile)
    with pytest.raises(Exception, match="more than 5 updates arrived meanwhile"):
        optimizer.optimize_copy(store, "memories")
    assert store.count("memories") == POINTS + 10
    assert optimizer.due_collections(store) == ["memories"]  # to be tried again once writes pause
    assert sorted(p.name for p in store.path.iterdir() if p.is_dir()) == ["memories"]
