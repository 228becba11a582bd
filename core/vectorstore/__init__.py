"""Vector stores: one interface, two backends (Qdrant Edge embedded, Qdrant server via qdrant-client).

    store = open_vector_store(url=settings.QDRANT_URL, path=settings.QDRANT_EDGE_PATH, ...)
    store.ensure_collection(CollectionSpec("memories", dense={"minilm": 384}, sparse=("lexical",)))
    store.upsert("memories", [Point(id=str(memory.pk), dense={...}, sparse={...}, payload={...})])
    hits = store.search("memories", using="minilm", vector=query_vector, limit=20, where={"user_id": "42"})

Django-free on purpose: settings are passed in by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .base import (
    CollectionSpec,
    Hit,
    Point,
    SparseVector,
    VectorStore,
    VectorStoreConfigError,
    VectorStoreDamaged,
    VectorStoreError,
    VectorStoreLocked,
    VectorStoreUnavailable,
    Where,
    damage,
)

__all__ = [
    "CollectionSpec",
    "Hit",
    "Point",
    "SparseVector",
    "VectorStore",
    "VectorStoreConfigError",
    "VectorStoreDamaged",
    "VectorStoreError",
    "VectorStoreLocked",
    "VectorStoreUnavailable",
    "Where",
    "damage",
    "open_vector_store",
]


def open_vector_store(
    *,
    url: str = "",
    path: str | Path = "",
    api_key: str = "",
    timeout: float = 10.0,
    prefix: str = "",
    before_growth: Callable[[], None] | None = None,
) -> VectorStore:
    """A Qdrant server store when `url` is set (":memory:" for tests), else Qdrant Edge under `path`
    (`before_growth`: see EdgeVectorStore; a server keeps its own disk).

    Neither backend connects or opens files here; the first call does, so constructing one in a process
    that never touches vectors (e.g. `manage.py migrate` beside a running server) cannot fail.
    """
    # Imported lazily so a deployment using only one backend never loads the other's native library.
    if url:
        from .qdrant import QdrantServerStore

        return QdrantServerStore(url, api_key=api_key or None, timeout=timeout, prefix=prefix)
    if not path:
        raise ValueError("open_vector_store() needs QDRANT_URL (a server) or a path for the embedded store")
    from .edge import EdgeVectorStore

    return EdgeVectorStore(path, before_growth=before_growth)
