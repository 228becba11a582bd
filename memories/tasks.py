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


@shared_task(name="memories.mirror_entity", autoretry_for=(Exception,), retry_backoff=True, max_retries=8)
def mirror_entity_task(entity_id: str) -> None:
    from memories.graph import mirror_entity

    mirror_entity(entity_id)


@shared_task(name="memories.mirror_relation", autoretry_for=(Exception,), retry_backoff=True, max_retries=8)
def mirror_relation_task(relation_id: str) -> None:
    from memories.graph import mirror_relation

    mirror_relation(relation_id)


@shared_task(name="memories.llm_extract", autoretry_for=(), max_retries=0)
def llm_extract_task(memory_id: str) -> int:
    """Enrich a memory's entities and typed relations with the LLM (when one is configured)."""
    from core.llm import LLMError, get_llm
    from memories.entities import extract, llm_extract
    from memories.services import link_entities

    llm = get_llm()
    memory = Memory.objects.filter(pk=memory_id).first()
    if llm is None or memory is None:
        return 0
    try:
        found = llm_extract(llm, memory.content)
    except LLMError:
        return 0
    offline = extract(memory.content)
    keys = {mention.key for mention in found.mentions}
    found.mentions += [mention for mention in offline.mentions if mention.key not in keys]
    found.relations += offline.relations
    return len(link_entities(memory, found))
