"""Qdrant Edge backend: the Qdrant engine in-process (qdrant-edge-py), one EdgeShard per collection.

Layout on disk: <path>/<collection>/ is one shard (edge_config.json, segments/, wal/), and
<path>/.mnemo-owner.lock names the process that has the store open.

Only one process may open a shard: its WAL is locked. A second process (a management command while
`make run` is up) must get a clear VectorStoreLocked, not a Rust error, so we take our own advisory lock
on the store directory before touching any shard and report who holds it. Inside one process, every
EdgeVectorStore on the same path shares one set of open shards through a module-level registry, because
opening a shard twice fails even within a process: both live in core/vectorstore/edge_root.py.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import numpy as np
import qdrant_edge as qe

from .base import (
    AnyCondition,
    CollectionSpec,
    Condition,
    Hit,
    MatchCondition,
    NotCondition,
    Point,
    RangeCondition,
    SparseVector,
    VectorStore,
    VectorStoreConfigError,
    VectorStoreError,
    Where,
    check_search_args,
    config_mismatch,
    dense_floats,
    normalize_id,
    order_hits,
    parse_where,
    payload_selector,
    require_where,
)
from .edge_root import (
    SHARD_CONFIG,
    OpenRoot,
    acquire,
    edge_config,
    edge_error,
    load_shard,
    read_shard_config,
    release,
)
from .edge_shard import OpenShard

_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_last_used: dict[Path, float] = {}  # monotonic time of the last read or write per store path (idle_seconds)


# ---------------------------------------------------------------------------------------------------------
# The store


class EdgeVectorStore(VectorStore):
    """Embedded vector store. Opening is lazy: constructing it touches nothing on disk."""

    backend = "qdrant-edge"

    def __init__(self, path: str | Path, *, before_growth: Callable[[], None] | None = None) -> None:
        """`before_growth` is called before every write that can grow the store's files (an upsert, a new
        collection) and may raise to refuse it: the store maps its files into memory, and a write into a page
        the disk cannot back kills the process (SIGBUS). Deletes are let through, so data can still be removed
        to make room."""
        self.path = Path(path).expanduser().resolve()
        self._before_growth = before_growth or (lambda: None)
        self._root: OpenRoot | None = None
        self._lock = threading.Lock()

    # -- collections ---------------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        root = self._open()
        directory = self.path / _checked_name(spec.name)
        existing = read_shard_config(directory)
        if existing is not None and (problem := config_mismatch(spec.name, spec, *existing)):
            raise VectorStoreConfigError(problem)
        if existing is None:
            self._before_growth()
        entry = root.shard(spec.name, create=_edge_config(spec))
        wanted = {name: qe.PayloadSchemaType.Keyword for name in spec.keyword_fields}
        wanted |= {name: qe.PayloadSchemaType.Float for name in spec.float_fields}
        with self._errors(spec.name, "create payload indexes"):
            with entry.reading() as shard:
                indexed = shard.info().payload_schema
            missing = {name: schema for name, schema in wanted.items() if name not in indexed}
            for name, schema in missing.items():
                entry.update(qe.UpdateOperation.create_field_index(name, schema))
            if missing:
                with entry.reading() as shard:
                    shard.flush()

    def drop_collection(self, collection: str) -> None:
        self.forget_counts(collection)
        self._open().drop(_checked_name(collection))

    def collections(self) -> list[str]:
        if not self.path.is_dir():
            return []
        # Names starting with a dot are an optimization's work (see core/vectorstore/optimizer.py), not collections.
        return sorted(
            p.name
            for p in self.path.iterdir()
            if _COLLECTION_NAME.fullmatch(p.name) and (p / SHARD_CONFIG).is_file()
        )

    def optimize(self, collection: str) -> bool:
        """Build HNSW indexes and vacuum deletions in this process. Edge never does this by itself.

        The binding holds the GIL throughout (15 s at 20,000 points, 3 min at 100,000), which would freeze
        every thread of a serving process: only `manage.py optimize_vectors` calls it, with the server down.
        A running server optimizes a copy in a child process instead (core/vectorstore/optimizer.py).
        """
        entry = self._entry(collection)
        with self._errors(collection, "optimize"), entry.writing, entry.gate.exclusive():
            return bool(entry.shard.optimize())

    def index_status(self, collection: str) -> tuple[int, int, int]:
        """(points, indexed vectors, segments). Unindexed dense vectors are searched by brute force.

        Indexed vectors count every named vector, sparse ones too (their index is always built), so a fully
        indexed collection shows points × vector names.
        """
        entry = self._entry(collection, used=False)  # asking is not traffic: see idle_seconds
        with self._errors(collection, "read shard info"), entry.reading() as shard:
            info = shard.info()
        return info.points_count, info.indexed_vectors_count, info.segments_count

    def dense_config(self, collection: str) -> dict[str, tuple[int, str]]:
        config = read_shard_config(self.path / _checked_name(collection))
        return config[0] if config else {}

    def collection_bytes(self, collection: str) -> int:
        """The size of the collection's files, holes of sparse files included (what a copy of it writes)."""
        directory = self.path / _checked_name(collection)
        return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())

    def vector_names(self, collection: str) -> tuple[int, int]:
        """How many dense and sparse named vectors each point of `collection` may carry."""
        config = read_shard_config(self.path / _checked_name(collection))
        return (len(config[0]), len(config[1])) if config else (1, 0)

    # -- optimizing a copy (the steps of core/vectorstore/optimizer.py) ---------------------------------------

    def copy_for_optimizing(self, collection: str, target: Path) -> None:
        """Copy the collection's shard to `target` and journal every later update until the swap.

        Writes wait during the copy (so it is consistent: the flusher is held off and Edge has no background
        work); searches go on. A first flush while writes still go on leaves little for the one inside.
        """
        entry = self._entry(collection, used=False)
        with self._errors(collection, "copy the collection"):
            with entry.flushing, entry.reading() as shard:
                shard.flush()
            with entry.writing, entry.flushing, entry.gate.shared():
                entry.shard.flush()
                shutil.copytree(self.path / collection, target)
                entry.start_journal()

    def stop_journal(self, collection: str) -> None:
        """Forget the journal of an optimization that will not be swapped in."""
        with self._open().lock:
            entry = self._open().shards.get(_checked_name(collection))
        if entry is not None:
            with entry.writing:
                entry.journal = None

    def swap_optimized(self, collection: str, optimized: Path) -> int:
        """Put the optimized copy at `optimized` in place of the open shard; returns the updates replayed.

        Reads and writes of this collection wait meanwhile. The old shard is moved aside, not deleted, until the
        copy is loaded and has every update made since the copy: a crash before that puts the old one back when
        the store next opens (finish_interrupted_swap).
        """
        root = self._open()
        name = _checked_name(collection)
        entry = self._entry(collection, used=False)
        directory, replaced = self.path / name, self.path / f".replaced-{name}"
        trash = self.path / f".trash-{name}"
        with self._errors(collection, "swap in the optimized copy"):
            with entry.flushing, entry.reading() as shard:
                shard.flush()  # while writes go on: the flush and close below then have little to write
        with self._errors(collection, "swap in the optimized copy"), entry.writing, entry.flushing:
            if entry.journal is None or entry.closed:
                why = entry.journal_lost or "no copy was taken, or the collection was dropped meanwhile"
                raise VectorStoreError(f"The optimized copy of {name!r} cannot be swapped in: {why}")
            entry.shard.flush()  # while searches still go on
            with entry.gate.exclusive():
                journal, entry.journal = entry.journal, None
                entry.shard.close()
                os.rename(directory, replaced)
                os.rename(optimized, directory)
                try:
                    shard = load_shard(directory)
                    for operation in journal:  # into the copy's write-ahead log: durable without a flush
                        shard.update(operation)
                except BaseException:
                    shutil.rmtree(directory, ignore_errors=True)
                    os.rename(replaced, directory)
                    entry.shard = load_shard(directory)
                    raise
                entry.shard = shard
                os.rename(replaced, trash)
        shutil.rmtree(trash, ignore_errors=True)
        if journal:
            root.written(name)
        return len(journal)

    def idle_seconds(self) -> float:
        """Seconds since the last search or write through any store on this path in this process."""
        return time.monotonic() - _last_used.get(self.path, 0.0)

    # -- writes: each is in the shard's write-ahead log before returning, so it survives a crash of this process;
    # segments are flushed to disk within FLUSH_SECONDS by one background flusher, not by every write (a flush
    # took 17 ms, the largest part of adding a memory). A power loss can cost the last second of vectors, which
    # `resync_mirrors` restores from the database, the source of truth. Qdrant's server makes the same trade.

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.forget_counts(collection)
        if not points:
            return
        self._before_growth()
        edge_points = [qe.Point(p.id, _edge_vectors(p), dict(p.payload)) for p in points]
        entry = self._entry(collection)
        with self._errors(collection, "upsert points"):
            entry.update(qe.UpdateOperation.upsert_points(edge_points))
        self._written(collection)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        self.forget_counts(collection)
        point_ids: list[qe.PointId] = [normalize_id(i) for i in ids]
        if not point_ids:
            return
        entry = self._entry(collection)
        with self._errors(collection, "delete points"):
            entry.update(qe.UpdateOperation.delete_points(point_ids))
        self._written(collection)

    def delete_where(self, collection: str, where: Where) -> None:
        self.forget_counts(collection)
        require_where(where)
        flt = _edge_filter(where)
        assert flt is not None  # require_where refused a where without conditions
        entry = self._entry(collection)
        with self._errors(collection, "delete points"):
            entry.update(qe.UpdateOperation.delete_points_by_filter(flt))
        self._written(collection)

    # -- reads ---------------------------------------------------------------------------------------------

    def search(
        self,
        collection: str,
        *,
        using: str,
        vector: Sequence[float] | SparseVector,
        limit: int,
        where: Where | None = None,
        payload_keys: Sequence[str] | None = None,
    ) -> list[Hit]:
        check_search_args(limit)
        if isinstance(vector, SparseVector):
            if not vector:
                return []  # a query without known terms matches nothing
            query_vector: Any = qe.SparseVector(list(vector.indices), list(vector.values))
        else:
            query_vector = dense_floats(vector)
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query_vector, using=using),
            filter=_edge_filter(where),
            with_payload=payload_selector(payload_keys),
            with_vector=False,
        )
        with self._errors(collection, "search"), self._entry(collection).reading() as shard:
            found = shard.query(request)
        return [Hit(normalize_id(p.id), float(p.score), dict(p.payload or {})) for p in found]

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_vectors: bool = False,
        payload_keys: Sequence[str] | None = None,
    ) -> list[Hit]:
        point_ids = [normalize_id(i) for i in ids]
        if not point_ids:
            return []
        with self._errors(collection, "retrieve points"), self._entry(collection).reading() as shard:
            # The cast: the stubs ask for list[PointId] (invariant) where any list of ids does.
            records = shard.retrieve(
                cast("list[qe.PointId]", point_ids),
                with_payload=payload_selector(payload_keys),
                with_vector=with_vectors,
            )
        found = {}
        for r in records:
            point_id = normalize_id(r.id)
            found[point_id] = Hit(
                point_id, 0.0, dict(r.payload or {}), _dense_of(r.vector) if with_vectors else {}
            )
        return order_hits(point_ids, found)

    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        entry = self._entry(collection)
        found: list[str] = []
        offset = None
        with self._errors(collection, "list points"), entry.reading() as shard:
            while True:
                request = qe.ScrollRequest(
                    offset=offset,
                    limit=1000,
                    filter=_edge_filter(where),
                    with_payload=False,
                    with_vector=False,
                )
                records, offset = shard.scroll(request)
                found.extend(normalize_id(record.id) for record in records)
                if offset is None:
                    return found

    def count(self, collection: str, where: Where | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=_edge_filter(where))
        with self._errors(collection, "count points"), self._entry(collection).reading() as shard:
            return int(shard.count(request))

    # -- lifecycle -----------------------------------------------------------------------------------------

    def ping(self) -> str:
        self._open()
        return f"qdrant-edge {_edge_version()} at {self.path} ({len(self.collections())} collections)"

    def close(self) -> None:
        with self._lock:
            root, self._root = self._root, None
        if root is not None:
            release(root)

    # -- internals -----------------------------------------------------------------------------------------

    def _open(self) -> OpenRoot:
        with self._lock:
            if self._root is None or self._root.pid != os.getpid():
                self._root = acquire(self.path)
            return self._root

    def _shard(self, collection: str) -> qe.EdgeShard:
        """The engine's shard itself, for benchmarks that read its internals."""
        return self._entry(collection).shard

    def _entry(self, collection: str, used: bool = True) -> OpenShard:
        if used:
            _last_used[self.path] = time.monotonic()
        return self._open().shard(_checked_name(collection))

    def _written(self, collection: str) -> None:
        self._open().written(_checked_name(collection))

    def _errors(self, collection: str, action: str) -> AbstractContextManager[None]:
        return _edge_errors(self.path / collection, action)


@contextmanager
def _edge_errors(path: Path, action: str) -> Iterator[None]:
    """Turn qdrant-edge's bare Exceptions into VectorStoreError subclasses; let ours through."""
    try:
        yield
    except (VectorStoreError, ValueError):
        raise
    except Exception as exc:
        raise edge_error(exc, path, action) from exc


# ---------------------------------------------------------------------------------------------------------
# Translation to qdrant-edge types


def _checked_name(collection: str) -> str:
    # Collection names become directory names: refuse anything that could escape the store directory.
    if not _COLLECTION_NAME.fullmatch(collection):
        raise ValueError(f"Invalid collection name {collection!r}: use letters, digits, '_', '-' and '.'")
    return collection


def _edge_config(spec: CollectionSpec) -> qe.EdgeConfig:
    return edge_config(
        {name: (size, spec.distance) for name, size in spec.dense.items()}, dict.fromkeys(spec.sparse, True)
    )


def _dense_of(vectors: Any) -> dict[str, list[float]]:
    """A retrieved record's named dense vectors (sparse ones left out)."""
    if not isinstance(vectors, dict):
        return {}
    return {
        name: [float(value) for value in vector]
        for name, vector in vectors.items()
        if isinstance(vector, list | tuple) and all(isinstance(value, int | float) for value in vector)
    }


def _edge_vectors(point: Point) -> dict[str, Any]:
    vectors: dict[str, Any] = {name: dense_floats(v) for name, v in point.dense.items()}
    for name, sparse in point.sparse.items():
        if sparse:  # an empty sparse vector carries no terms: store none rather than an empty one
            vectors[name] = qe.SparseVector(list(sparse.indices), list(sparse.values))
    return vectors


def _edge_filter(where: Where | None) -> qe.Filter | None:
    conditions = parse_where(where)
    if not conditions:
        return None
    excluded = [c for c in conditions if isinstance(c, NotCondition)]
    return qe.Filter(
        must=[_edge_condition(c) for c in conditions if c not in excluded] or None,
        must_not=[_edge_condition(MatchCondition(c.key, c.value)) for c in excluded] or None,
    )


def _edge_condition(condition: Condition) -> qe.FieldCondition:
    match condition:
        case MatchCondition(key, value):
            if isinstance(value, bool):
                # qdrant-edge-py 0.9 converts a Python bool to an integer (MatchValue(False).value == 0),
                # which never matches a boolean payload. numpy.bool_ is not an int, so it stays a bool (the cast:
                # the stubs know only Python's bool).
                return qe.FieldCondition(key=key, match=qe.MatchValue(cast(bool, np.bool_(value))))
            return qe.FieldCondition(key=key, match=qe.MatchValue(value))
        case AnyCondition(key, values):
            return qe.FieldCondition(key=key, match=qe.MatchAny([*values]))
        case RangeCondition(key, gt, gte, lt, lte):
            return qe.FieldCondition(key=key, range=qe.RangeFloat(gt=gt, gte=gte, lt=lt, lte=lte))
    raise AssertionError(condition)  # pragma: no cover


def _edge_version() -> str:
    try:
        return metadata.version("qdrant-edge-py")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "?"
