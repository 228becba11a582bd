"""The mirror outbox: the one path by which a row reaches its mirror (memory vectors, chunk vectors, the Neo4j graph).

A change to a mirrored row adds an entry (core.models.MirrorOutbox: which mirror, which row) in the transaction
that changes the row, through enqueue(): the services for their bulk writes, the apps' signals for every save and
delete (the admin, querysets, cascades). So the entry commits or rolls back with the row, and no flag on an
instance says who mirrors what.

drain() reads entries in batches, has each mirror's writer re-read the rows and write or delete their points or
nodes, and deletes the entries it finished. It runs

- right after the commit: a mirror registered `inline` (memory vectors: read-your-writes) in the committing
  thread, the others in one background task for the transaction (the in-process pool on the embedded stack, a
  Celery worker in production; core.dispatch), and
- every MNEMO_MIRROR_SWEEP_SECONDS as the sweep (sweep()), which drains whatever a crash, a failed write or a
  restart left, and enqueues rows left pending or failed without an entry (bulk writes made before the outbox).

A writer re-reads the row, so an entry for a row deleted since becomes a delete and several entries for one row are
one write; writing a point twice leaves one point. A crash between the commit and the drain, or between the write
and the entries' deletion, loses nothing (the entries are still there) and doubles nothing (the write is by id).
A drain claims its entries for a lease: another drain leaves every entry of a claimed row alone meanwhile, so two
drains never write one row in the wrong order (an older read landing after a newer one).
"""

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from core.models import MirrorOutbox, MirrorState

logger = logging.getLogger(__name__)

BATCH = 256  # entries claimed and written together
LEASE = timedelta(minutes=10)  # a drain that died gives its entries back after this
SWEEP_ENQUEUE_LIMIT = 5_000  # rows left unsynced without an entry, enqueued per sweep
# Serialises the claims on PostgreSQL (SQLite has one writer anyway): a number of our own for pg_advisory_xact_lock.
CLAIM_LOCK = 0x6D6E656D6F


class MirrorDrainFailed(Exception):
    """A mirror's store refused a write: its entries stay for the retry and the sweep."""


@dataclass(frozen=True)
class Writer:
    kind: str  # the entries' kind, e.g. "memory"
    write: Callable[
        [list[str]], object
    ]  # re-reads these rows by id and writes or deletes them; raises on failure
    unsynced: Callable[
        [], QuerySet
    ]  # rows left pending or failed (the sweep enqueues those without an entry)
    inline: bool = False  # drained in the committing thread, so the caller reads its own write
    enabled: Callable[[], bool] = field(default=lambda: True)  # the graph: only with a Neo4j to mirror to
    needs: str = ""  # a kind written first (a relation's endpoints); while that one fails, this one waits


# In registration order, which is the order a drain writes them in (entities before the relations between them).
_writers: dict[str, Writer] = {}


def register(writer: Writer) -> None:
    _writers[writer.kind] = writer


def writers() -> list[Writer]:
    return list(_writers.values())


def enqueue(kind: str, object_ids: Iterable[object], *, drain_on_commit: bool = True) -> None:
    """Record that these rows of `kind` must be written to their mirror again, in the caller's transaction (or at
    once outside one); after the commit they are drained, unless `drain_on_commit` is False (left for the sweep)."""
    writer = _writers[kind]
    ids = list(dict.fromkeys(str(object_id) for object_id in object_ids))
    if not ids or not writer.enabled():
        return
    MirrorOutbox.objects.bulk_create([MirrorOutbox(kind=kind, object_id=i) for i in ids], batch_size=500)
    if drain_on_commit:
        _drain_on_commit(kind, ids)


class _DrainOnCommit:
    """The rows one transaction enqueued; called once after its commit, it drains them."""

    def __init__(self) -> None:
        self.ids: dict[str, dict[str, None]] = {}  # kind -> ids in first-seen order, each once
        self.ran = False

    def add(self, kind: str, ids: list[str]) -> None:
        self.ids.setdefault(kind, {}).update(dict.fromkeys(ids))

    def __call__(self) -> None:
        from core.dispatch import dispatch

        self.ran = True

        inline = {kind: list(ids) for kind, ids in self.ids.items() if _writers[kind].inline}
        later = [kind for kind in self.ids if kind not in inline]
        if inline:
            try:
                failed = drain(only=inline).failed
            except Exception:
                # The database itself (locked, gone): the caller's write has committed and must not fail now.
                logger.exception("mirror outbox: the drain after a commit failed")
                failed = list(inline)
            later += [kind for kind in failed if kind not in later]  # retried with backoff by the task
        if later:
            dispatch(drain_mirror_outbox, kinds=later)


def _drain_on_commit(kind: str, ids: list[str]) -> None:
    connection = transaction.get_connection()
    if connection.in_atomic_block:
        # run_on_commit holds (savepoint ids, callback, robust) for the callbacks registered so far. One drain per
        # transaction: join the one registered in this block or one enclosing it (a test's captured callbacks
        # stay listed after they ran, and a test's transaction never commits, so only those are joined).
        current = set(connection.savepoint_ids)
        for savepoints, callback, _robust in connection.run_on_commit:
            if isinstance(callback, _DrainOnCommit) and not callback.ran and savepoints <= current:
                callback.add(kind, ids)
                return
    batch = _DrainOnCommit()
    batch.add(kind, ids)
    transaction.on_commit(batch)


@dataclass
class Drained:
    written: int = 0  # rows written or deleted (one per row however many entries it had)
    failed: list[str] = field(default_factory=list)  # kinds whose store refused; their entries stay
    errors: dict[str, str] = field(default_factory=dict)  # why, by kind

    def fail(self, kind: str, error: str) -> None:
        if kind not in self.failed:
            self.failed.append(kind)
        self.errors[kind] = error


def drain(*, only: dict[str, list[str]] | None = None, kinds: Sequence[str] | None = None) -> Drained:
    """Write the rows of the entries there now (of `only`'s rows, or of `kinds`, or all) and delete the entries.

    A mirror that fails is logged and left for the next drain; the others go on."""
    result = Drained()
    if only is not None:
        for kind, ids in only.items():
            for start in range(0, len(ids), BATCH):
                scope = Q(kind=kind, object_id__in=ids[start : start + BATCH])
                _drain_scope(scope, result)
        return result
    _drain_scope(Q(kind__in=kinds) if kinds is not None else Q(), result)
    return result


def _drain_scope(scope: Q, result: Drained) -> None:
    # Entries added while this drain runs are left to the drain their own commit starts, so it ends.
    last = MirrorOutbox.objects.filter(scope).aggregate(last=Max("id"))["last"]
    if last is None:
        return
    scope &= Q(id__lte=last)
    while entries := _claim(scope & ~Q(kind__in=result.failed) if result.failed else scope):
        token = entries[0].claim
        by_kind: dict[str, dict[str, None]] = {}
        for entry in entries:
            by_kind.setdefault(entry.kind, {})[entry.object_id] = None
        done = []
        for kind in [kind for kind in _writers if kind in by_kind]:
            ids = list(by_kind[kind])
            needed = _writers[kind].needs
            if needed in result.errors:
                # Not tried: they show why until the retry (the store is most likely down for them too).
                _writers[kind].unsynced().model.objects.filter(pk__in=ids).update(
                    mirror_state=MirrorState.FAILED, mirror_error=result.errors[needed]
                )
                result.fail(kind, result.errors[needed])
                continue
            try:
                _writers[kind].write(ids)
            except Exception as exc:
                logger.warning("mirror outbox: %d %s rows left for the retry: %s", len(ids), kind, exc)
                result.fail(kind, (str(exc) or exc.__class__.__name__)[:2000])
                continue
            result.written += len(ids)
            done.append(kind)
        finished = MirrorOutbox.objects.filter(claim=token)
        finished.filter(kind__in=done).delete()
        finished.update(claim="", claimed_until=None)  # what failed is free for the next drain at once


def _claim(scope: Q) -> list[MirrorOutbox]:
    """Claim up to BATCH entries in `scope` that no live claim covers, by row: a row another drain is writing
    waits for it."""
    now = timezone.now()
    token = uuid.uuid4().hex
    free = Q(claimed_until=None) | Q(claimed_until__lt=now)
    held = MirrorOutbox.objects.filter(
        kind=OuterRef("kind"), object_id=OuterRef("object_id"), claimed_until__gte=now
    )
    candidates = (
        MirrorOutbox.objects.filter(scope & free).exclude(Exists(held)).order_by("id").values("id")[:BATCH]
    )
    with transaction.atomic():
        connection = transaction.get_connection()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CLAIM_LOCK])
        # `free` again on the update: a row claimed since the candidates were read is not taken twice.
        MirrorOutbox.objects.filter(free, pk__in=candidates).update(claim=token, claimed_until=now + LEASE)
    return list(MirrorOutbox.objects.filter(claim=token).order_by("id"))


def sweep() -> int:
    """The periodic round: enqueue rows left pending or failed without an entry, then drain everything. Returns
    how many rows were written."""
    for writer in writers():
        if writer.enabled():
            enqueue_unsynced(writer)
    result = drain()
    if result.failed:
        logger.warning("mirror sweep: %s left for the next round", ", ".join(result.failed))
    return result.written


def enqueue_unsynced(writer: Writer) -> int:
    """Rows the mirror state calls pending or failed that no entry covers (written in bulk before the outbox
    existed, or marked by hand): give them one, so the drain writes them."""
    unsynced = [str(pk) for pk in writer.unsynced().values_list("pk", flat=True)[:SWEEP_ENQUEUE_LIMIT]]
    covered: set[str] = set()
    for start in range(0, len(unsynced), 500):
        covered.update(
            MirrorOutbox.objects.filter(
                kind=writer.kind, object_id__in=unsynced[start : start + 500]
            ).values_list("object_id", flat=True)
        )
    missing = [pk for pk in unsynced if pk not in covered]
    enqueue(writer.kind, missing, drain_on_commit=False)
    return len(missing)


def waiting() -> int:
    """Entries not drained yet (the health page)."""
    return MirrorOutbox.objects.count()


# --- The tasks (core.tasks names them for the worker) -----------------------------------------------------------


@shared_task(
    name="core.drain_mirror_outbox",
    autoretry_for=(MirrorDrainFailed,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    acks_late=True,
)
def drain_mirror_outbox(kinds: list[str] | None = None) -> int:
    """Write the rows waiting in the mirror outbox (of these mirrors, or all) to their stores; a mirror whose store
    refused is retried with backoff, and the sweep takes what the retries leave (core/mirror_outbox.py)."""
    result = drain(kinds=kinds)
    if result.failed:
        raise MirrorDrainFailed(f"{', '.join(result.failed)}: the store refused the write")
    return result.written


@shared_task(name="core.sweep_mirror_outbox")
def sweep_mirror_outbox() -> int:
    """The periodic round of the mirror outbox: what a crash, a restart or a failed write left (core/mirror_outbox.py)."""
    return sweep()
