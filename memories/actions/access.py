"""The access log: which memories a search returned, to whom, and how often each was read."""

import logging
from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from conversations.models import AgentSession
from core import privacy
from core.models import ApiKey
from memories.models import Memory, MemoryAccess

logger = logging.getLogger(__name__)


def record_access(
    *,
    user: User,
    memories: Sequence[tuple[Memory, float]],
    query: str,
    via: str,
    api_key: ApiKey | None = None,
    session: AgentSession | None = None,
) -> None:
    """Log which memories a search returned, best first (each with its rank), and bump their access counters.

    Best effort: a search has its answer before this runs, and SQLite may refuse the write (its busy timeout ran
    out behind other writers under load). The answer is worth more than one line of access statistics."""
    if not memories:
        return
    now = timezone.now()
    logged_query = privacy.mask_secrets(
        query[:2000]
    ).text  # a key pasted into a search is not kept in the log
    try:
        with transaction.atomic():  # a savepoint inside a caller's transaction: a refusal leaves it usable
            MemoryAccess.objects.bulk_create(
                MemoryAccess(
                    memory=memory,
                    user=user,
                    api_key=api_key,
                    session=session,
                    query=logged_query,
                    rank=rank,
                    score=score,
                    via=via,
                )
                for rank, (memory, score) in enumerate(memories, start=1)
            )
            # update() skips save signals on purpose: an access is not an edit and needs no re-mirroring.
            Memory.objects.filter(pk__in=[memory.pk for memory, _ in memories]).update(
                access_count=F("access_count") + 1, last_accessed_at=now
            )
    except OperationalError as exc:
        logger.warning("search answered without recording its %d accesses: %s", len(memories), exc)
