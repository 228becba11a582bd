"""The process-wide handles on the configured backends, opened on first use.

Opening lazily matters in embedded mode: the embedded vector store allows one opener, and only the process that
serves requests (or runs the worker pool) should take it, not every management command that imports settings.
"""

import logging
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from django.conf import settings

from core.breaker import Breaker

if TYPE_CHECKING:  # the backends import heavy libraries: load them on first use, not at start-up
    from core.embeddings import EmbeddingSet
    from core.graphstore import GraphStore
    from core.vectorstore import VectorStore

logger = logging.getLogger(__name__)
_lock = threading.Lock()

# While the graph server is down, reads go to the SQL graph (the Entity/Relation tables it mirrors).
graph_breaker = Breaker()
GRAPH_FALLBACK_NOTICE = "The graph server is unreachable; graph links come from the database meanwhile."


def vector_store() -> "VectorStore":
    with _lock:
        return _vector_store()


@cache
def _vector_store() -> "VectorStore":
    from core.disk import require_vector_room
    from core.vectorstore import open_vector_store

    return open_vector_store(
        url=settings.QDRANT_URL,
        path=settings.QDRANT_EDGE_PATH,
        api_key=settings.QDRANT_API_KEY,
        timeout=settings.QDRANT_TIMEOUT,
        prefix=settings.QDRANT_COLLECTION,
        before_growth=require_vector_room,
    )


@cache
def graph_store() -> "GraphStore":
    if settings.NEO4J_URI:
        from core.graphstore.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(
            settings.NEO4J_URI, settings.NEO4J_USERNAME, settings.NEO4J_PASSWORD, settings.NEO4J_DATABASE
        )
    from core.graphstore.sql import SqlGraphStore

    return SqlGraphStore()


def read_graph[T](read: Callable[["GraphStore"], T]) -> tuple[T, str]:
    """`read` on the configured graph store, or on the SQL graph while that store is unreachable; and a notice
    for the user when the fallback answered."""
    from core.graphstore.base import GraphStoreUnavailable
    from core.graphstore.sql import SqlGraphStore

    primary = graph_store()
    if isinstance(primary, SqlGraphStore):
        return read(primary), ""
    if not graph_breaker.remaining():
        try:
            return read(primary), ""
        except GraphStoreUnavailable as exc:
            logger.warning("graph reads fall back to SQL for %.0f s: %s", graph_breaker.seconds, exc)
            graph_breaker.trip()
    return read(SqlGraphStore()), GRAPH_FALLBACK_NOTICE


@cache
def embedding_set() -> "EmbeddingSet":
    from core.embeddings import build_embedding_set

    return build_embedding_set(
        settings.EMBED_MODEL_TYPE,
        model_name=settings.EMBED_MODEL_NAME,
        api_key=settings.EMBED_API_KEY,
        base_url=settings.EMBED_BASE_URL,
    )


def reset(*, embeddings: bool = True) -> None:
    """Close and forget the handles (tests that switch settings); models are costly to reload."""
    with _lock:
        graph_breaker.reset()
        for opener in (_vector_store, graph_store):
            if opener.cache_info().currsize:
                opener().close()
            opener.cache_clear()
        if embeddings:
            embedding_set.cache_clear()
