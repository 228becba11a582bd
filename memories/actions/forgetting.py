"""Forgetting memories (deleting them: by id, by Hello-Agents' strategies, or all of a user's) and consolidating
them (promoting the important ones to a longer-lived type).
"""

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from conversations.models import AgentSession
from core.models import MirrorState
from memories import cleaning, curation
from memories.actions.edit import index_facts
from memories.actions.rules import MemoryRequestError
from memories.entity_links import link_entities, refresh_entity_frequencies
from memories.models import EditVia, Entity, Memory, MemoryEdit, MemoryEntity, MemoryType
from memories.types import NAMES, names_where, policy_of

CONSOLIDATION_BOOST = 1.1  # Hello-Agents' importance boost for a promoted memory
MAX_AGE_DAYS = 36_500  # a century; more overflows the date arithmetic
MAX_CAPACITY = 10_000_000


@transaction.atomic
def memories_delete(*, user: User, memory_ids: Sequence[Any]) -> int:
    """Delete the given memories of `user` (others' ids are ignored); returns how many were deleted."""
    memories = Memory.objects.filter(user=user, pk__in=list(memory_ids))
    ids = [str(pk) for pk in memories.values_list("pk", flat=True)]
    entity_ids = set(MemoryEntity.objects.filter(memory_id__in=ids).values_list("entity_id", flat=True))
    Memory.objects.filter(pk__in=ids).delete()  # their points go with the rows (memories.signals)
    refresh_entity_frequencies(entity_ids)
    return len(ids)


FORGET_STRATEGIES = ("importance_based", "time_based", "capacity_based")


def memories_forget(
    *,
    user: User,
    strategy: str = "importance_based",
    threshold: float = 0.1,
    max_age_days: float = 30,
    max_capacity: int = 100,
    memory_types: Sequence[str] | None = None,
) -> int:
    """Hello-Agents' forgetting, always scoped to one user; expired memories of the types with a TTL (working
    memory) go in every strategy, and a type with a capacity of its own keeps that many in capacity_based."""
    if strategy not in FORGET_STRATEGIES:
        raise MemoryRequestError(
            _("strategy must be one of: %(strategies)s (got %(got)s)")
            % {"strategies": ", ".join(FORGET_STRATEGIES), "got": repr(strategy)}
        )
    if not 0 <= max_age_days <= MAX_AGE_DAYS:
        raise MemoryRequestError(
            _("max_age_days must be between 0 and %(limit)s (got %(got)s)")
            % {"limit": f"{MAX_AGE_DAYS:,}", "got": max_age_days}
        )
    if not 0 <= max_capacity <= MAX_CAPACITY:
        raise MemoryRequestError(
            _("max_capacity must be between 0 and %(limit)s (got %(got)s)")
            % {"limit": f"{MAX_CAPACITY:,}", "got": max_capacity}
        )
    now = timezone.now()
    memories = Memory.objects.filter(user=user)
    if memory_types:
        memories = memories.filter(memory_type__in=_checked_types(memory_types))
    doomed = set(
        memories.filter(
            memory_type__in=names_where(lambda policy: policy.ttl is not None), expires_at__lte=now
        ).values_list("pk", flat=True)
    )
    if strategy == "importance_based":
        doomed |= set(memories.filter(importance__lt=threshold).values_list("pk", flat=True))
    elif strategy == "time_based":
        doomed |= set(
            memories.filter(created_at__lt=now - timedelta(days=max_age_days)).values_list("pk", flat=True)
        )
    else:
        for memory_type in memory_types or NAMES:
            own = policy_of(memory_type).capacity
            capacity = own if own is not None else max_capacity
            ranked = memories.filter(memory_type=memory_type).order_by("-importance", "-created_at")
            doomed |= set(ranked.values_list("pk", flat=True)[capacity:])
    return memories_delete(user=user, memory_ids=list(doomed))


def _checked_types(memory_types: Sequence[str]) -> list[str]:
    unknown = [t for t in memory_types if t not in NAMES]
    if unknown:
        raise MemoryRequestError(
            _("unknown memory type(s) %(unknown)s; valid: %(types)s")
            % {"unknown": ", ".join(map(str, unknown)), "types": ", ".join(NAMES)}
        )
    return list(memory_types)


@transaction.atomic
def memories_consolidate(
    *,
    user: User,
    from_type: str = MemoryType.WORKING,
    to_type: str = MemoryType.EPISODIC,
    importance_threshold: float = 0.7,
    session: AgentSession | None = None,
) -> list[Memory]:
    """Promote important memories to a longer-lived type, keeping their ids; importance is boosted ×1.1, capped at 1."""
    _checked_types([from_type, to_type])
    if from_type == to_type:
        raise MemoryRequestError(_("from_type and to_type must differ"))
    candidates = (
        Memory.objects.for_user(user)
        .active()
        .filtered(memory_types=[from_type], session=session, min_importance=importance_threshold)
    )
    promoted = []
    source, target = policy_of(from_type), policy_of(to_type)
    for memory in candidates.select_for_update():
        memory.memory_type = to_type
        memory.importance = min(1.0, memory.importance * CONSOLIDATION_BOOST)
        memory.expires_at = timezone.now() + target.ttl if target.ttl is not None else None
        memory.mirror_state = MirrorState.PENDING
        memory.save()  # the save signal puts it in the mirror outbox
        MemoryEdit.objects.create(
            memory=memory, via=EditVia.SYSTEM, changes={"memory_type": [from_type, to_type]}
        )
        if target.links_entities and not source.links_entities:
            link_entities(memory)
        promoted.append(memory)
    if target.states_facts:
        index_facts(curation.Curator(user), promoted)
    if target.reviewed_on_promotion:
        # What a promotion repeats or outdates goes to the review queue: consolidation changes nothing else.
        cleaning.queue(user, cleaning.propose_for(user, promoted))
    return promoted


def memories_clear(*, user: User) -> int:
    """Delete every memory of this user, and only this user's; their points and nodes go with the rows
    (memories.signals)."""
    ids = list(Memory.objects.filter(user=user).values_list("pk", flat=True))
    with transaction.atomic():
        Memory.objects.filter(pk__in=ids).delete()
        Entity.objects.filter(user=user).delete()
    return len(ids)
