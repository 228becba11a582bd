"""The vector mirror of memories: a pure function of the row, written and deleted by primary key.

Only active memories are mirrored; an archived or deleted memory has no point. A change reaches the store through
the mirror outbox (core.mirror_outbox): a save or delete by any path adds an entry in its transaction
(memories.signals), a bulk write calls enqueue() itself, and the drain right after the commit writes the memories in
the committing thread, so a memory is searchable as soon as the call that wrote it returns (read-your-writes).
Running a sync twice leaves one point with the same payload, so the drain, the sweep and `resync_mirrors` may sync
the same rows without harm.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime
from uuid import UUID

from django.utils import timezone

from core import hybrid, mirror_outbox, mirrors, stores
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import Point, VectorStore
from memories.models import CHAT_ORIGIN, Memory

COLLECTION = "memories"
KIND = "memory"  # its entries in the mirror outbox
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


def register() -> None:
    """The mirror outbox drains memories through sync_memories, in the committing thread; the mirror checks
    (core.mirrors: health, the periodic check, resync_mirrors) compare the collection with mirrored_rows."""
    mirrors.register_vector_mirror(
        name="memories",
        kind=KIND,
        collection=COLLECTION,
        store=memory_store,
        mirrored_rows=mirrored_rows,
        unsynced=lambda: Memory.objects.exclude(mirror_state=MirrorState.SYNCED),
        write=sync_memories,
        inline=True,
    )


def enqueue(memory_ids: Iterable[UUID | str]) -> None:
    """Mirror these memories once the caller's transaction commits: for writes that send no save signal
    (bulk_create, bulk_update); a save() or delete() enqueues its row itself (memories.signals)."""
    mirror_outbox.enqueue(KIND, memory_ids)


def save_unmirrored(memory: Memory, fields: list[str]) -> None:
    """Save fields the vector payload does not hold (a repeat's count, a superseded fact's end): an update, which
    sends no save signal, so the memory is not embedded and written again for nothing."""
    memory.updated_at = timezone.now()
    values = {name: getattr(memory, name) for name in fields}
    Memory.objects.filter(pk=memory.pk).update(**values, updated_at=memory.updated_at)


def missing_points(user) -> int:
    """How many of `user`'s mirrored memories have no point in the store (core.mirrors.missing_points)."""
    rows = mirrored_rows().filter(user=user)
    return mirrors.missing_points(memory_store, COLLECTION, rows, {"user_id": str(user.pk)})


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
    that can retry (the outbox drain) does.
    """
    ids = [str(memory_id) for memory_id in memory_ids]
    if not ids:
        return 0
    rows = list(Memory.objects.filter(pk__in=ids))
    memories = [m for m in rows if is_mirrored(m)]
    live_ids = {str(m.pk) for m in memories}
    archived_ids = {str(m.pk) for m in rows if not is_mirrored(m)}
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
    # Rows edited while we embedded keep their pending state: the entry their edit added syncs them again. An
    # archived row is synced too once its point is gone, so the sweep does not take it up again.
    Memory.objects.filter(pk__in=live_ids | archived_ids, updated_at__lte=started).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )
    return len(memories)


def _points(memories: list[Memory]) -> list[Point]:
    vectors = stores.embedding_set().embed_documents([m.content for m in memories])
    return hybrid.points([(str(m.pk), m.content, payload(m)) for m in memories], vectors)
