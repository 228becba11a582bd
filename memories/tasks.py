"""Background work on memories: the vector and graph mirrors (started by memories.signals), the mirror sweep,
the LLM's entity extraction and the access log's retention."""

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from core.models import MirrorState
from core.vectorstore import VectorStoreError
from memories import mirror
from memories.entity_links import link_entities
from memories.models import Entity, Memory, MemoryAccess, Relation


@shared_task(
    name="memories.sync_memories",
    autoretry_for=(VectorStoreError,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    acks_late=True,
)
def sync_memories_task(memory_ids: list[str]) -> int:
    """Mirror memories by re-reading their rows: a gone or archived row loses its point, any other row is embedded
    again unless the service already mirrored this version right after its commit. Idempotent; returns how many
    were synced."""
    fresh = {
        str(pk)
        for pk in Memory.objects.filter(
            pk__in=memory_ids, mirror_state=MirrorState.SYNCED, mirrored_at__gte=F("updated_at")
        ).values_list("pk", flat=True)
    }
    stale = [memory_id for memory_id in memory_ids if memory_id not in fresh]
    mirror.sync_memories(stale)
    return len(stale)


@shared_task(name="memories.sync_unsynced")
def sync_unsynced_memories(batch: int = 256) -> int:
    """Mirror memories left pending or failed, e.g. written by another process while this one held the store."""
    ids = [
        str(pk) for pk in Memory.objects.exclude(mirror_state="synced").values_list("pk", flat=True)[:batch]
    ]
    if ids:
        mirror.sync_memories(ids)
    return len(ids)


# (model, its mirror function, row id)
_GraphStep = tuple[type[Entity] | type[Relation], Callable[[str], None], str]


@shared_task(name="memories.mirror_graph", autoretry_for=(Exception,), retry_backoff=True, max_retries=8)
def mirror_graph_task(entity_ids: Sequence[str] = (), relation_ids: Sequence[str] = ()) -> None:
    """Mirror entities and relations to Neo4j by re-reading their rows; gone rows lose their node or edge.
    Entities go first, so each relation finds its endpoints with their properties."""
    from memories.graph import mirror_entity, mirror_relation

    steps: list[_GraphStep] = [(Entity, mirror_entity, pk) for pk in entity_ids]
    steps += [(Relation, mirror_relation, pk) for pk in relation_ids]
    for position, (_, mirror_row, pk) in enumerate(steps):
        try:
            mirror_row(pk)  # records the row's state, synced or failed
        except Exception as exc:
            # Neo4j is most likely down: the rows not tried yet show the same error until the retry.
            _mark_failed(steps[position + 1 :], str(exc) or exc.__class__.__name__)
            raise


def _mark_failed(steps: list[_GraphStep], error: str) -> None:
    by_model: dict[type[Entity] | type[Relation], list[str]] = defaultdict(list)
    for model, _, pk in steps:
        by_model[model].append(pk)
    for model, pks in by_model.items():
        model.objects.filter(pk__in=pks).update(mirror_state=MirrorState.FAILED, mirror_error=error[:2000])


@shared_task(name="memories.llm_extract", autoretry_for=(), max_retries=0)
def llm_extract_task(memory_id: str) -> int:
    """Enrich a memory's entities and typed relations with the LLM (when one is configured)."""
    from core.llm import LLMError, get_llm
    from memories.entities import extract, llm_extract

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


# Rows deleted per statement: on SQLite each statement holds the one write lock while it runs.
ACCESS_PRUNE_BATCH = 5_000


@shared_task(name="memories.prune_access_log")
def prune_access_log() -> int:
    """Delete the search records older than MNEMO_ACCESS_LOG_DAYS (0 keeps them all); returns how many went."""
    if not settings.MNEMO_ACCESS_LOG_DAYS:
        return 0
    cutoff = timezone.now() - timedelta(days=settings.MNEMO_ACCESS_LOG_DAYS)
    old = MemoryAccess.objects.filter(created_at__lt=cutoff).order_by()
    deleted = 0
    while ids := list(old.values_list("pk", flat=True)[:ACCESS_PRUNE_BATCH]):
        deleted += MemoryAccess.objects.filter(pk__in=ids).delete()[0]
    return deleted
