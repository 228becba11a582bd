"""Contract tests for core.vectorstore: the same suite runs against Qdrant Edge (on disk) and
qdrant-client's ":memory:" mode (the server's API), plus backend-specific tests for the Edge lock and
persistence and for server error handling. No Django here: run with `-p no:django`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from core.vectorstore import (
    CollectionSpec,
    Hit,
    Point,
    SparseVector,
    VectorStore,
    VectorStoreConfigError,
    VectorStoreError,
    VectorStoreLocked,
    VectorStoreUnavailable,
    damage,
    open_vector_store,
)
from core.vectorstore.edge import EdgeVectorStore
from core.vectorstore.qdrant import QdrantServerStore
from tests.served import serve_in_background

ROOT = Path(__file__).resolve().parents[1]

SPEC = CollectionSpec(
    name="memories",
    dense={"dense": 4},
    sparse=("lexical",),
    keyword_fields=("user_id", "memory_type"),
    float_fields=("importance", "created_ts"),
)

A, B, C, D = (str(uuid.UUID(int=n)) for n in (1, 2, 3, 4))


def point(
    point_id: str, dense: list[float], terms: dict[int, float] | None = None, **payload: object
) -> Point:
    sparse = {"lexical": SparseVector.from_pairs(terms)} if terms else {}
    return Point(id=point_id, dense={"dense": dense}, sparse=sparse, payload=payload)


def sample_points() -> list[Point]:
    return [
        point(A, [1, 0, 0, 0], {1: 1.0, 2: 1.0}, user_id="42", memory_type="working", importance=0.9,
              created_ts=1_700_000_000, archived=False),
        point(B, [0, 1, 0, 0], {1: 1.0}, user_id="42", memory_type="episodic", importance=0.2,
              created_ts=1_700_000_100, archived=True),
        point(C, [1, 1, 0, 0], {3: 1.0}, user_id="42", memory_type="semantic", importance=0.5,
              created_ts=1_700_000_200, archived=False),
        point(D, [0, 0, 1, 0], None, user_id="7", memory_type="working", importance=0.3,
              created_ts=1_700_000_300, archived=False),
    ]  # fmt: skip


@pytest.fixture(params=["qdrant-edge", "qdrant"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    if request.param == "qdrant-edge":
        backend: VectorStore = EdgeVectorStore(tmp_path / "vectors")
    else:
        backend = QdrantServerStore(":memory:", prefix="test")
    assert backend.backend == request.param
    yield backend
    backend.close()


@pytest.fixture
def filled(store: VectorStore) -> VectorStore:
    store.ensure_collection(SPEC)
    store.upsert("memories", sample_points())
    return store


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


# ---------------------------------------------------------------------------------------------------------
# Contract: both backends


def test_dense_search_returns_raw_cosine_scores_best_first(filled: VectorStore) -> None:
    hits = filled.search("memories", using="dense", vector=[1, 0, 0, 0], limit=3)

    assert ids(hits) == [A, C, B] or ids(hits) == [A, C, D]  # B and D tie at 0.0
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert hits[1].score == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert hits[0].payload["user_id"] == "42"


def test_sparse_search_weights_terms_by_idf(filled: VectorStore) -> None:
    # Three points have sparse vectors: term 1 is in two of them, term 2 in one, term 3 in one.
    def idf(n: int, total: int = 3) -> float:
        return math.log(1 + (total - n + 0.5) / (n + 0.5))

    hits = filled.search(
        "memories", using="lexical", vector=SparseVector.from_pairs({1: 1.0, 2: 1.0}), limit=5
    )

    assert ids(hits) == [A, B]
    assert hits[0].score == pytest.approx(idf(2) + idf(1), rel=1e-4)
    assert hits[1].score == pytest.approx(idf(2), rel=1e-4)


def test_empty_sparse_query_matches_nothing(filled: VectorStore) -> None:
    assert filled.search("memories", using="lexical", vector=SparseVector((), ()), limit=5) == []


def test_search_sees_an_upsert_immediately(filled: VectorStore) -> None:
    new = str(uuid.uuid4())
    filled.upsert("memories", [point(new, [0, 0, 0, 1], {9: 1.0}, user_id="42")])

    assert ids(filled.search("memories", using="dense", vector=[0, 0, 0, 1], limit=1)) == [new]
    assert ids(filled.search("memories", using="lexical", vector=SparseVector((9,), (1.0,)), limit=1)) == [
        new
    ]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"user_id": "42"}, {A, B, C}),
        ({"user_id": "42", "memory_type": "episodic"}, {B}),
        ({"memory_type": ["working", "semantic"]}, {A, C, D}),
        ({"memory_type": []}, set()),
        ({"importance": {"gte": 0.5}}, {A, C}),
        ({"importance": {"gt": 0.2, "lt": 0.9}}, {C, D}),
        ({"created_ts": {"gte": 1_700_000_100, "lte": 1.7000002e9}}, {B, C}),
        ({"archived": False}, {A, C, D}),
        ({"archived": True}, {B}),
        ({"archived": False, "user_id": "42", "importance": {"lte": 0.5}}, {C}),
        ({"user_id": "42", "memory_type": {"not": "working"}}, {B, C}),
        ({"archived": {"not": True}}, {A, C, D}),
        # A marker no point carries excludes none of them.
        ({"origin": {"not": "chat"}}, {A, B, C, D}),
    ],
)
def test_filters(filled: VectorStore, where: dict, expected: set[str]) -> None:
    hits = filled.search("memories", using="dense", vector=[1, 1, 1, 1], limit=10, where=where)

    assert set(ids(hits)) == expected
    assert filled.count("memories", where) == len(expected)


@pytest.mark.parametrize(
    "where",
    [
        {"importance": {"between": 1}},
        {"importance": {}},
        {"x": 0.5},
        {"x": [True]},
        {"x": ["a", 1]},
        {"x": None},
        {"x": {"not": 0.5}},
        {"x": {"not": "a", "gte": 1}},
        {"x": {"not": ["a", "b"]}},
    ],
)
def test_unsupported_filters_raise_value_error(filled: VectorStore, where: dict) -> None:
    with pytest.raises(ValueError):
        filled.count("memories", where)


def test_ids_lists_every_point_and_honours_where(filled: VectorStore) -> None:
    assert sorted(filled.ids("memories")) == sorted([A, B, C, D])
    assert sorted(filled.ids("memories", {"user_id": "42"})) == sorted([A, B, C])


def test_ids_pages_through_large_collections(store: VectorStore) -> None:
    store.ensure_collection(CollectionSpec("big", dense={"dense": 2}))
    expected = [str(uuid.uuid4()) for _ in range(2500)]
    store.upsert("big", [Point(point_id, {"dense": [1.0, 0.0]}, {}, {}) for point_id in expected])
    assert sorted(store.ids("big")) == sorted(expected)


def test_retrieve_keeps_request_order_and_omits_missing(filled: VectorStore) -> None:
    hits = filled.retrieve("memories", [C, str(uuid.uuid4()), A, C])

    assert ids(hits) == [C, A]
    assert [hit.score for hit in hits] == [0.0, 0.0]
    assert hits[0].payload["memory_type"] == "semantic"


def test_retrieve_with_vectors_returns_each_stored_vector_and_omits_missing(filled: VectorStore) -> None:
    hits = filled.retrieve("memories", [C, str(uuid.uuid4()), A], with_vectors=True)
    vectors = {hit.id: hit.dense["dense"] for hit in hits}

    assert set(vectors) == {C, A}
    # Cosine collections store unit vectors: [1, 1, 0, 0] comes back normalised.
    assert vectors[C] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2), 0, 0], abs=1e-6)
    assert vectors[A] == pytest.approx([1, 0, 0, 0], abs=1e-6)


def test_retrieve_with_vectors_gives_the_stored_dense_vectors_which_damage_checks(
    filled: VectorStore,
) -> None:
    assert filled.dense_config("memories") == {"dense": (4, "cosine")}
    hit_a, hit_c = filled.retrieve("memories", [A, C], with_vectors=True)
    assert hit_a.dense == {"dense": [1.0, 0.0, 0.0, 0.0]}
    assert hit_c.dense["dense"] == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2), 0.0, 0.0])  # normalised
    assert filled.retrieve("memories", [A])[0].dense == {}  # only when asked
    config = filled.dense_config("memories")
    assert [damage(hit, config) for hit in (hit_a, hit_c)] == ["", ""]
    # What a segment overwritten with garbage gives back, and a collection built for a bigger model.
    assert (
        damage(Hit(A, 0.0, {}, {"dense": [3.0, 0.0, 0.0, 0.0]}), config)
        == "its dense vector is not normalised"
    )
    assert damage(Hit(A, 0.0, {}, {"dense": [math.nan, 0, 0, 1]}), config) == (
        "its dense vector holds values that are not numbers"
    )
    assert damage(Hit(A, 0.0, {}, {}), config) == "its dense vector is missing"
    assert damage(hit_a, {"dense": (8, "cosine")}) == "its dense vector has 4 values, not 8"


def test_upserting_the_same_id_twice_replaces_the_point(filled: VectorStore) -> None:
    filled.upsert("memories", [point(A, [0, 0, 0, 1], user_id="42", memory_type="semantic")])
    filled.upsert("memories", [point(A, [0, 0, 0, 1], user_id="42", memory_type="semantic")])

    assert filled.count("memories") == 4
    assert filled.retrieve("memories", [A])[0].payload == {"user_id": "42", "memory_type": "semantic"}
    # The replacement has no sparse vector, so A no longer matches on term 2.
    assert filled.search("memories", using="lexical", vector=SparseVector((2,), (1.0,)), limit=5) == []


def test_uuid_ids_are_normalised(filled: VectorStore) -> None:
    assert ids(filled.retrieve("memories", [A.upper()])) == [A]
    with pytest.raises(ValueError, match="UUID"):
        Point(id="42", dense={"dense": [1, 0, 0, 0]})


def test_delete_by_id_ignores_absent_ids(filled: VectorStore) -> None:
    filled.delete("memories", [A, str(uuid.uuid4())])
    filled.delete("memories", [])

    assert filled.count("memories") == 3
    assert filled.retrieve("memories", [A]) == []


def test_delete_where(filled: VectorStore) -> None:
    filled.delete_where("memories", {"user_id": "42", "archived": False})

    assert set(ids(filled.retrieve("memories", [A, B, C, D]))) == {B, D}


def test_delete_where_refuses_an_empty_filter(filled: VectorStore) -> None:
    with pytest.raises(ValueError, match="drop_collection"):
        filled.delete_where("memories", {})
    assert filled.count("memories") == 4


def test_ensure_collection_is_idempotent(filled: VectorStore) -> None:
    filled.ensure_collection(SPEC)
    filled.ensure_collection(SPEC)

    assert filled.count("memories") == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            CollectionSpec("memories", dense={"dense": 8}, sparse=("lexical",)),
            "has size 4, the embedder produces 8",
        ),
        (CollectionSpec("memories", dense={"dense": 4}, sparse=("bm25",)), "sparse vector 'bm25' is missing"),
        (
            CollectionSpec("memories", dense={"dense": 4}, distance="dot"),
            "uses cosine distance, configured dot",
        ),
    ],
)
def test_ensure_collection_rejects_a_different_configuration(
    filled: VectorStore, spec: CollectionSpec, message: str
) -> None:
    with pytest.raises(VectorStoreConfigError) as excinfo:
        filled.ensure_collection(spec)

    assert message in str(excinfo.value)
    assert "QDRANT_VECTOR_SIZE / EMBED_MODEL_TYPE" in str(excinfo.value)
    assert filled.count("memories") == 4


def test_unknown_distance_names_the_setting() -> None:
    with pytest.raises(VectorStoreConfigError, match="QDRANT_DISTANCE"):
        CollectionSpec("memories", dense={"dense": 4}, distance="manhattan")


def test_a_collection_that_was_never_created_is_an_error(store: VectorStore) -> None:
    with pytest.raises(VectorStoreError, match="does not exist"):
        store.count("nothing_here")


def test_drop_collection(filled: VectorStore) -> None:
    filled.drop_collection("memories")
    filled.drop_collection("memories")

    filled.ensure_collection(SPEC)
    assert filled.count("memories") == 0


def test_collections_lists_what_the_store_holds(filled: VectorStore) -> None:
    # resync_mirrors --rebuild (and so migrate_up) asks this of both backends.
    assert filled.collections() == ["memories"]
    filled.drop_collection("memories")
    assert filled.collections() == []


def test_ping_describes_the_backend(filled: VectorStore) -> None:
    detail = filled.ping()

    assert "(1 collections)" in detail
    assert detail.startswith("qdrant-edge 0.") if filled.backend == "qdrant-edge" else "in-memory" in detail


def test_sparse_vector_from_pairs_merges_duplicates() -> None:
    vector = SparseVector.from_pairs([(5, 1.0), (2, 0.5), (5, 2.0)])

    assert vector == SparseVector((2, 5), (0.5, 3.0))
    with pytest.raises(ValueError, match="unique"):
        SparseVector((1, 1), (1.0, 1.0))
    with pytest.raises(ValueError, match="as many values"):
        SparseVector((1, 2), (1.0,))


# ---------------------------------------------------------------------------------------------------------
# Qdrant Edge: persistence, sharing within a process, and the cross-process lock


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_edge_data_survives_close_and_reopen(tmp_path: Path) -> None:
    first = EdgeVectorStore(tmp_path)
    first.ensure_collection(SPEC)
    first.upsert("memories", sample_points())
    first.delete("memories", [D])
    first.close()

    second = EdgeVectorStore(tmp_path)
    try:
        assert second.count("memories") == 3  # no ensure_collection needed to reopen
        assert second.retrieve("memories", [B])[0].payload["archived"] is True
        assert ids(second.search("memories", using="dense", vector=[1, 0, 0, 0], limit=1)) == [A]
    finally:
        second.close()


def test_a_new_edge_collection_is_searched_with_the_search_threads_setting(tmp_path: Path) -> None:
    import json

    from core.vectorstore.edge_root import SEARCH_THREADS

    store = EdgeVectorStore(tmp_path)
    try:
        store.ensure_collection(SPEC)
    finally:
        store.close()
    config = json.loads((tmp_path / "memories" / "edge_config.json").read_text())
    assert config["max_search_threads"] == SEARCH_THREADS


def test_an_edge_collection_made_before_the_search_threads_setting_is_searched_with_it(
    tmp_path: Path,
) -> None:
    # As qdrant-edge made shards before Mnemo set max_search_threads: the default pool of a thread per core.
    import json

    import qdrant_edge as qe

    from core.vectorstore.edge_root import SEARCH_THREADS

    directory = tmp_path / "memories"
    old = qe.EdgeShard.create(
        str(directory),
        qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=4, distance=qe.Distance.Cosine)},
            sparse_vectors={"lexical": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        ),
    )
    old.flush()
    old.close()
    assert "max_search_threads" not in json.loads((directory / "edge_config.json").read_text())
    store = EdgeVectorStore(tmp_path)
    try:
        store.ensure_collection(SPEC)
        store.upsert("memories", sample_points())
        assert ids(store.search("memories", using="dense", vector=[1, 0, 0, 0], limit=1)) == [A]
        assert ids(
            store.search("memories", using="lexical", vector=SparseVector.from_pairs({3: 1.0}), limit=1)
        ) == [C]
    finally:
        store.close()
    assert json.loads((directory / "edge_config.json").read_text())["max_search_threads"] == SEARCH_THREADS


def test_edge_writes_survive_a_process_that_exits_without_closing(tmp_path: Path) -> None:
    result = run_python(f"""
        import os
        from core.vectorstore import CollectionSpec, Point, open_vector_store
        store = open_vector_store(path={str(tmp_path)!r})
        store.ensure_collection(CollectionSpec("memories", dense={{"dense": 4}}))
        store.upsert("memories", [Point({A!r}, {{"dense": [1, 0, 0, 0]}}, {{}}, {{"n": 1}})])
        os._exit(0)
    """)
    assert result.returncode == 0, result.stderr

    store = EdgeVectorStore(tmp_path)
    try:
        assert store.retrieve("memories", [A])[0].payload == {"n": 1}
    finally:
        store.close()


def test_edge_stores_on_the_same_path_share_the_open_shards(tmp_path: Path) -> None:
    first = EdgeVectorStore(tmp_path)
    second = EdgeVectorStore(tmp_path / ".." / tmp_path.name)
    first.ensure_collection(SPEC)
    first.upsert("memories", sample_points())

    assert second.count("memories") == 4
    first.close()
    assert second.count("memories") == 4  # still open: second holds its own reference
    second.close()


LOCKED_CHILD = """
    import sys
    from core.vectorstore import VectorStoreLocked, open_vector_store
    store = open_vector_store(path={path!r})
    try:
        print(store.count("memories"))
    except VectorStoreLocked as exc:
        print(exc)
        sys.exit(3)
"""


def test_edge_second_process_gets_a_clear_lock_error(tmp_path: Path) -> None:
    holder = EdgeVectorStore(tmp_path)
    holder.ensure_collection(SPEC)
    holder.upsert("memories", sample_points())

    locked = run_python(LOCKED_CHILD.format(path=str(tmp_path)))

    assert locked.returncode == 3, locked.stderr
    assert locked.stderr == ""
    message = locked.stdout.strip()
    assert message.startswith(
        f"The embedded vector store at {tmp_path} is already open in another Mnemo process (pid "
    )
    assert "usually the running server (`make run`)" in message
    assert "Stop that process, or run this command through the running server" in message
    assert "QDRANT_URL" in message

    holder.close()
    unlocked = run_python(LOCKED_CHILD.format(path=str(tmp_path)))
    assert (unlocked.returncode, unlocked.stdout.strip()) == (0, "4")


def test_edge_wal_lock_held_outside_mnemo_is_reported_as_locked(tmp_path: Path) -> None:
    import qdrant_edge

    setup = EdgeVectorStore(tmp_path)
    setup.ensure_collection(SPEC)
    setup.close()
    # A shard opened directly through qdrant-edge bypasses our owner lock; the engine's WAL lock must
    # still come back as VectorStoreLocked rather than a bare Exception.
    raw = qdrant_edge.EdgeShard.load(str(tmp_path / "memories"))
    store = EdgeVectorStore(tmp_path)
    try:
        with pytest.raises(VectorStoreLocked, match="already open in another Mnemo process"):
            store.count("memories")
    finally:
        store.close()
        raw.close()


def test_edge_rejects_collection_names_that_leave_the_store(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path / "vectors")
    with pytest.raises(ValueError, match="Invalid collection name"):
        store.ensure_collection(CollectionSpec("../escape", dense={"dense": 4}))
    store.close()


def test_edge_concurrent_threads_share_one_store(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path)
    store.ensure_collection(SPEC)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.upsert(
                    "memories", [point(str(uuid.UUID(int=1000 * n + i)), [1, n, i, 0], user_id="42")]
                )
                store.search("memories", using="dense", vector=[1, 0, 0, 0], limit=3, where={"user_id": "42"})
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert store.count("memories") == 80
    store.close()


# ---------------------------------------------------------------------------------------------------------
# Qdrant server: errors name the settings to fix


def test_unreachable_server_names_qdrant_url() -> None:
    store = open_vector_store(url="http://127.0.0.1:9", timeout=1)
    with pytest.raises(VectorStoreUnavailable) as excinfo:
        store.ping()

    assert "QDRANT_URL" in str(excinfo.value)
    assert "http://127.0.0.1:9" in str(excinfo.value)
    store.close()


class _FakeQdrant(BaseHTTPRequestHandler):
    """Answers every request with the status in the class attribute, like a server behind a proxy."""

    status = 401

    def do_GET(self) -> None:
        self._reply()

    def do_POST(self) -> None:
        self._reply()

    def do_PUT(self) -> None:
        self._reply()

    def _reply(self) -> None:
        body = json.dumps({"status": {"error": "nope"}, "time": 0}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass


@pytest.fixture
def fake_server() -> Iterator[tuple[str, type[_FakeQdrant]]]:
    handler = type("Handler", (_FakeQdrant,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_background(server)
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_rejected_api_key_names_qdrant_api_key(
    fake_server: tuple[str, type[_FakeQdrant]], status: int
) -> None:
    url, handler = fake_server
    handler.status = status
    store = open_vector_store(url=url, api_key="wrong", timeout=2)

    with pytest.raises(VectorStoreUnavailable, match=f"HTTP {status}.*QDRANT_API_KEY"):
        store.count("memories")
    store.close()


def test_server_errors_are_unavailable_and_missing_collections_are_errors(
    fake_server: tuple[str, type[_FakeQdrant]],
) -> None:
    url, handler = fake_server
    store = QdrantServerStore(url, timeout=2, prefix="mnemo")

    handler.status = 503
    with pytest.raises(VectorStoreUnavailable, match="HTTP 503"):
        store.count("memories")
    handler.status = 404
    # The server failed a moment ago: calls fail at once until its breaker's time has passed.
    with pytest.raises(VectorStoreUnavailable, match="did not answer a moment ago"):
        store.count("memories")
    store.breaker.reset()
    with pytest.raises(VectorStoreError, match="'mnemo_memories' does not exist") as excinfo:
        store.count("memories")
    assert not isinstance(excinfo.value, VectorStoreUnavailable)
    store.close()


def test_open_vector_store_picks_the_backend(tmp_path: Path) -> None:
    assert open_vector_store(url=":memory:").backend == "qdrant"
    assert open_vector_store(path=tmp_path).backend == "qdrant-edge"
    with pytest.raises(ValueError, match="QDRANT_URL"):
        open_vector_store()


def test_count_cached_is_reused_until_a_write_through_the_store(filled: VectorStore, monkeypatch) -> None:
    where = {"user_id": "42"}
    assert filled.count_cached("memories", where) == 3
    calls = []
    monkeypatch.setattr(filled, "count", lambda *args: calls.append(args) or 99)
    assert filled.count_cached("memories", where) == 3 and calls == []  # reused
    monkeypatch.undo()
    filled.upsert("memories", [point(str(uuid.UUID(int=5)), [0, 0, 0, 1], {1: 1.0}, user_id="42")])
    assert filled.count_cached("memories", where) == 4
    filled.delete("memories", [A])
    assert filled.count_cached("memories", where) == 3
    filled.delete_where("memories", {"user_id": "42"})
    assert filled.count_cached("memories", where) == 0


def test_search_can_return_only_some_payload_keys(filled: VectorStore) -> None:
    hits = filled.search(
        "memories",
        using="dense",
        vector=[1, 0, 0, 0],
        limit=2,
        where={"user_id": "42"},
        payload_keys=["importance"],
    )
    assert [hit.payload for hit in hits] == [{"importance": 0.9}, {"importance": 0.5}]
    no_payload = filled.search("memories", using="dense", vector=[1, 0, 0, 0], limit=2, payload_keys=())
    assert [hit.payload for hit in no_payload] == [{}, {}]


def test_retrieve_can_return_only_some_payload_keys(filled: VectorStore) -> None:
    # Fusion reads two keys of each candidate's payload, once per candidate (core.hybrid.gather).
    hits = filled.retrieve("memories", [C, A], payload_keys=["importance"])
    assert [(hit.id, hit.payload) for hit in hits] == [(C, {"importance": 0.5}), (A, {"importance": 0.9})]
    assert [hit.payload for hit in filled.retrieve("memories", [A], payload_keys=())] == [{}]


def test_edge_flushes_written_collections_in_the_background_not_on_every_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setattr("core.vectorstore.edge_root.FLUSH_SECONDS", 0.1)
    store = EdgeVectorStore(tmp_path)
    store.ensure_collection(SPEC)
    root = store._open()

    class CountingShard:
        def __init__(self, shard):
            self.shard, self.flushes = shard, 0

        def flush(self):
            self.flushes += 1
            self.shard.flush()

        def __getattr__(self, name):
            return getattr(self.shard, name)

    entry = root.shards["memories"]
    counting = entry.shard = CountingShard(entry.shard)
    try:
        for point_id in (A, B, C, D):
            store.upsert("memories", [p for p in sample_points() if p.id == point_id])
        assert counting.flushes == 0  # the writes returned without waiting for a flush
        assert store.count("memories") == 4  # and are searchable already
        deadline = time.monotonic() + 5
        while counting.flushes == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert counting.flushes == 1  # one flush for the four writes
    finally:
        store.close()


def test_point_ids_come_back_in_one_canonical_form_whatever_form_they_had():
    from core.vectorstore.base import normalize_id

    known = uuid.UUID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")
    for form in (known, str(known), str(known).upper(), known.hex, "{" + str(known) + "}"):
        assert normalize_id(form) == "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    for wrong in ("1b4e28ba-2fa1-11d2-883f-0016d3cca42", "not an id", 42):
        with pytest.raises(ValueError, match="must be UUIDs"):
            normalize_id(wrong)
