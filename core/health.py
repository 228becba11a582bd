"""Which backend serves each concern, and whether it answers. Shared by the Health page and /api/v1/health."""

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection

from core import dispatch, stores


@dataclass(frozen=True)
class Check:
    concern: str
    backend: str
    ok: bool
    detail: str
    elapsed_ms: int

    def as_dict(self) -> dict:
        return asdict(self)


def _timed(concern: str, backend: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = probe(), True
    except Exception as exc:  # a health page reports every failure instead of raising it
        detail, ok = str(exc) or exc.__class__.__name__, False
    return Check(concern, backend, ok, detail, round((time.perf_counter() - started) * 1000))


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    if connection.vendor == "sqlite":
        return f"SQLite at {connection.settings_dict['NAME']}"
    params = connection.settings_dict
    return f"{connection.vendor} {params.get('NAME')} at {params.get('HOST') or 'localhost'}:{params.get('PORT') or 5432}"


def _worker() -> str:
    if not dispatch.uses_celery():
        return dispatch.worker_description()
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=3)
    replies = app.control.ping(timeout=1.0) or []
    if not replies:
        raise RuntimeError("broker reachable at CELERY_BROKER_URL, but no Celery worker answered a ping")
    return f"{dispatch.worker_description()}, {len(replies)} worker(s) answering"


def _llm() -> str:
    if not settings.LLM_BASE_URL:
        return "not configured: chat answers from retrieved memories and passages only"
    from openai import OpenAI

    client = OpenAI(
        base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY or "none", timeout=5, max_retries=0
    )
    try:
        models = [model.id for model in client.models.list()]
    except Exception as exc:
        raise RuntimeError(f"LLM_BASE_URL={settings.LLM_BASE_URL} did not answer: {exc}") from exc
    known = "listed" if settings.LLM_MODEL in models else "not in the provider's model list"
    return f"{settings.LLM_MODEL} at {settings.LLM_BASE_URL} ({known})"


def run_checks() -> list[Check]:
    vector_backend = "qdrant server" if settings.QDRANT_URL else "qdrant-edge (embedded)"
    graph_backend = "neo4j" if settings.NEO4J_URI else "sql"
    database_backend = "postgresql" if connection.vendor == "postgresql" else connection.vendor
    return [
        _timed("database", database_backend, _database),
        _timed("vectors", vector_backend, lambda: stores.vector_store().ping()),
        _timed("graph", graph_backend, lambda: stores.graph_store().ping()),
        _timed("embeddings", settings.EMBED_MODEL_TYPE, lambda: stores.embedding_set().describe()),
        _timed("worker", "celery" if dispatch.uses_celery() else "in-process", _worker),
        _timed("llm", "openai-compatible" if settings.LLM_BASE_URL else "none", _llm),
    ]
