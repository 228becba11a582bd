"""The chunks' vector mirror as the mirror checks see it (core.mirrors): which rows must have a point, how to
write them again, and how many of a user's passages a search would miss."""

from datetime import timedelta

from django.utils import timezone

from core.models import MirrorState
from core.vectorstore import VectorStore, VectorStoreError
from knowledge.models import Chunk
from knowledge.services import COLLECTION, chunk_store, sync_chunks

# A point written since the store's last count may not be counted yet (VectorStore.COUNT_MAX_AGE).
COUNTED_AFTER = timedelta(seconds=VectorStore.COUNT_MAX_AGE)


def mirrored_rows():
    """The chunks whose points must be in the store now: of ready documents, and mirrored."""
    return Chunk.objects.active().filter(mirror_state=MirrorState.SYNCED)


def mark_pending(chunk_ids: list[str], reason: str) -> int:
    """Leave chunks for the chunk mirror sweep to write again."""
    return Chunk.objects.filter(pk__in=chunk_ids).update(
        mirror_state=MirrorState.PENDING, mirror_error=reason
    )


def register() -> None:
    from core import mirrors

    mirrors.register(
        mirrors.VectorMirror(
            name="knowledge chunks",
            collection=COLLECTION,
            store=chunk_store,
            mirrored_rows=mirrored_rows,
            mark_pending=mark_pending,
            write=sync_chunks,
        )
    )


def missing_points(user, namespaces: list[str]) -> int:
    """How many of `user`'s mirrored passages in `namespaces` have no point in the store, by count (0 when it
    cannot say)."""
    expected = (
        mirrored_rows()
        .filter(user=user, namespace__in=namespaces, mirrored_at__lte=timezone.now() - COUNTED_AFTER)
        .count()
    )
    if not expected:
        return 0
    try:
        points = chunk_store().count_cached(COLLECTION, {"user_id": str(user.pk), "namespace": namespaces})
    except VectorStoreError:
        return 0  # the search reports the store itself as unavailable
    return max(0, expected - points)
