from celery import shared_task

from core.vectorstore import VectorStoreError
from memories import mirror
from memories.models import Memory


@shared_task(
    name="memories.sync_memory",
    autoretry_for=(VectorStoreError,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    acks_late=True,
)
def sync_memory(memory_id: str) -> str:
    """Mirror one memory by re-reading its row; a gone or archived row deletes the point. Idempotent."""
    memory = Memory.objects.filter(pk=memory_id).only("mirror_state", "mirrored_at", "updated_at").first()
    if (
        memory
        and memory.mirror_state == "synced"
        and memory.mirrored_at
        and memory.mirrored_at >= memory.updated_at
    ):
        return "fresh"  # the service already mirrored this version right after its commit
    mirror.sync_memories([memory_id])
    return "synced"


@shared_task(name="memories.sync_unsynced")
def sync_unsynced_memories(batch: int = 256) -> int:
    """Mirror memories left pending or failed, e.g. written by another process while this one held the store."""
    ids = [
        str(pk) for pk in Memory.objects.exclude(mirror_state="synced").values_list("pk", flat=True)[:batch]
    ]
    if ids:
        mirror.sync_memories(ids)
    return len(ids)
