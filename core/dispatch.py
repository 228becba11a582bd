"""Run background tasks: on Celery when CELERY_BROKER_URL is set, else on a pool inside this process.

In embedded mode the web process owns the embedded stores (SQLite writer, Qdrant Edge), so its own threads do
the background work. Tasks are ordinary Celery tasks either way; the local pool calls them with `apply()` and
retries failures with exponential backoff itself, because eager Celery retries would spin without delay.
"""

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any

from celery import Task
from django.conf import settings
from django.db import close_old_connections, transaction

from core.outbox import outbox

logger = logging.getLogger(__name__)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_pending: set[Future] = set()
LOCAL_MAX_RETRIES = 6
LOCAL_BACKOFF_SECONDS = 2.0


def uses_celery() -> bool:
    return bool(settings.CELERY_BROKER_URL)


def _local_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=settings.MNEMO_WORKERS, thread_name_prefix="mnemo-worker")
        return _pool


def _run_locally(task: Task, args: tuple, kwargs: dict, attempt: int = 0) -> Any:
    close_old_connections()
    try:
        return task.run(*args, **kwargs)
    except Exception as exc:
        retryable = isinstance(exc, tuple(getattr(task, "autoretry_for", ()) or ()))
        if retryable and attempt < LOCAL_MAX_RETRIES:
            delay = LOCAL_BACKOFF_SECONDS * 2**attempt
            logger.warning("%s failed (%s); retry %d in %.0f s", task.name, exc, attempt + 1, delay)
            timer = threading.Timer(
                delay, lambda: _local_pool().submit(_run_locally, task, args, kwargs, attempt + 1)
            )
            timer.daemon = True
            timer.start()
            return None
        logger.exception("%s failed for good", task.name)
        raise
    finally:
        close_old_connections()


def dispatch(task: Task, *args: Any, **kwargs: Any) -> Future:
    """Start `task` in the background now. The future resolves to the task's result on the local pool, and with
    Celery to its AsyncResult once the broker has it (core/outbox.py: the caller never waits for the broker)."""
    if uses_celery():
        return outbox.put(task, args, kwargs)
    if settings.MNEMO_TASKS_EAGER:
        # Tests: run in the caller's thread, which sees the test transaction's uncommitted rows.
        future: Future = Future()
        try:
            future.set_result(task.run(*args, **kwargs))
        except Exception as exc:  # a background failure never reaches the caller, here neither
            logger.warning("%s failed: %s", task.name, exc)
            future.set_exception(exc)
        return future
    future = _local_pool().submit(_run_locally, task, args, kwargs)
    _pending.add(future)
    future.add_done_callback(_pending.discard)
    return future


# Tests (MNEMO_TASKS_EAGER): the tasks dispatch_later() was asked for, for the test to run when it chooses.
deferred: list[tuple[Task, tuple, dict]] = []


def dispatch_later(task: Task, delay_seconds: float, *args: Any, **kwargs: Any) -> None:
    """Start `task` in `delay_seconds`: a task that must wait its turn gives its worker back meanwhile."""
    if uses_celery():
        outbox.put(task, args, kwargs, {"countdown": delay_seconds})
    elif settings.MNEMO_TASKS_EAGER:
        deferred.append((task, args, kwargs))
    else:
        timer = threading.Timer(delay_seconds, partial(dispatch, task, *args, **kwargs))
        timer.daemon = True
        timer.start()


def dispatch_on_commit(task: Task, *args: Any, **kwargs: Any) -> None:
    """Start `task` once the current transaction commits, so the worker reads the committed row."""
    transaction.on_commit(partial(dispatch, task, *args, **kwargs))


def start_periodic(task: Task, every_seconds: float) -> threading.Event:
    """Run `task` on the local pool every `every_seconds` (embedded mode's stand-in for Celery beat).

    Returns an event that stops the loop when set.
    """
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_seconds):
            try:
                _local_pool().submit(_run_locally, task, (), {}).result()
            except Exception as exc:  # the traceback was logged by _run_locally; the next round tries again
                logger.debug("periodic %s failed: %s", task.name, exc)

    threading.Thread(target=loop, name=f"mnemo-periodic-{task.name}", daemon=True).start()
    return stop


def start_background_work(
    periodic: Sequence[tuple[Task, float]], at_start: Sequence[Callable[[], Any]] = ()
) -> None:
    """In the serving process on embedded defaults: run `at_start` once, then each task at its interval.

    With Celery, `celery -A config beat` runs the periodic tasks (settings.CELERY_BEAT_SCHEDULE) and the workers'
    late acknowledgement redelivers what a killed worker held, so nothing is started here.
    """
    if uses_celery() or settings.MNEMO_TASKS_EAGER:
        return
    for job in at_start:
        try:
            job()
        except Exception:  # start-up goes on; the periodic round tries again
            logger.exception("start-up job %s failed", getattr(job, "__name__", job))
    for task, every_seconds in periodic:
        start_periodic(task, every_seconds)


def worker_description() -> str:
    if uses_celery():
        waiting = f", {outbox.waiting()} task(s) waiting to be sent" if outbox.waiting() else ""
        return f"Celery via {redact_url(settings.CELERY_BROKER_URL)}{waiting}"
    return f"in-process pool ({settings.MNEMO_WORKERS} threads)"


def redact_url(url: str) -> str:
    """The URL without its password, for pages and logs."""
    if "@" not in url:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://…@{rest.rpartition('@')[2]}"


def wait_for_local_tasks(timeout: float = 30.0) -> None:
    """Block until everything queued on the local pool so far has run (the tests wait on it)."""
    wait(list(_pending), timeout=timeout)
