"""Which backend serves each concern, and whether it answers. Shared by the Health page and /api/v1/health.

The checks run side by side in a small thread pool and the report waits at most BUDGET_SECONDS for them, so health
answers within 2 s whatever is down or hanging: a check still waiting is reported as not answering. Each probe
keeps its own timeouts, so a thread left behind ends on its own.
"""

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection, connections
from django.utils.translation import gettext_lazy

from core import disk, dispatch, mirrors, stores

# The concerns' names on the Health page; the API and the page's data-concern keep the English key.
CONCERNS = {
    "database": gettext_lazy("database"),
    "disk": gettext_lazy("disk"),
    "vectors": gettext_lazy("vectors"),
    "mirrors": gettext_lazy("mirrors"),
    "graph": gettext_lazy("graph"),
    "embeddings": gettext_lazy("embeddings"),
    "worker": gettext_lazy("worker"),
    "llm": gettext_lazy("LLM"),
}
PROBLEMS = {"disk": gettext_lazy("low on space"), "mirrors": gettext_lazy("behind")}


@dataclass(frozen=True)
class Check:
    concern: str
    backend: str
    ok: bool
    detail: str
    elapsed_ms: int

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def label(self) -> str:
        """The concern's name in the page's language."""
        return str(CONCERNS.get(self.concern, self.concern))

    @property
    def problem(self) -> str:
        """What a failed check means, in a word or two for the health page."""
        return str(PROBLEMS.get(self.concern, gettext_lazy("unreachable")))


BUDGET_SECONDS = 1.5
_checkers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="health")


def _timed(concern: str, backend: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = probe(), True
    except Exception as exc:  # a health page reports every failure instead of raising it
        detail, ok = str(exc) or exc.__class__.__name__, False
    finally:
        connections.close_all()  # this pool thread's own connections; the request's are another thread's
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
    # The project's Celery app (config/celery.py, loaded with Django) is the current one: core imports no layer above.
    from celery import current_app as app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=3)
    replies = app.control.ping(timeout=1.0) or []
    if not replies:
        raise RuntimeError("broker reachable at CELERY_BROKER_URL, but no Celery worker answered a ping")
    return f"{dispatch.worker_description()}, {len(replies)} worker(s) answering"


def _disk() -> str:
    space = disk.disk_space()
    if not space.ok:
        raise RuntimeError(f"{space.describe()}: uploads and memory writes are refused, ingestion pauses")
    return space.describe()


def _mirrors() -> str:
    drifts = [mirrors.compare(mirror) for mirror in mirrors.registered()]
    report = "; ".join(drift.describe() for drift in drifts)
    if any(drift.behind for drift in drifts):
        raise RuntimeError(
            f"{report}. The periodic check has the sweeps write them again; `resync_mirrors` does it now"
        )
    return report


def _llm() -> str:
    if not settings.LLM_BASE_URL:
        return "not configured: chat answers from retrieved memories and passages only"
    import httpx  # the OpenAI SDK would cost the first check a second of imports

    try:
        response = httpx.get(
            settings.LLM_BASE_URL.rstrip("/") + "/models",
            headers={"Authorization": f"Bearer {settings.LLM_API_KEY or 'none'}"},
            timeout=BUDGET_SECONDS,
        )
        response.raise_for_status()
        models = [model.get("id") for model in response.json().get("data", [])]
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise RuntimeError(f"LLM_BASE_URL={settings.LLM_BASE_URL} did not answer: {exc}") from exc
    known = "listed" if settings.LLM_MODEL in models else "not in the provider's model list"
    return f"{settings.LLM_MODEL} at {settings.LLM_BASE_URL} ({known})"


def run_checks() -> list[Check]:
    vector_backend = "qdrant server" if settings.QDRANT_URL else "qdrant-edge (embedded)"
    graph_backend = "neo4j" if settings.NEO4J_URI else "sql"
    database_backend = "postgresql" if connection.vendor == "postgresql" else connection.vendor
    probes = [
        ("database", database_backend, _database),
        ("disk", "data folder", _disk),
        ("vectors", vector_backend, lambda: stores.vector_store().ping()),
        ("mirrors", "vectors vs database", _mirrors),
        ("graph", graph_backend, lambda: stores.graph_store().ping()),
        ("embeddings", settings.EMBED_MODEL_TYPE, lambda: stores.embedding_set().describe()),
        ("worker", "celery" if dispatch.uses_celery() else "in-process", _worker),
        ("llm", "openai-compatible" if settings.LLM_BASE_URL else "none", _llm),
    ]
    started = time.monotonic()
    running = [
        (concern, backend, _checkers.submit(_timed, concern, backend, probe))
        for concern, backend, probe in probes
    ]
    checks = []
    for concern, backend, future in running:
        try:
            checks.append(future.result(timeout=max(0.0, started + BUDGET_SECONDS - time.monotonic())))
        except FutureTimeout:
            waited = round((time.monotonic() - started) * 1000)
            checks.append(Check(concern, backend, False, f"no answer within {BUDGET_SECONDS:g} s", waited))
    return checks
