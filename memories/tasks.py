"""Background work on memories: the LLM's entity extraction and the access log's retention. The vector and graph
mirrors run through the mirror outbox's tasks (core.tasks, core.mirror_outbox)."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from memories.entity_links import link_entities
from memories.models import Memory, MemoryAccess


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
