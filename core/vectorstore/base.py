"""The vector-store interface the rest of Mnemo talks to, and the pieces both backends share.

The relational database is the source of truth; a vector store only mirrors rows so they can be found
by similarity. Two backends implement this interface: Qdrant Edge in-process (embedded default) and a
Qdrant server through qdrant-client (production). Callers never see either library's types.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------------------------------------------------
# Errors: str(e) is always a message a person can act on, because it ends up on the health page and in
# management-command output.


class VectorStoreError(Exception):
    """Base class for every failure of a vector store."""


class VectorStoreUnavailable(VectorStoreError):
    """The Qdrant server cannot be reached, timed out, or rejected our credentials."""


class VectorStoreLocked(VectorStoreError):
    """The embedded store is held by another process (only one process may open it)."""


class VectorStoreConfigError(VectorStoreError):
    """An existing collection does not match what this configuration expects (e.g. vector sizes)."""


class VectorStoreDamaged(VectorStoreError):
    """A collection's files cannot be read (a damaged segment): only rebuilding it from the database helps."""


# ---------------------------------------------------------------------------------------------------------
# Value types


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel tuples of unique term indices and their weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        # Accept lists too, but store tuples so the value stays hashable and immutable.
        object.__setattr__(self, "indices", tuple(int(i) for i in self.indices))
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        if len(self.indices) != len(self.values):
            raise ValueError(
                f"SparseVector needs as many values as indices (got {len(self.indices)} indices "
                f"and {len(self.values)} values)"
            )
        # The Qdrant server rejects duplicate indices while Qdrant Edge silently accepts them, so
        # enforce the stricter rule here and both backends behave the same.
        if len(set(self.indices)) != len(self.indices):
            raise ValueError("SparseVector indices must be unique; build it with SparseVector.from_pairs()")
        if any(i < 0 for i in self.indices):
            raise ValueError("SparseVector indices must be non-negative")

    @classmethod
    def from_pairs(cls, weights: Mapping[int, float] | Sequence[tuple[int, float]]) -> SparseVector:
        """Build from index→weight pairs, summing the weights of repeated indices."""
        pairs = weights.items() if isinstance(weights, Mapping) else weights
        merged: dict[int, float] = {}
        for index, weight in pairs:
            merged[int(index)] = merged.get(int(index), 0.0) + float(weight)
        ordered = sorted(merged.items())
        return cls(tuple(i for i, _ in ordered), tuple(w for _, w in ordered))

    def __bool__(self) -> bool:
        return bool(self.indices)


@dataclass
class Point:
    """One row mirrored into a collection. `id` is the row's UUID primary key."""

    id: str
    dense: dict[str, Sequence[float]] = field(default_factory=dict)
    sparse: dict[str, SparseVector] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.id = normalize_id(self.id)


@dataclass(frozen=True)
class Hit:
    """A search or retrieve result: the point id, its raw score (0.0 for retrieve) and payload; `dense` holds its
    dense vectors when retrieve() was asked for them."""

    id: str
    score: float
    payload: dict[str, Any]
    dense: dict[str, list[float]] = field(default_factory=dict)


def damage(hit: Hit, dense: Mapping[str, tuple[int, str]]) -> str:
    """What is wrong with a point retrieved with its vectors, in a collection of named dense vectors `dense`
    (name → size, distance: VectorStore.dense_config); "" when nothing: a vector missing, of the wrong size, not
    finite, or (cosine, which stores them normalised) not of unit length, as a segment overwritten with garbage
    leaves them."""
    for name, (size, distance) in dense.items():
        vector = hit.dense.get(name)
        if vector is None:
            return f"its {name} vector is missing"
        if len(vector) != size:
            return f"its {name} vector has {len(vector)} values, not {size}"
        if not all(math.isfinite(value) for value in vector):
            return f"its {name} vector holds values that are not numbers"
        if distance == "cosine" and abs(math.sqrt(sum(v * v for v in vector)) - 1.0) > 1e-3:
            return f"its {name} vector is not normalised"
    return ""


DISTANCES = ("cosine", "dot", "euclid")


@dataclass(frozen=True)
class CollectionSpec:
    """What a collection must hold: named dense vectors with their sizes, named sparse vectors, indexes."""

    name: str
    dense: dict[str, int]
    sparse: tuple[str, ...] = ()
    distance: str = "cosine"
    keyword_fields: tuple[str, ...] = ()
    float_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.distance not in DISTANCES:
            raise VectorStoreConfigError(
                f"Unknown vector distance {self.distance!r} for collection {self.name!r}: "
                f"QDRANT_DISTANCE must be one of {', '.join(DISTANCES)}"
            )
        if not self.dense and not self.sparse:
            raise ValueError(f"Collection {self.name!r} needs at least one dense or sparse vector")
        for vector_name, size in self.dense.items():
            if size < 1:
                raise ValueError(f"Dense vector {vector_name!r} of {self.name!r} needs a positive size")
        if clash := set(self.dense) & set(self.sparse):
            raise ValueError(f"Vector names used both as dense and sparse: {sorted(clash)}")


# A filter: the AND of one condition per key. See parse_where() for the accepted shapes.
Where = dict[str, Any]

# ---------------------------------------------------------------------------------------------------------
# Filters: parsed once here into neutral conditions, then each backend translates them into its own types.


@dataclass(frozen=True)
class MatchCondition:
    key: str
    value: str | int | bool


@dataclass(frozen=True)
class AnyCondition:
    key: str
    values: tuple[str, ...] | tuple[int, ...]


@dataclass(frozen=True)
class RangeCondition:
    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


@dataclass(frozen=True)
class NotCondition:
    """Every point whose `key` is not `value`, points without the key among them."""

    key: str
    value: str | int | bool


Condition = MatchCondition | AnyCondition | RangeCondition | NotCondition
RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
NOT = "not"


def parse_where(where: Where | None) -> list[Condition]:
    """Turn a `Where` dict into conditions, raising ValueError on anything Qdrant cannot express.

    {"user_id": "42"} exact match (str/int/bool); {"memory_type": ["working", "episodic"]} any of;
    {"importance": {"gte": 0.3}} numeric range with gt/gte/lt/lte; {"origin": {"not": "chat"}} anything but
    that value, a point without the key included (a marker only some points carry).
    """
    conditions: list[Condition] = []
    for key, spec in (where or {}).items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"Filter keys must be non-empty strings, got {key!r}")
        conditions.append(_parse_condition(key, spec))
    return conditions


def _parse_condition(key: str, spec: Any) -> Condition:
    if isinstance(spec, bool | int | str):
        return MatchCondition(key, spec)
    if isinstance(spec, list | tuple | set | frozenset):
        values = list(spec)
        # Qdrant's match-any takes strings or integers only (not booleans, not a mix).
        if all(isinstance(v, str) for v in values):
            return AnyCondition(key, tuple(values))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return AnyCondition(key, tuple(values))
        raise ValueError(f"Filter {key!r}: a list must hold only strings or only integers, got {values!r}")
    if isinstance(spec, Mapping) and NOT in spec:
        excluded = spec[NOT]
        if len(spec) != 1 or isinstance(excluded, float) or not isinstance(excluded, bool | int | str):
            raise ValueError(f"Filter {key!r}: 'not' stands alone and takes a string, integer or boolean")
        return NotCondition(key, excluded)
    if isinstance(spec, Mapping):
        unknown = set(spec) - set(RANGE_OPERATORS)
        if unknown or not spec:
            raise ValueError(
                f"Filter {key!r}: unknown operator(s) {sorted(map(str, unknown)) or '(none given)'}; "
                f"use {', '.join(RANGE_OPERATORS)}"
            )
        bounds: dict[str, float] = {}
        for op, bound in spec.items():
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                raise ValueError(f"Filter {key!r}: {op} needs a number, got {bound!r}")
            bounds[op] = float(bound)
        return RangeCondition(key, **bounds)
    if isinstance(spec, float):
        raise ValueError(f"Filter {key!r}: exact match on a float is unsupported; use a range")
    raise ValueError(f"Filter {key!r}: unsupported value {spec!r}")


# ---------------------------------------------------------------------------------------------------------
# Helpers shared by the backends


# str(uuid.UUID(...))'s form. A search reads ~600 ids back from the store, nearly all already in it, and parsing
# each into a UUID and back cost ~3 ms of every search.
CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def payload_selector(payload_keys: Sequence[str] | None) -> bool | list[str]:
    """`with_payload` for both clients: the whole payload (None), only these keys, or none at all (no keys)."""
    if payload_keys is None:
        return True
    return list(payload_keys) or False


def normalize_id(point_id: Any) -> str:
    """Canonical UUID text, so ids compare equal whatever backend returns them."""
    if isinstance(point_id, uuid.UUID):  # Qdrant Edge's ids: formatting one costs a third of parsing its text
        return str(point_id)
    if isinstance(point_id, str) and CANONICAL_UUID.fullmatch(point_id):
        return point_id
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        raise ValueError(f"Point ids must be UUIDs (a Django UUID pk), got {point_id!r}") from None


def dense_floats(vector: Sequence[float]) -> list[float]:
    """A plain list of floats from a list, tuple or numpy array."""
    tolist = getattr(vector, "tolist", None)
    values = tolist() if callable(tolist) else vector
    return [float(v) for v in values]


def config_mismatch(
    collection: str,
    spec: CollectionSpec,
    dense: Mapping[str, tuple[int, str]],
    sparse: Mapping[str, bool],
) -> str | None:
    """Describe how an existing collection differs from `spec`, or None when it is compatible.

    `dense` maps vector name → (size, lower-case distance) and `sparse` maps name → has IDF modifier,
    as read from the existing collection. Extra vectors in the collection are fine; missing or
    different ones are not, because writes or scores would then silently differ from expectations.
    """
    problems = []
    for name, size in spec.dense.items():
        if name not in dense:
            problems.append(f"dense vector {name!r} is missing")
            continue
        have_size, have_distance = dense[name]
        if have_size != size:
            problems.append(f"dense vector {name!r} has size {have_size}, the embedder produces {size}")
        if have_distance != spec.distance:
            problems.append(
                f"dense vector {name!r} uses {have_distance} distance, configured {spec.distance}"
            )
    for name in spec.sparse:
        if name not in sparse:
            problems.append(f"sparse vector {name!r} is missing")
        elif not sparse[name]:
            problems.append(f"sparse vector {name!r} lacks the IDF modifier")
    if not problems:
        return None
    return (
        f"Vector collection {collection!r} does not match the configured embeddings: {'; '.join(problems)}. "
        "Set QDRANT_VECTOR_SIZE / EMBED_MODEL_TYPE (and QDRANT_DISTANCE) back to what the collection was "
        "built with, or rebuild the collections from the database for the new embedders (manage.py resync_mirrors "
        "--rebuild)."
    )


# ---------------------------------------------------------------------------------------------------------
# The interface


class VectorStore(ABC):
    """A set of named collections of points with named dense and sparse vectors and a JSON payload.

    search() takes one signal (one named vector) and returns its raw score, so callers can fuse several
    signals in Python and still show each signal's score to users.
    """

    backend: str  # "qdrant-edge" | "qdrant"

    @abstractmethod
    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection and its payload indexes if needed; idempotent.

        Raises VectorStoreConfigError when an existing collection has other vectors than `spec`.
        """

    @abstractmethod
    def drop_collection(self, collection: str) -> None:
        """Delete a collection and all its points; no-op when it does not exist."""

    @abstractmethod
    def collections(self) -> list[str]:
        """The names of the collections this store holds (without QDRANT_COLLECTION's prefix), sorted."""

    @abstractmethod
    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points by id; the write is durable when this returns."""

    @abstractmethod
    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id; absent ids are ignored."""

    @abstractmethod
    def delete_where(self, collection: str, where: Where) -> None:
        """Delete every point matching `where` (which must not be empty)."""

    @abstractmethod
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
        """Nearest points by one named vector, best first, with raw scores.

        Dense: the distance's raw similarity (cosine/dot; euclid is a distance, ascending). Sparse: the
        dot product with IDF-weighted query terms. `payload_keys` limits the payload returned to those keys
        (fusion reads two of a point's fields, and converting the rest costs on every hit).
        """

    @abstractmethod
    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_vectors: bool = False,
        payload_keys: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Points by id in the order asked, with payload (only `payload_keys` of it when given) and score 0.0
        (and their dense vectors when asked: for checking points against their rows); missing ids are omitted."""

    @abstractmethod
    def dense_config(self, collection: str) -> dict[str, tuple[int, str]]:
        """The collection's named dense vectors as it was built: name → (size, lower-case distance)."""

    @abstractmethod
    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        """Every point id in the collection (matching `where`): for repairing drift against the database."""

    @abstractmethod
    def count(self, collection: str, where: Where | None = None) -> int:
        """Exact number of points, optionally matching `where`."""

    #: How long count_cached() and cached() reuse a value that no write through this store has made stale.
    COUNT_MAX_AGE = 60.0
    _COUNTS_KEPT = 20_000

    def count_cached(self, collection: str, where: Where | None = None) -> int:
        """count(), reused until a write through this store or COUNT_MAX_AGE seconds: for statistics such as
        IDF, where another process's latest writes may show up a minute late. (A filtered count walks the
        filter's index: ~45 ms per query for the IDF of a query's words at 100,000 memories, uncached.)"""
        key = json.dumps(where, sort_keys=True, default=str)
        return self.cached(collection, key, lambda: self.count(collection, where))

    def cached[T](self, collection: str, key: Hashable, compute: Callable[[], T]) -> T:
        """compute(), reused as count_cached() reuses a count: for a figure made from the collection's counts
        and the database's (the mirrors' "points missing" per user), which a write through this store changes.
        A compute() that raises is not remembered."""
        values = self.__dict__.setdefault("_counts", {})
        now = time.monotonic()
        cached = values.get((collection, key))
        if cached is not None and now - cached[0] < self.COUNT_MAX_AGE:
            return cached[1]
        value = compute()
        if len(values) >= self._COUNTS_KEPT:
            values.clear()
        values[(collection, key)] = (now, value)
        return value

    def forget_counts(self, collection: str) -> None:
        """Called by every write: the collection's cached counts are stale."""
        counts = self.__dict__.get("_counts")
        if counts:
            for key in [key for key in list(counts) if key[0] == collection]:
                counts.pop(key, None)

    @abstractmethod
    def ping(self) -> str:
        """A short description of the live backend; raises VectorStoreError if it is not usable."""

    @abstractmethod
    def close(self) -> None:
        """Release connections, files and locks. Safe to call twice."""

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_search_args(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"search limit must be at least 1, got {limit}")


def require_where(where: Where) -> None:
    # An empty filter would match every point: make "delete everything" an explicit drop_collection().
    if not where:
        raise ValueError(
            "delete_where() needs a non-empty filter; use drop_collection() to delete everything"
        )


def order_hits(ids: Sequence[str], found: Mapping[str, Hit]) -> list[Hit]:
    """Hits in the order of `ids`, once each, skipping ids that were not found."""
    seen: set[str] = set()
    ordered = []
    for point_id in ids:
        if point_id in found and point_id not in seen:
            seen.add(point_id)
            ordered.append(found[point_id])
    return ordered
