"""Cleaning a store that already holds duplicates and outdated facts: proposals first, changes after review.

`propose` reads a user's current memories oldest first and decides for each, as the write path would have
(memories.curation, offline rules, against the memories before it): a repeat is proposed to be merged into the
memory it repeats, a newer value of a fact to supersede the older one. Nothing changes until a proposal is
approved (one by one or in bulk, on the review page, through the API or `manage.py dedupe_memories`), and an
approved proposal can be undone. A merged memory is archived, not deleted; a superseded one keeps its row.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from core.errors import RequestRefused
from core.stored_text import Text, stored
from memories import curation
from memories.actions.edit import apply_supersede, memory_archive, memory_fold, memory_reinstate
from memories.models import EditVia, Memory, MemoryEdit, Proposal, ProposalAction, ProposalStatus


class ProposalError(RequestRefused):
    """A proposal that cannot be decided in its present state (already decided, or its memories changed)."""

    status = 409


@dataclass(frozen=True)
class Draft:
    action: str  # ProposalAction
    memory: Memory  # folded into the target (merge), or replaced by it (supersede)
    target: Memory
    reason: str


def propose(user: User) -> list[Draft]:
    memories = list(Memory.objects.current().filter(user=user).order_by("created_at", "pk"))
    curator = curation.Curator(user, against_store=False)
    curator.prepare(memories)
    drafts = []
    for memory in memories:
        decision = curator.decide(memory)
        if decision.action in (curation.DUPLICATE, curation.MERGE):
            assert decision.existing is not None  # a duplicate or merge names the memory it repeats
            drafts.append(Draft(ProposalAction.MERGE, memory, decision.existing, decision.reason))
            continue  # folded into the earlier one: later memories compare with that one
        for older in decision.superseded:
            older.superseded_by = memory  # in memory only, so the memories after it see what is current
            drafts.append(Draft(ProposalAction.SUPERSEDE, older, memory, decision.reason))
        curator.accept(memory)
    return drafts


def propose_for(user: User, memories: list[Memory]) -> list[Draft]:
    """Proposals for memories already stored (say, just consolidated) against the rest of the store."""
    curator = curation.Curator(user)
    drafts = []
    for memory in memories:
        decision = curator.decide(memory)
        if decision.action in (curation.DUPLICATE, curation.MERGE):
            assert decision.existing is not None  # a duplicate or merge names the memory it repeats
            drafts.append(Draft(ProposalAction.MERGE, memory, decision.existing, decision.reason))
        drafts += [Draft(ProposalAction.SUPERSEDE, o, memory, decision.reason) for o in decision.superseded]
        if decision.superseded_by is not None:
            drafts.append(Draft(ProposalAction.SUPERSEDE, memory, decision.superseded_by, decision.reason))
    return drafts


@transaction.atomic
def queue(user: User, drafts: list[Draft]) -> list[Proposal]:
    """Store the drafts as pending proposals, skipping pairs already pending or rejected (asked once is enough)."""
    statuses = [ProposalStatus.PENDING, ProposalStatus.REJECTED]
    pending = set(
        Proposal.objects.filter(user=user, status__in=statuses).values_list("memory_id", "target_id")
    )
    fresh = [
        Proposal(user=user, action=d.action, memory=d.memory, target=d.target, reason=d.reason)
        for d in drafts
        if (d.memory.pk, d.target.pk) not in pending
    ]
    return Proposal.objects.bulk_create(fresh)


def _locked(proposal: Proposal, *expected: str) -> Proposal:
    proposal = Proposal.objects.select_for_update().select_related("memory", "target").get(pk=proposal.pk)
    if proposal.status not in expected:
        raise ProposalError(_("this proposal is %(status)s") % {"status": proposal.get_status_display()})
    return proposal


@transaction.atomic
def approve(proposal: Proposal, *, editor=None, api_key=None, via: str = EditVia.PAGE) -> Proposal:
    proposal = _locked(proposal, ProposalStatus.PENDING)
    memory, target = proposal.memory, proposal.target
    if memory.archived_at or memory.superseded_by_id or target.archived_at:
        raise ProposalError(_("its memories changed since it was proposed: find duplicates again"))
    if proposal.action == ProposalAction.MERGE:
        memory_fold(
            memory=memory,
            into=target,
            reason=_approved(proposal),
            via=via,
            editor=editor,
            api_key=api_key,
        )
    else:
        decision = curation.Decision(curation.SUPERSEDE, superseded=(memory,), reason=_approved(proposal))
        MemoryEdit.objects.bulk_create(
            apply_supersede(decision, target, via=via, api_key=api_key, editor=editor)
        )
    proposal.status, proposal.decided_at = ProposalStatus.APPROVED, timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal


def _approved(proposal: Proposal) -> Text:
    reason = stored(proposal.reason, proposal.reason_key)
    return Text(gettext_noop("approved cleaning: %(reason)s"), reason=reason)


@transaction.atomic
def reject(proposal: Proposal) -> Proposal:
    proposal = _locked(proposal, ProposalStatus.PENDING)
    proposal.status, proposal.decided_at = ProposalStatus.REJECTED, timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal


@transaction.atomic
def undo(proposal: Proposal, *, editor=None, api_key=None, via: str = EditVia.PAGE) -> Proposal:
    """Take back an approved proposal: the merged memory comes back and is uncounted, or the superseded one is
    current again."""
    proposal = _locked(proposal, ProposalStatus.APPROVED)
    memory, target = proposal.memory, proposal.target
    if proposal.action == ProposalAction.MERGE:
        target.seen_count = max(1, target.seen_count - memory.seen_count)
        target.sources = [source for source in target.sources if source not in memory.sources]
        target.save(update_fields=["seen_count", "sources", "updated_at"])
        memory_archive(memory=memory, via=via, editor=editor, api_key=api_key, archived=False)
    elif memory.superseded_by_id == target.pk:
        memory_reinstate(
            memory=memory,
            via=via,
            editor=editor,
            api_key=api_key,
            reason=Text(gettext_noop("approved cleaning undone")),
        )
    proposal.status, proposal.decided_at = ProposalStatus.UNDONE, timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal
