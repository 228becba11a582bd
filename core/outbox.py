"""Tasks on their way to the Celery broker: handed to one background thread, so no request waits on the broker.

With the broker down, publishing from the request cost an upload 19 s (kombu's connection retries and the result
backend's 20 reconnection attempts), and again every 30 s when the circuit breaker let the next request try. Now
a request puts its task here and answers at once; the sender thread publishes the tasks in order and, while the
broker cannot take them, keeps them and tries again after 1, 2, 4 … up to RETRY_MAX_SECONDS. A task lost with the
process (a crash, or more than LIMIT waiting) is what it was before: the sweeps find its rows (the mirror sweep,
the resume of stalled documents).
"""

import atexit
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any

from celery import Task

logger = logging.getLogger(__name__)

LIMIT = 10_000  # tasks waiting for the broker; past it the oldest are left to the sweeps
RETRY_MAX_SECONDS = 30.0
FLUSH_AT_EXIT_SECONDS = 3.0


class Outbox:
    def __init__(
        self,
        publish: Callable[[Task, tuple, dict, dict], Any],
        *,
        limit: int = LIMIT,
        first_retry_seconds: float = 1.0,
        retry_max_seconds: float = RETRY_MAX_SECONDS,
    ):
        self._publish = publish
        self._limit = limit
        self._first_retry = first_retry_seconds
        self._retry_max = retry_max_seconds
        self._items: deque[tuple[Task, tuple, dict, dict, Future]] = deque()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self.down_since: float | None = None  # monotonic time of the first failure of the current outage
        self.last_error = ""

    def put(self, task: Task, args: tuple, kwargs: dict, options: dict | None = None) -> Future:
        """Queue `task` for the broker (`options` for apply_async, e.g. countdown); the future resolves to its
        AsyncResult once it is published."""
        future: Future = Future()
        with self._changed:
            self._start_sender()
            if len(self._items) >= self._limit:
                dropped = self._items.popleft()
                dropped[-1].cancel()
                logger.warning(
                    "%d tasks wait for the broker: %s left for the sweeps", self._limit, dropped[0].name
                )
            self._items.append((task, args, kwargs, options or {}, future))
            self._changed.notify()
        return future

    def waiting(self) -> int:
        return len(self._items)

    def discard_waiting(self) -> None:
        """Forget the tasks not yet sent (tests that point the app at another broker)."""
        with self._changed:
            for *_, future in self._items:
                future.cancel()
            self._items.clear()
            self._changed.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until every queued task was published (True), or `timeout` passed."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._items:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def _start_sender(self) -> None:
        # A forked process (a Celery prefork child) has the queue but not the thread: it starts its own.
        if self._thread is None or self._pid != os.getpid():
            self._pid = os.getpid()
            self._items.clear()
            self._thread = threading.Thread(
                target=self._send_forever, name="mnemo-broker-outbox", daemon=True
            )
            self._thread.start()

    def _send_forever(self) -> None:
        delay = self._first_retry
        while True:
            with self._changed:
                while not self._items:
                    self._changed.wait()
                task, args, kwargs, options, future = self._items[0]
            try:
                result = self._publish(task, args, kwargs, options)
            except Exception as exc:  # kombu's OperationalError and socket errors alike mean "not sent"
                if self.down_since is None:
                    self.down_since = time.monotonic()
                    logger.warning(
                        "broker unreachable (%s): %d task(s) wait to be sent", exc, len(self._items)
                    )
                self.last_error = str(exc) or exc.__class__.__name__
                time.sleep(delay)  # new tasks join the queue meanwhile
                delay = min(delay * 2, self._retry_max)
                continue
            if self.down_since is not None:
                logger.warning("broker reachable again after %.0f s", time.monotonic() - self.down_since)
                self.down_since, self.last_error = None, ""
            delay = self._first_retry
            with self._changed:
                if self._items and self._items[0][-1] is future:
                    self._items.popleft()
                self._changed.notify_all()
            try:
                future.set_result(result)
            except InvalidStateError:
                # Cancelled while it was being sent (dropped past the limit, or discarded): it was sent all the
                # same, and raising here would end the thread and leave every later task unsent.
                pass


def _publish(task: Task, args: tuple, kwargs: dict, options: dict) -> Any:
    # No publish retries: kombu's default retries in this thread would hold the tasks behind for ~20 s anyway,
    # and the loop above retries with backoff.
    return task.apply_async(args=args, kwargs=kwargs, retry=False, **options)


outbox = Outbox(_publish)


@atexit.register
def _flush_at_exit() -> None:
    # A server stopping normally hands what it queued to the broker if it can, without hanging on one that is down.
    if outbox.waiting() and outbox.down_since is None:
        outbox.flush(FLUSH_AT_EXIT_SECONDS)
