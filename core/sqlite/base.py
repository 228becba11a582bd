"""Django's SQLite backend, with this process's writers taking SQLite's one write lock in the order they asked.

SQLite lets one writer in at a time and makes the others poll: a waiter sleeps up to 100 ms between tries, while a
thread that has just committed and begins again gets the lock at once. Under concurrent bulk and single adds a
single add lost that race for longer than the busy timeout and failed with "database is locked" although no
transaction was long (bench/concurrent_writes.py). So each writer of this process first queues here, first come
first served, and holds its place from BEGIN to COMMIT or ROLLBACK (or for one statement outside a
transaction); SQLite's own busy timeout still arbitrates with other processes (a management command).
A writer that has waited MNEMO_SQLITE_BUSY_SECONDS gets SQLite's error, as it would from SQLite.

In-memory databases (the tests') have no file to queue on: they use the backend as it is.

A connection also reads SQLite's planner statistics (sqlite_stat1) once, when it opens, and keeps them: an ANALYZE
on another connection does not reach it. Django keeps each thread's connection open (CONN_MAX_AGE=None), so a
server started on a small store planned every request with the statistics of its first minutes, however much the
store grew. core.planner_stats calls `planner_statistics_retaken` after an ANALYZE, and every other connection of
this process is closed at its next request or task boundary (close_if_unusable_or_obsolete, which Django runs
there) and reopens with the new ones.
"""

import re
import threading
from collections import deque

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.sqlite3 import base
from django.db.utils import OperationalError

_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE|ANALYZE|CREATE|DROP|ALTER)\b", re.IGNORECASE)


class FairLock:
    """A lock granted in the order it was asked for: a release hands it to the longest waiter."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._mutex:
            if not self._held and not self._waiters:
                self._held = True
                return True
            turn = threading.Event()
            self._waiters.append(turn)
        if turn.wait(timeout):
            return True
        with self._mutex:
            if turn.is_set():  # handed over just as the wait ran out
                return True
            self._waiters.remove(turn)
            return False

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()  # straight to the next in line: it stays held
            else:
                self._held = False


_queues: dict[str, FairLock] = {}
_queues_lock = threading.Lock()
# Database file -> how many times this process has retaken its planner statistics.
_statistics_taken: dict[str, int] = {}


def write_queue(name: str) -> FairLock:
    with _queues_lock:
        return _queues.setdefault(name, FairLock())


def database_file(connection: BaseDatabaseWrapper) -> str:
    """The key of a connection's database in this module's per-file state."""
    return str(connection.settings_dict["NAME"])


def planner_statistics_retaken(connection: BaseDatabaseWrapper) -> None:
    """ANALYZE has run on `connection`: this process's other connections to its database are stale."""
    with _queues_lock:
        name = database_file(connection)
        _statistics_taken[name] = _statistics_taken.get(name, 0) + 1


class DatabaseWrapper(base.DatabaseWrapper):
    _queue: FairLock | None = None
    _queued = False  # whether this connection holds its place in the queue
    _statistics_read = 0  # the count in _statistics_taken when this connection opened

    _cursor_factory: type = base.SQLiteCursorWrapper

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        if not self.is_in_memory_db():
            self._queue = write_queue(database_file(self))
            self._cursor_factory = _queued_cursor(self)
            self._statistics_read = _statistics_taken.get(database_file(self), 0)
        return connection

    def close_if_unusable_or_obsolete(self):
        # An in-memory database lives only as long as its connection: it keeps the statistics it has.
        taken = _statistics_taken.get(database_file(self), 0)
        stale = not self.is_in_memory_db() and self._statistics_read != taken
        if self.connection is not None and stale and not self.in_atomic_block:
            self.close()  # reopened at its next query, reading the statistics as they are now
            return
        super().close_if_unusable_or_obsolete()

    def take_turn(self) -> None:
        """Wait for this connection's turn to write (nothing when it holds it already)."""
        if self._queue is None or self._queued:
            return
        if not self._queue.acquire(timeout=settings.SQLITE_BUSY_SECONDS):
            raise OperationalError(
                f"database is locked: no turn to write came within {settings.SQLITE_BUSY_SECONDS:g} s "
                "(MNEMO_SQLITE_BUSY_SECONDS)"
            )
        self._queued = True

    def end_turn(self) -> None:
        if self._queued:
            self._queued = False
            assert self._queue is not None
            self._queue.release()

    def _start_transaction_under_autocommit(self):
        self.take_turn()
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # django-stubs omit it
        except BaseException:
            self.end_turn()
            raise

    def _commit(self):
        try:
            return super()._commit()  # type: ignore[misc]  # django-stubs omit it
        finally:
            self.end_turn()

    def _rollback(self):
        try:
            return super()._rollback()  # type: ignore[misc]  # django-stubs omit it
        finally:
            self.end_turn()

    def _close(self):
        try:
            return super()._close()  # type: ignore[misc]  # django-stubs omit it
        finally:
            self.end_turn()

    def create_cursor(self, name=None):
        return self.connection.cursor(factory=self._cursor_factory)


def _queued_cursor(wrapper: DatabaseWrapper) -> type:
    class QueuedCursor(base.SQLiteCursorWrapper):
        """A write outside a transaction takes its turn for its one statement."""

        def execute(self, query, params=None):
            if wrapper._queued or self.connection.in_transaction or not _WRITES.match(query):
                return super().execute(query, params)
            wrapper.take_turn()
            try:
                return super().execute(query, params)
            finally:
                wrapper.end_turn()

        def executemany(self, query, param_list):
            if wrapper._queued or self.connection.in_transaction or not _WRITES.match(query):
                return super().executemany(query, param_list)
            wrapper.take_turn()
            try:
                return super().executemany(query, param_list)
            finally:
                wrapper.end_turn()

    return QueuedCursor
