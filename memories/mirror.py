"""The vector mirror of memories: a pure function of the row, written and deleted by primary key.

Only active memories are mirrored; an archived or deleted memory has no point. Running a sync twice leaves one
point with the same payload, so every path (the service right after commit, the signal's background task,
`resync_mirrors`) may sync the same rows without harm.
"""

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from core import hybrid, stores
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import Point, VectorStore, VectorStoreError
from memories.models import CHAT_ORIGIN, Memory

logger = logging.getLogger(__name__)

COLLECTION = "memories"
# Far-future expiry for memories without a TTL, so one range filter covers every type.
NEVER_EXPIRES = 4_102_444_800.0  # 2100-01-01
ORIGIN = "origin"  # payload: CHAT_ORIGIN on the working-memory copies of chat messages, absent on the others


KEYWORD_FIELDS = ("user_id", "memory_type", "session_id", ORIGIN, "tags")
FLOAT_FIELDS = ("importance", "created_ts", "expires_ts")


def memory_store() -> VectorStore:
    """The vector store with the memories collection created."""
    return hybrid.collection_store(COLLECTION, keyword_fields=KEYWORD_FIELDS, float_fields=FLOAT_FIELDS)


def mirrored_rows():
    """The memories whose points must be in the store now: mirrored (synced) and not archived."""
    return Memory.objects.filter(archived_at=None, mirror_state=MirrorState.SYNCED)


def mark_pending(memory_ids: list[str], reason: str) -> int:
    """Leave memories for the mirror sweep to write again."""
    return Memory.objects.filter(pk__in=memory_ids).update(
        mirror_state=MirrorState.PENDING, mirror_error=reason
    )


def register() -> None:
    """Let the mirror checks (core.mirrors: health, the periodic check, resync_mirrors) compare this mirror."""
    from core import mirrors

    mirrors.register(
        mirrors.VectorMirror(
            name="memories",
            collection=COLLECTION,
            store=memory_store,
            mirrored_rows=mirrored_rows,
            mark_pending=mark_pending,
            write=sync_memories,
        )
    )


# A point written since the store's last count may not be counted yet (VectorStore.COUNT_MAX_AGE).
COUNTED_AFTER = timedelta(seconds=VectorStore.COUNT_MAX_AGE)


def missing_points(user) -> int:
    """How many of `user`'s mirrored memories have no point in the store, by count (0 when it cannot say): a
    search tells the user instead of silently finding nothing (a store deleted under a running server)."""
    expected = mirrored_rows().filter(user=user, mirrored_at__lte=timezone.now() - COUNTED_AFTER).count()
    if not expected:
        return 0
    try:
        points = memory_store().count_cached(COLLECTION, {"user_id": str(user.pk)})
    except VectorStoreError:
        return 0  # the search reports the store itself as unavailable
    return max(0, expected - points)


def timestamp(moment: datetime | None) -> float:
    return moment.timestamp() if moment else NEVER_EXPIRES


def payload(memory: Memory) -> dict:
    point = {
        "user_id": str(memory.user_id),
        "memory_type": memory.memory_type,
        "session_id": str(memory.session_id or ""),
        "importance": float(memory.importance),
        "created_ts": memory.created_at.timestamp(),
        "expires_ts": timestamp(memory.expires_at),
        # A search filtered by tag matches a point whose list holds it (memories.retrieval.build_where).
        "tags": [tag for tag in memory.tags if isinstance(tag, str)] if isinstance(memory.tags, list) else [],
    }
    # Only chat copies carry the marker, so a search leaves them out with a "not" filter that every point
    # mirrored before the marker existed passes.
    if memory.is_chat_copy:
        point[ORIGIN] = CHAT_ORIGIN
    return point


def is_mirrored(memory: Memory) -> bool:
    return memory.archived_at is None


def sync_memories(memory_ids: Sequence[str]) -> int:
    """Upsert the active memories among `memory_ids` and delete the points of the others; returns upserts.

    On a vector-store failure the rows are marked failed with the reason and the error is raised, so a caller
    that can retry (the background task) does.
    """
    ids = [str(memory_id) for memory_id in memory_ids]
    if not ids:
        return 0
    memories = [m for m in Memory.objects.filter(pk__in=ids) if is_mirrored(m)]
    live_ids = {str(m.pk) for m in memories}
    started = timezone.now()
    try:
        store = memory_store()
        gone = [memory_id for memory_id in ids if memory_id not in live_ids]
        if gone:
            store.delete(COLLECTION, gone)
        if memories:
            store.upsert(COLLECTION, list(_points(memories)))
    except Exception as exc:
        message = without_paths(str(exc) or exc.__class__.__name__)  # shown on the memory's page
        Memory.objects.filter(pk__in=live_ids).update(
            mirror_state=MirrorState.FAILED, mirror_error=message[:2000]
        )
        raise
    # Rows edited while we embedded keep their pending state: the task their edit enqueued syncs them again.
    Memory.objects.filter(pk__in=live_ids, updated_at__lte=started).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )
    return len(memories)


def _points(memories: list[Memory]) -> list[Point]:
    vectors = stores.embedding_set().embed_documents([m.content for m in memories])
    return hybrid.points([(str(m.pk), m.content, payload(m)) for m in memories], vectors)


def try_sync_memories(memory_ids: Sequence[str]) -> bool:
    """Sync now for read-your-writes; on failure leave the rows pending/failed for the background retry."""
    try:
        sync_memories(memory_ids)
    except VectorStoreError as exc:
        logger.warning("vector mirror unavailable, %d memories left for retry: %s", len(memory_ids), exc)
        return False
    except Exception:
        logger.exception("vector mirror failed for %d memories", len(memory_ids))
        return False
    return True


def save_mirrored(memory: Memory, **kwargs: Any) -> None:
    """Save a memory that the write mirrors itself right after the commit (read-your-writes), so the save
    signal does not queue a second mirror task that would embed and write the same vector again."""
    memory.mirrored_by_service = True
    try:
        memory.save(**kwargs)
    finally:
        del memory.mirrored_by_service


def mirror_on_commit(memory_ids: Iterable[UUID | str]) -> None:
    """Mirror these memories right after the transaction commits, inside the caller's request (read-your-writes);
    if the store is down they stay marked for the sweep."""
    ids = [str(memory_id) for memory_id in memory_ids]
    if ids:
        transaction.on_commit(lambda: try_sync_memories(ids))
