"""The process-wide handles on the configured backends, opened on first use.

Opening lazily matters in embedded mode: the embedded vector store allows one opener, and only the process that
serves requests (or runs the worker pool) should take it, not every management command that imports settings.
"""

import threading
from functools import cache
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:  # the backends import heavy libraries: load them on first use, not at start-up
    from core.embeddings import EmbeddingSet
    from core.graph import GraphStore
    from core.vectorstore import VectorStore

_lock = threading.Lock()


def vector_store() -> "VectorStore":
    with _lock:
        return _vector_store()


@cache
def _vector_store() -> "VectorStore":
    from core.vectorstore import open_vector_store

    return open_vector_store(
        url=settings.QDRANT_URL,
        path=settings.QDRANT_EDGE_PATH,
        api_key=settings.QDRANT_API_KEY,
        timeout=settings.QDRANT_TIMEOUT,
        prefix=settings.QDRANT_COLLECTION,
    )


@cache
def graph_store() -> "GraphStore":
    if settings.NEO4J_URI:
        from core.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(
            settings.NEO4J_URI, settings.NEO4J_USERNAME, settings.NEO4J_PASSWORD, settings.NEO4J_DATABASE
        )
    from core.graph.sql import SqlGraphStore

    return SqlGraphStore()


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
    """Close and forget the handles (tests that switch settings, and shutdown); models are costly to reload."""
    with _lock:
        for opener in (_vector_store, graph_store):
            if opener.cache_info().currsize:
                opener().close()
            opener.cache_clear()
        if embeddings:
            embedding_set.cache_clear()
