"""One open Qdrant Edge shard and what guards it, for core/vectorstore/edge.py.

Reads and writes share the shard; the swap of an optimized copy (core/vectorstore/optimizer.py) needs it alone
for a moment, and the copy before it needs the writes to pause while searches go on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import qdrant_edge as qe

from .base import VectorStoreError

# The swap replays the journal while searches and writes wait (a few ms per update): past this many updates the
# pass is abandoned instead, to be tried again once writes pause.
JOURNAL_LIMIT = 1_000


class Gate:
    """Many users of a shard at once, or one exclusive holder (the swap of an optimized copy).

    A waiting exclusive holder keeps new users out, so a steady stream of searches cannot starve the swap.
    Not reentrant: a store method takes it once, around the engine call.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._users = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._exclusive and not self._waiting)
            self._users += 1
        try:
            yield
        finally:
            with self._changed:
                self._users -= 1
                self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._changed:
            self._waiting += 1
            self._changed.wait_for(lambda: not self._exclusive and not self._users)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._changed:
                self._exclusive = False
                self._changed.notify_all()


class OpenShard:
    """One open shard and what guards it: reads and writes hold `gate` shared, writes also `writing`, the
    background flusher `flushing` (a flush can take seconds on a busy disk: writes must not wait for it).

    While an optimized copy is being built, `journal` records every update made since the copy was taken, in
    order, so the swap can replay them onto the copy: nothing written meanwhile is lost, nothing deleted returns.
    """

    def __init__(self, shard: qe.EdgeShard) -> None:
        self.shard = shard
        self.gate = Gate()
        self.writing = threading.Lock()
        self.flushing = threading.Lock()
        self.journal: list[qe.UpdateOperation] | None = None
        self.journal_lost = ""  # why a journal was dropped before its swap
        self.closed = False

    def start_journal(self) -> None:
        self.journal, self.journal_lost = [], ""

    def update(self, operation: qe.UpdateOperation) -> None:
        with self.writing, self.gate.shared():
            self._check_open()
            self.shard.update(operation)
            if self.journal is None:
                return
            if len(self.journal) >= JOURNAL_LIMIT:
                self.journal, self.journal_lost = (
                    None,
                    f"more than {JOURNAL_LIMIT:,} updates arrived meanwhile",
                )
            else:
                self.journal.append(operation)

    @contextmanager
    def reading(self) -> Iterator[qe.EdgeShard]:
        with self.gate.shared():
            self._check_open()
            yield self.shard

    def _check_open(self) -> None:
        if self.closed:
            raise VectorStoreError("The vector collection was dropped while this call waited for it")
