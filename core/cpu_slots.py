"""CPU slots: at most MNEMO_CPU_SLOTS (the number of cores) threads search or write memories, or search the
knowledge base, at once.

The server runs many threads so that a request waiting on the LLM, an upload or a slow client does not hold
up the others. But a search or an add is CPU work, and much of it holds Python's GIL: with eight threads
computing at once they mostly wait on each other, and a search cost over 90 ms of CPU instead of about 73 (50
clients at 10,000 memories: 17 searches/s with eight at once, 21 with two, measured side by side). A thread
past the slots waits its turn here, without spinning, and the threads doing other work (pages, health, the
LLM) are not held.

Two rules keep the wait from ever deadlocking: a thread that holds a slot takes no second one (a tool or an
agent that searches from inside another slot's work), and a thread inside a database transaction never waits
for one (on SQLite a write transaction holds the one write lock, which the slot holders may be waiting for).
A request whose client left while it waited stops with ClientGone when its turn comes (499), and no request
waits longer than SLOT_WAIT_SECONDS.
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps

from django.conf import settings
from django.db import connections

from core.disconnect import ClientGone, current_client_gone

logger = logging.getLogger(__name__)

# Under load a request waits seconds for its turn. Past this it computes without a slot and a warning says so:
# slots held that long are held by something that does not give them back, and stalling every request behind
# it would be worse than the contention the slots avoid.
SLOT_WAIT_SECONDS = 30.0

_held = threading.local()  # .slots: the semaphore whose slot this thread holds, when it holds one
_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None


def _semaphore() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.MNEMO_CPU_SLOTS)
        return _slots


def _in_transaction() -> bool:
    return any(connection.in_atomic_block for connection in connections.all(initialized_only=True))


def _holding() -> threading.BoundedSemaphore | None:
    return getattr(_held, "slots", None)


def _take(slots: threading.BoundedSemaphore) -> bool:
    """Wait for a slot of `slots`, at most SLOT_WAIT_SECONDS; whether this thread now holds one."""
    if slots.acquire(timeout=SLOT_WAIT_SECONDS):
        _held.slots = slots
        return True
    logger.warning("no CPU slot came free in %.0f s; this request computes without one", SLOT_WAIT_SECONDS)
    return False


@contextmanager
def cpu_slot() -> Iterator[None]:
    """Hold one of the CPU slots for the block (waiting for one if all are taken)."""
    if _holding() is not None or _in_transaction():
        yield
        return
    slots = _semaphore()
    _take(slots)
    try:
        if current_client_gone():  # it left while this request waited its turn: compute nothing for nobody
            raise ClientGone("the client went away while the request waited for a CPU slot")
        yield
    finally:
        if _holding() is slots:  # waiting_elsewhere() may have given it back
            _held.slots = None
            slots.release()


@contextmanager
def waiting_elsewhere() -> Iterator[None]:
    """Give this thread's slot back while it waits on another server (the LLM, a remote embedder, Qdrant or
    Neo4j), and take one again after, unless a transaction has begun meanwhile."""
    slots = _holding()
    if slots is None:
        yield
        return
    _held.slots = None
    slots.release()
    try:
        yield
    finally:
        if not _in_transaction():
            _take(slots)


def uses_cpu[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` in a CPU slot."""

    @wraps(function)
    def in_slot(*args: P.args, **kwargs: P.kwargs) -> R:
        with cpu_slot():
            return function(*args, **kwargs)

    return in_slot
