from celery import shared_task
from django.conf import settings

from core import stores

# The outbox's tasks live beside what they run; imported here so the worker, which reads each app's tasks module,
# knows them.
from core.mirror_outbox import drain_mirror_outbox, sweep_mirror_outbox  # noqa: F401


@shared_task(name="core.ping", ignore_result=False)
def ping(value: str) -> dict:
    """A task with no side effects that says which process ran it: proves the worker path end to end (its
    result is kept, unlike the other tasks', for the caller to read)."""
    import os

    return {"pong": value, "pid": os.getpid()}


@shared_task(name="core.optimize_vectors_when_quiet")
def optimize_vectors_when_quiet() -> str:
    """Embedded store: start optimizing a largely unindexed collection in the background once searches and
    writes have paused (core/vectorstore/optimizer.py). A Qdrant server optimizes by itself."""
    from core.disk import disk_space
    from core.vectorstore.edge import EdgeVectorStore
    from core.vectorstore.optimizer import start_when_due

    store = stores.vector_store()
    if not isinstance(store, EdgeVectorStore):
        return "not embedded"
    started = start_when_due(
        store,
        quiet_seconds=settings.MNEMO_VECTOR_OPTIMIZE_QUIET_SECONDS,
        spare_bytes=disk_space().spare,
    )
    return "started" if started else "nothing to do now"


@shared_task(name="core.refresh_planner_statistics")
def refresh_planner_statistics() -> list[str]:
    """SQLite: ANALYZE the tables whose planner statistics are missing or stale (core/planner_stats.py)."""
    from core.planner_stats import refresh_planner_statistics as refresh

    return refresh()


@shared_task(name="core.check_mirrors")
def check_mirrors() -> list[str]:
    """Compare each vector mirror with its rows; what is missing or damaged is left for the sweeps
    (core/mirrors.py)."""
    from core.mirrors import check_all

    return [drift.describe() for drift in check_all()]
