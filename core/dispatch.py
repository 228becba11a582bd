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
BATCH_SIZE = 500  # items per task started by dispatch_batch_on_commit


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


class _Batch:
    """The items a transaction collected for one task; called once on commit, it starts the task with them."""

    def __init__(self, task: Task):
        self.task = task
        self.items: dict[str, dict[str, None]] = {}  # keyword -> items in first-seen order, each once

    def add(self, items: dict[str, str]) -> None:
        for keyword, item in items.items():
            self.items.setdefault(keyword, {})[item] = None

    def __call__(self) -> None:
        # Several tasks for a big batch keep each broker message small; each one is idempotent anyway.
        lists = {keyword: list(items) for keyword, items in self.items.items()}
        longest = max(map(len, lists.values()), default=0)
        for start in range(0, longest, BATCH_SIZE):
            dispatch(self.task, **{k: v[start : start + BATCH_SIZE] for k, v in lists.items()})


def dispatch_batch_on_commit(task: Task, using: str | None = None, **items: str) -> None:
    """Collect `items` for `task` until the current transaction commits, then start `task` once with each keyword
    bound to the list of its items (each item once). Outside a transaction the task starts at once.

    Deleting a document (or a user) deletes hundreds of rows in one transaction; their mirrors are updated by one
    task and one store call instead of one each. A rolled-back transaction drops its batch with its other
    on-commit callbacks; an item added inside a savepoint that rolls back stays in the batch, which is harmless
    because the task re-reads the rows.
    """
    connection = transaction.get_connection(using)
    if connection.in_atomic_block:
        # run_on_commit holds (savepoint ids, callback, robust) for the callbacks registered so far.
        for _savepoints, callback, _robust in connection.run_on_commit:
            if isinstance(callback, _Batch) and callback.task is task:
                callback.add(items)
                return
    batch = _Batch(task)
    batch.add(items)
    transaction.on_commit(batch, using=using)


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
