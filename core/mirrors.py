"""Vector mirrors that check themselves against the database, their source of truth.

A deleted or damaged vector store went unnoticed: the health check stayed green, memory search returned nothing
for 1,004 memories still marked synced, and a plain `resync_mirrors` repaired 1 row. Each app registers here the
collection it mirrors and the rows that must have a point in it (marked synced, not archived or unready); then

- compare() counts both and retrieves a sample of those rows' points with their vectors: a point that is missing,
  or whose vectors are not what an embedder writes (core.vectorstore.damage), puts the mirror behind. The health
  check runs it with a small sample on every call.
- check_all(), every MNEMO_MIRROR_CHECK_SECONDS (Celery beat in production), compares every row's id with the
  store's and a larger sample of vectors, logs which mirror is behind and marks the rows whose points are missing
  or damaged pending, for the mirror sweep to write again. A collection whose files cannot be read at all is
  rebuilt the same way: dropped, and every row marked pending.
- `resync_mirrors` checks every point's vectors and repairs what it finds at once (console/management/commands).

Messages name mirrors and counts, never the server's paths.
"""

import json
import logging
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from core import hybrid, mirror_outbox, stores
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import VectorStore, VectorStoreDamaged, VectorStoreError, damage

logger = logging.getLogger(__name__)

HEALTH_SAMPLE = 20
PERIODIC_SAMPLE = 200
BATCH = 256


@dataclass(frozen=True)
class VectorMirror:
    name: str  # "memories", as the health page and the logs say it
    collection: str
    store: Callable[[], VectorStore]  # the store, with the collection created (repairs write to it)
    mirrored_rows: Callable[[], QuerySet]  # the rows whose points must be in the store now
    mark_pending: Callable[[list[str], str], int]  # rows to write again (by the sweep), with the reason
    write: Callable[[list[str]], object]  # rows to write again now (resync_mirrors), by id


_registry: dict[str, VectorMirror] = {}


def register(mirror: VectorMirror) -> None:
    _registry[mirror.name] = mirror


def register_vector_mirror(
    *,
    name: str,
    kind: str,
    collection: str,
    store: Callable[[], VectorStore],
    mirrored_rows: Callable[[], QuerySet],
    unsynced: Callable[[], QuerySet],
    write: Callable[[list[str]], object],
    inline: bool = False,
) -> None:
    """An app's vector mirror, in both places that use it: the mirror outbox, which writes its rows through `write`
    (core.mirror_outbox), and the checks here. Rows the checks find missing or damaged are marked pending and given
    an outbox entry, for the sweep to write again."""
    mirror_outbox.register(mirror_outbox.Writer(kind=kind, write=write, unsynced=unsynced, inline=inline))

    def mark_pending(ids: list[str], reason: str) -> int:
        marked = (
            mirrored_rows()
            .model.objects.filter(pk__in=ids)
            .update(mirror_state=MirrorState.PENDING, mirror_error=reason)
        )
        mirror_outbox.enqueue(kind, ids, drain_on_commit=False)
        return marked

    register(VectorMirror(name, collection, store, mirrored_rows, mark_pending, write))


def registered() -> list[VectorMirror]:
    return list(_registry.values())


# A point written since the store's last count may not be counted yet (VectorStore.COUNT_MAX_AGE).
COUNTED_AFTER = timedelta(seconds=VectorStore.COUNT_MAX_AGE)


def missing_points(store: Callable[[], VectorStore], collection: str, rows: QuerySet, where: dict) -> int:
    """How many of `rows` (one user's mirrored rows) have no point among the `where` points of `collection`, by
    count, 0 when the store cannot say: a search says so instead of silently finding nothing (a store deleted
    under a running server). Rows mirrored within COUNTED_AFTER are not counted; the figure is counted again
    after a write through the store or COUNT_MAX_AGE (VectorStore.cached), since counting the rows walks all of
    the user's (8 ms of each memory search at 10,000 memories)."""

    def count(vectors: VectorStore) -> int:
        expected = rows.filter(mirrored_at__lte=timezone.now() - COUNTED_AFTER).count()
        return max(0, expected - vectors.count_cached(collection, where)) if expected else 0

    try:
        vectors = store()
        key = ("missing points", json.dumps(where, sort_keys=True))
        return vectors.cached(collection, key, lambda: count(vectors))
    except VectorStoreError:
        return 0  # the search reports the store itself as unavailable


@dataclass
class Drift:
    """How a mirror compares with its rows."""

    mirror: str
    rows: int = 0
    points: int = 0
    checked: int = 0  # rows whose points were retrieved
    missing: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)
    error: str = ""  # the store could not be read
    unreadable: bool = False  # its files cannot be read at all (VectorStoreDamaged)
    absent: bool = False  # the store has no such collection (deleted)

    @property
    def behind(self) -> bool:
        return bool(self.error or self.missing or self.damaged or self.points < self.rows)

    def describe(self) -> str:
        if self.error:
            return f"{self.mirror}: the vector store cannot be read ({self.error})"
        counts = f"{self.points:,} points for {self.rows:,} rows"
        if not self.behind:
            return f"{self.mirror}: {counts}"
        found = []
        if self.missing:
            found.append(f"{len(self.missing):,} of {self.checked:,} checked have no point")
        if self.damaged:
            found.append(f"{len(self.damaged):,} of {self.checked:,} checked have damaged vectors")
        return f"{self.mirror} behind: {counts}" + (f", {'; '.join(found)}" if found else "")


def sample_ids(rows: QuerySet, size: int) -> list[str]:
    """About `size` ids of `rows` from a random place in the primary key's order (UUIDs are random, so this is a
    random sample), read through the index instead of sorting the table."""
    start = uuid.UUID(int=random.getrandbits(128))
    ids = list(rows.filter(pk__gte=start).order_by("pk").values_list("pk", flat=True)[:size])
    if len(ids) < size:
        ids += list(rows.filter(pk__lt=start).order_by("pk").values_list("pk", flat=True)[: size - len(ids)])
    return [str(pk) for pk in ids]


def compare(mirror: VectorMirror, ids: Iterable[str] | None = None, *, sample: int = HEALTH_SAMPLE) -> Drift:
    """Count the rows and the points, and check the points of `ids` (by default a random sample of the rows)."""
    rows = mirror.mirrored_rows()
    drift = Drift(mirror.name, rows=rows.count())
    try:
        # The store as it is: checking creates no collection and loads no model (the health check runs this).
        store = stores.vector_store()
        checked = list(ids) if ids is not None else sample_ids(rows, sample)
        drift.checked = len(checked)
        if mirror.collection not in store.collections():
            drift.absent, drift.missing = True, checked
            return drift
        drift.points = store.count(mirror.collection)
        dense = store.dense_config(mirror.collection)
        for start in range(0, len(checked), BATCH):
            batch = checked[start : start + BATCH]
            found = {hit.id: hit for hit in store.retrieve(mirror.collection, batch, with_vectors=True)}
            drift.missing += [point_id for point_id in batch if point_id not in found]
            drift.damaged += [point_id for point_id, hit in found.items() if damage(hit, dense)]
    except VectorStoreError as exc:
        drift.error = without_paths(str(exc) or exc.__class__.__name__)
        drift.unreadable = isinstance(exc, VectorStoreDamaged)
    return drift


def check(mirror: VectorMirror) -> Drift:
    """The periodic check of one mirror: every row's id against the store's, a sample of vectors; what is
    missing or damaged is marked for the sweep to write again, an unreadable collection rebuilt."""
    drift = compare(mirror, sample=PERIODIC_SAMPLE)
    if drift.unreadable:
        return rebuild(mirror, drift)
    if drift.error:
        logger.warning("mirror check: %s", drift.describe())
        return drift
    try:
        if drift.absent:  # deleted: forget the handles onto it, so that it is created again
            hybrid.rebuild_collection(mirror.collection)
        stored = set(mirror.store().ids(mirror.collection))
    except VectorStoreError as exc:
        drift.error = without_paths(str(exc))
        logger.warning("mirror check: %s", drift.describe())
        return drift
    rows = [str(pk) for pk in mirror.mirrored_rows().values_list("pk", flat=True)]
    drift.checked = max(drift.checked, len(rows))
    drift.missing = sorted(set(drift.missing) | {row for row in rows if row not in stored})
    repair = sorted(set(drift.missing) | set(drift.damaged))
    if repair:
        logger.warning(
            "mirror check: %s; %d rows marked for the sweep to write again", drift.describe(), len(repair)
        )
        for start in range(0, len(repair), 1000):
            mirror.mark_pending(
                repair[start : start + 1000], "its point was missing or damaged in the vector store"
            )
    return drift


def rebuild(mirror: VectorMirror, drift: Drift) -> Drift:
    """Drop a collection whose files cannot be read and mark every row it mirrors pending (the sweep, or
    `resync_mirrors`, write them again)."""
    logger.error("mirror check: %s; rebuilding it from the database", drift.describe())
    hybrid.rebuild_collection(mirror.collection)
    mirror.store()  # created again, empty
    rows = [str(pk) for pk in mirror.mirrored_rows().values_list("pk", flat=True)]
    for start in range(0, len(rows), 1000):
        mirror.mark_pending(
            rows[start : start + 1000], "its vector collection was unreadable and was rebuilt"
        )
    return drift


def check_all() -> list[Drift]:
    return [check(mirror) for mirror in registered()]
