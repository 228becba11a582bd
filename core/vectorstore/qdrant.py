"""Qdrant server backend through qdrant-client (REST).

url=":memory:" runs qdrant-client's local mode, which has the server's API; the tests use it to cover this
code path because no Qdrant server can be installed on the build machines.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import httpx
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from core.breaker import Breaker
from core.cpu_slots import waiting_elsewhere

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
    VectorStoreUnavailable,
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

IN_MEMORY = ":memory:"
_DISTANCES = {"cosine": qm.Distance.COSINE, "dot": qm.Distance.DOT, "euclid": qm.Distance.EUCLID}


class QdrantServerStore(VectorStore):
    """A Qdrant server (or qdrant-client's in-memory mode). Collections are named "<prefix>_<name>"."""

    backend = "qdrant"

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 10.0, prefix: str = "") -> None:
        self.url = url
        self.prefix = prefix
        self._local = url == IN_MEMORY
        # While the server is down calls fail at once; the callers degrade (writes stay pending, search reads
        # the database).
        self.breaker = Breaker()
        if self._local:
            self._client = QdrantClient(location=IN_MEMORY)
        else:
            # check_compatibility would call the server while constructing; ping() reports the version.
            self._client = QdrantClient(
                url=url,
                api_key=api_key or None,
                timeout=math.ceil(timeout),
                check_compatibility=False,
            )

    def name(self, collection: str) -> str:
        """The collection's name on the server (QDRANT_COLLECTION is the prefix)."""
        return f"{self.prefix}_{collection}" if self.prefix else collection

    # -- collections ---------------------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> None:
        name = self.name(spec.name)
        with self._errors(spec.name):
            if not self._client.collection_exists(name):
                try:
                    self._client.create_collection(
                        name,
                        vectors_config={
                            vector: qm.VectorParams(size=size, distance=_DISTANCES[spec.distance])
                            for vector, size in spec.dense.items()
                        },
                        sparse_vectors_config={
                            vector: qm.SparseVectorParams(modifier=qm.Modifier.IDF) for vector in spec.sparse
                        },
                    )
                except (UnexpectedResponse, ValueError):
                    # Another process may have created it in between (409 on a server, ValueError in
                    # local mode); if so, fall through to the compatibility check below.
                    if not self._client.collection_exists(name):
                        raise
            self._check_compatible(spec, name)
            # Local mode ignores payload indexes and warns about each one, so only index on a server.
            if not self._local:
                fields = {f: qm.PayloadSchemaType.KEYWORD for f in spec.keyword_fields}
                fields |= {f: qm.PayloadSchemaType.FLOAT for f in spec.float_fields}
                existing = self._client.get_collection(name).payload_schema or {}
                for field_name, schema in fields.items():
                    if field_name not in existing:
                        self._client.create_payload_index(name, field_name, field_schema=schema, wait=True)

    def dense_config(self, collection: str) -> dict[str, tuple[int, str]]:
        with self._errors(collection):
            return self._dense_config(self.name(collection))

    def _dense_config(self, name: str) -> dict[str, tuple[int, str]]:
        vectors = self._client.get_collection(name).config.params.vectors
        if isinstance(vectors, qm.VectorParams):  # a collection with one unnamed vector
            vectors = {"": vectors}
        return {
            vector: (p.size, _distance_name(p.distance))
            for vector, p in (vectors or {}).items()
            if isinstance(p, qm.VectorParams)
        }

    def _check_compatible(self, spec: CollectionSpec, name: str) -> None:
        params = self._client.get_collection(name).config.params
        dense = self._dense_config(name)
        sparse = {
            vector: p.modifier == qm.Modifier.IDF for vector, p in (params.sparse_vectors or {}).items()
        }
        if problem := config_mismatch(name, spec, dense, sparse):
            raise VectorStoreConfigError(problem)

    def drop_collection(self, collection: str) -> None:
        self.forget_counts(collection)
        with self._errors(collection):
            self._client.delete_collection(self.name(collection))

    def collections(self) -> list[str]:
        start = self.name("")
        with self._errors(""):
            names = [c.name for c in self._client.get_collections().collections]
        return sorted(name.removeprefix(start) for name in names if name.startswith(start))

    # -- writes: wait=True, so the server has applied them when we return ---------------------------------

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.forget_counts(collection)
        if not points:
            return
        structs = [qm.PointStruct(id=p.id, vector=_vectors(p), payload=dict(p.payload)) for p in points]
        with self._errors(collection):
            self._client.upsert(self.name(collection), points=structs, wait=True)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        self.forget_counts(collection)
        point_ids: list[Any] = [normalize_id(i) for i in ids]
        if not point_ids:
            return
        with self._errors(collection):
            self._client.delete(
                self.name(collection), points_selector=qm.PointIdsList(points=point_ids), wait=True
            )

    def delete_where(self, collection: str, where: Where) -> None:
        self.forget_counts(collection)
        require_where(where)
        flt = _filter(where)
        assert flt is not None
        with self._errors(collection):
            self._client.delete(
                self.name(collection), points_selector=qm.FilterSelector(filter=flt), wait=True
            )

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
            query: Any = qm.SparseVector(indices=list(vector.indices), values=list(vector.values))
        else:
            query = dense_floats(vector)
        flt = _filter(where)
        with self._errors(collection):
            response = self._client.query_points(
                self.name(collection),
                query=query,
                using=using,
                query_filter=flt,
                limit=limit,
                with_payload=payload_selector(payload_keys),
                with_vectors=False,
            )
        return [Hit(normalize_id(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_vectors: bool = False,
        payload_keys: Sequence[str] | None = None,
    ) -> list[Hit]:
        point_ids: list[Any] = [normalize_id(i) for i in ids]
        if not point_ids:
            return []
        with self._errors(collection):
            records = self._client.retrieve(
                self.name(collection),
                ids=point_ids,
                with_payload=payload_selector(payload_keys),
                with_vectors=with_vectors,
            )
        found = {
            normalize_id(r.id): Hit(
                normalize_id(r.id),
                0.0,
                dict(r.payload or {}),
                _dense_of(r.vector) if with_vectors else {},
            )
            for r in records
        }
        return order_hits(point_ids, found)

    def ids(self, collection: str, where: Where | None = None) -> list[str]:
        found: list[str] = []
        offset = None
        with self._errors(collection):
            while True:
                records, offset = self._client.scroll(
                    self.name(collection),
                    scroll_filter=_filter(where),
                    limit=1000,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                )
                found.extend(normalize_id(record.id) for record in records)
                if offset is None:
                    return found

    def count(self, collection: str, where: Where | None = None) -> int:
        flt = _filter(where)
        with self._errors(collection):
            return self._client.count(self.name(collection), count_filter=flt, exact=True).count

    # -- lifecycle -----------------------------------------------------------------------------------------

    def ping(self) -> str:
        with self._errors("", probe=True):
            collections = len(self._client.get_collections().collections)
            if self._local:
                return f"qdrant-client in-memory ({collections} collections)"
            version = self._client.info().version
        return f"qdrant {version} at {self.url} ({collections} collections)"

    def close(self) -> None:
        self._client.close()

    # -- errors --------------------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, collection: str, *, probe: bool = False) -> Iterator[None]:
        """Translate qdrant-client and httpx errors into VectorStoreError subclasses with advice; while the
        server is known to be down, fail at once (a probe, the health check, always asks the server)."""
        wait = self.breaker.remaining()
        if wait and not probe:
            raise VectorStoreUnavailable(
                f"The Qdrant server at {self.url} did not answer a moment ago; it is tried again in {wait:.0f} s. "
                "Check QDRANT_URL and that the server is running."
            )
        try:
            # A server's answer is waited for, not computed here: the thread's CPU slot serves another meanwhile.
            with nullcontext() if self._local else waiting_elsewhere():
                yield
            if probe:
                self.breaker.reset()
        except VectorStoreError as exc:
            self._note_outage(exc)
            raise
        except UnexpectedResponse as exc:
            error = self._http_error(collection, exc)
            self._note_outage(error)
            raise error from exc
        except (ResponseHandlingException, httpx.HTTPError) as exc:
            cause = getattr(exc, "source", None) or exc
            self.breaker.trip()
            raise VectorStoreUnavailable(
                f"Cannot reach the Qdrant server at {self.url} ({type(cause).__name__}: {cause}). "
                "Check QDRANT_URL and that the server is running."
            ) from exc
        except ValueError as exc:
            # Local mode reports a missing collection or a bad vector as ValueError.
            if "not found" in str(exc):
                raise self._missing(collection) from exc
            raise VectorStoreError(
                f"Qdrant rejected the request for collection {self.name(collection)!r}: {exc}"
            ) from exc

    def _note_outage(self, error: VectorStoreError) -> None:
        if isinstance(error, VectorStoreUnavailable) and not self._local:
            self.breaker.trip()

    def _missing(self, collection: str) -> VectorStoreError:
        where = "in memory" if self._local else f"on the Qdrant server at {self.url}"
        return VectorStoreError(
            f"Vector collection {self.name(collection)!r} does not exist {where}; "
            "ensure_collection() must create it first"
        )

    def _http_error(self, collection: str, exc: UnexpectedResponse) -> VectorStoreError:
        status = exc.status_code or 0
        detail = _response_detail(exc)
        if status in (401, 403):
            return VectorStoreUnavailable(
                f"The Qdrant server at {self.url} refused access (HTTP {status}): check QDRANT_API_KEY "
                "(and QDRANT_URL)."
            )
        if status == 404:
            return self._missing(collection)
        if status in (408, 429) or status >= 500:
            return VectorStoreUnavailable(
                f"The Qdrant server at {self.url} failed (HTTP {status}: {detail}). "
                "Check QDRANT_URL and the server's health."
            )
        return VectorStoreError(
            f"Qdrant rejected the request for collection {self.name(collection)!r} (HTTP {status}): {detail}"
        )


def _response_detail(exc: UnexpectedResponse) -> str:
    try:
        return str(exc.structured().get("status", {}).get("error") or exc.reason_phrase)
    except Exception:  # the body is not JSON (a proxy's HTML error page, say)
        return exc.reason_phrase or "no details"


def _distance_name(distance: qm.Distance) -> str:
    return str(getattr(distance, "value", distance)).lower()


def _vectors(point: Point) -> dict[str, Any]:
    vectors: dict[str, Any] = {name: dense_floats(v) for name, v in point.dense.items()}
    for name, sparse in point.sparse.items():
        if sparse:  # store no sparse vector rather than an empty one, as the Edge backend does
            vectors[name] = qm.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
    return vectors


def _filter(where: Where | None) -> qm.Filter | None:
    conditions = parse_where(where)
    if not conditions:
        return None
    excluded = [c for c in conditions if isinstance(c, NotCondition)]
    return qm.Filter(
        must=[_condition(c) for c in conditions if c not in excluded] or None,
        must_not=[_condition(MatchCondition(c.key, c.value)) for c in excluded] or None,
    )


def _condition(condition: Condition) -> qm.FieldCondition:
    match condition:
        case MatchCondition(key, value):
            return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))
        case AnyCondition(key, values):
            return qm.FieldCondition(key=key, match=qm.MatchAny(any=[*values]))
        case RangeCondition(key, gt, gte, lt, lte):
            return qm.FieldCondition(key=key, range=qm.Range(gt=gt, gte=gte, lt=lt, lte=lte))
    raise AssertionError(condition)  # pragma: no cover


def _dense_of(vectors: Any) -> dict[str, list[float]]:
    """A retrieved record's named dense vectors (sparse and multi-vectors left out)."""
    if not isinstance(vectors, dict):
        return {}
    return {
        name: [float(value) for value in vector]
        for name, vector in vectors.items()
        if isinstance(vector, list) and all(isinstance(value, int | float) for value in vector)
    }
