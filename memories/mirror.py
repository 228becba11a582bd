"""The vector mirror of memories: a pure function of the row, written and deleted by primary key.

Only active memories are mirrored; an archived or deleted memory has no point. Running a sync twice leaves one
point with the same payload, so every path (the service right after commit, the signal's background task,
`resync_mirrors`) may sync the same rows without harm.
"""

import logging
from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from core import hybrid, stores
from core.models import MirrorState
from core.vectorstore import Point, VectorStoreError
from memories.models import CHAT_ORIGIN, Memory

logger = logging.getLogger(__name__)

COLLECTION = "memories"
# Far-future expiry for memories without a TTL, so one range filter covers every type.
NEVER_EXPIRES = 4_102_444_800.0  # 2100-01-01
ORIGIN = "origin"  # payload: CHAT_ORIGIN on the working-memory copies of chat messages, absent on the others


def memory_store():
    """The vector store with the memories collection created."""
    return stores.collection_store(
        COLLECTION,
        keyword_fields=("user_id", "memory_type", "session_id", ORIGIN, "tags"),
        float_fields=("importance", "created_ts", "expires_ts"),
    )


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
        message = str(exc) or exc.__class__.__name__
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
