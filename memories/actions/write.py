"""Adding memories, one or many: each checked against the user's current ones first (memories.curation), in one
transaction, then mirrored right after the commit; and taking a write back (the chat's Undo).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from conversations.models import AgentSession
from core import disk
from core.cpu_slots import uses_cpu
from core.dispatch import dispatch_on_commit
from core.limits import MAX_NAME_CHARS, InputRejected, check_text
from core.llm import get_llm
from core.models import ApiKey
from core.stored_text import Text
from core.text import count_tokens, fingerprint
from memories import curation, mirror
from memories.actions.edit import apply_supersede, index_facts, memory_reinstate, memory_update
from memories.actions.forgetting import memories_delete
from memories.actions.rules import (
    MAX_SOURCES,
    MemoryRequestError,
    check_detail,
    check_year,
    screened,
    session_for_key,
    validate,
)
from memories.entities import ModelMentions, model_mentions
from memories.entity_links import link_entities
from memories.models import EditVia, Memory, MemoryEdit, MemoryType
from memories.scoring import working_priority
from memories.tasks import llm_extract_task
from memories.types import MemoryTypePolicy, policy_of


@dataclass(frozen=True)
class Written:
    """What a write did: `memory` is the new memory, or the existing one a duplicate or merge was counted on."""

    memory: Memory
    action: str  # curation.ADD, DUPLICATE, MERGE or SUPERSEDE
    reason: str = ""
    superseded: tuple[Memory, ...] = ()

    @property
    def stored(self) -> bool:
        """True when a new row was written (added, or added superseding older facts)."""
        return self.action in (curation.ADD, curation.SUPERSEDE)


def memory_create(**kwargs: Any) -> Memory:
    """Add one memory (see memory_write); returns the memory written or the existing one it repeats."""
    return memory_write(**kwargs).memory


@uses_cpu
def memory_write(
    *,
    user: User,
    content: str,
    memory_type: str = MemoryType.WORKING,
    importance: float = 0.5,
    session: AgentSession | None = None,
    session_key: str | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: datetime | None = None,
    extract_entities: bool | None = None,
    via: str = EditVia.SYSTEM,
    api_key: ApiKey | None = None,
    editor: User | None = None,
    curate: bool = True,
    **detail: Any,
) -> Written:
    """Add one memory, checked against the user's current ones first (memories.curation): an exact or near
    duplicate is counted on the memory it repeats instead, and a newer value of a fact supersedes the older.
    A type with a per-session capacity (working memory) then evicts by priority to keep it. `session_key` names
    the session instead of `session`: it is created (when new) in the write's transaction, so a refused write
    leaves none."""
    if session_key is not None:
        check_text(session_key.strip(), "session_id", MAX_NAME_CHARS)
    file_size = getattr(detail.get("file"), "size", None) or 0
    disk.require_space(disk.texts_bytes([content]) + file_size, Text(gettext_noop("this memory")))
    # Checking, screening and reading the text for entities write nothing, so they run before the transaction:
    # on SQLite it holds the one write lock from its first statement (transaction_mode IMMEDIATE), and every
    # concurrent add waited out this work too (~15 ms of the ~45 ms an add held the lock).
    memory = _new_memory(
        user=user,
        content=content,
        memory_type=memory_type,
        importance=importance,
        session=session,
        metadata=metadata,
        created_at=created_at,
        **detail,
    )
    link = bool(extract_entities or (extract_entities is None and memory.policy.links_entities))
    mentions = model_mentions(memory.content) if link else None
    curator = curation.Curator(user, enabled=curate, llm=get_llm() if curate else None)
    curator.prepare([memory])  # the embedding and the nearest stored facts, outside the write lock too
    return _memory_write(
        memory=memory,
        user=user,
        session=session,
        session_key=session_key,
        link=link,
        mentions=mentions,
        via=via,
        api_key=api_key,
        editor=editor,
        curator=curator,
    )


@transaction.atomic
def _memory_write(
    *,
    memory: Memory,
    user: User,
    session: AgentSession | None,
    session_key: str | None,
    link: bool,
    mentions: ModelMentions | None,
    via: str,
    api_key: ApiKey | None,
    editor: User | None,
    curator: "curation.Curator",
) -> Written:
    if session_key is not None:
        session = memory.session = session_for_key(user=user, key=session_key)
    decision = curator.decide(memory)
    source = _source(memory, via=via, api_key=api_key, editor=editor)
    if decision.action in (curation.DUPLICATE, curation.MERGE):
        existing = _count_repeat(decision, memory, source, via=via, api_key=api_key, editor=editor)
        return Written(existing, decision.action, decision.reason)
    _set_origin(memory, source, via=via, api_key=api_key)
    memory.save()  # the save signal puts it in the mirror outbox, drained right after the commit
    index_facts(curator, [memory])
    MemoryEdit.objects.bulk_create(apply_supersede(decision, memory, via=via, api_key=api_key, editor=editor))
    if link:
        link_entities(memory, mentions=mentions)
        _enrich_with_llm(memory)
    if memory.policy.capacity is not None or memory.policy.token_budget is not None:
        # The evicted's points go with their rows (signals).
        enforce_capacity(user=user, session=session, policy=memory.policy)
    return Written(memory, decision.action, decision.reason, decision.superseded)


def _source(
    memory: Memory, *, via: str, api_key: ApiKey | None, editor: User | None = None
) -> dict[str, Any]:
    """Where one write of a memory came from: the route, the key, the chat message or the document, and who
    wrote it on a page (a staff member, when it is another user's memory)."""
    source: dict[str, Any] = {"via": via, "at": memory.created_at.isoformat()}
    if api_key is not None:
        source["api_key"] = api_key.pk
    if editor is not None:
        source["editor"] = editor.pk
    if memory.source_message_id:
        source["message"] = str(memory.source_message_id)
    if memory.source_document_id:
        source["document"] = str(memory.source_document_id)
    return source


def _set_origin(memory: Memory, source: dict[str, Any], *, via: str, api_key: ApiKey | None) -> None:
    """A new memory's first source, and the route and key it came through as the columns lists filter by."""
    memory.sources = [source]
    memory.last_seen_at = memory.created_at
    memory.origin = via
    memory.origin_key = api_key


def _count_repeat(
    decision: "curation.Decision",
    repeat: Memory,
    source: dict[str, Any],
    *,
    via: str,
    api_key: ApiKey | None,
    editor: User | None = None,
) -> Memory:
    """A duplicate or near-duplicate is not stored: the memory it repeats counts it, with its source; a merge
    also keeps the higher importance and the union of tags and is recorded in the history with its reason."""
    existing = decision.existing
    assert existing is not None
    existing.seen_count += 1
    existing.last_seen_at = max(existing.last_seen_at or existing.created_at, repeat.created_at)
    existing.sources = [*existing.sources, source][-MAX_SOURCES:]
    changes: dict[str, list[Any]] = {}
    if repeat.importance > existing.importance:
        changes["importance"] = [existing.importance, repeat.importance]
        existing.importance = repeat.importance
    tags = list(dict.fromkeys([*existing.tags, *repeat.tags]))
    if tags != existing.tags:
        changes["tags"] = [existing.tags, tags]
        existing.tags = tags
    if existing._state.adding:
        return existing  # an earlier item of the same bulk write, saved with it
    counted = ["seen_count", "last_seen_at", "sources", "importance", "tags"]
    if changes:  # importance and tags are in the vector payload: the save signal mirrors it again
        existing.save(update_fields=[*counted, "updated_at"])
    else:
        mirror.save_unmirrored(existing, counted)
    # Every decision goes into the history with its reason: a merge with the text it folded in.
    seen = {"seen_count": [existing.seen_count - 1, existing.seen_count]}
    merged = {"merged": [None, repeat.content]} if decision.action == curation.MERGE else {}
    MemoryEdit.objects.create(
        memory=existing,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={**merged, **seen, **changes},
        reason=decision.reason,
    )
    if decision.merged_text and decision.merged_text != existing.content:
        existing = memory_update(
            memory=existing, via=via, api_key=api_key, editor=editor, content=decision.merged_text
        )
    return existing


def _enrich_with_llm(memory: Memory) -> None:
    """With an LLM configured, typed entities and relations are added in the background (it costs a call)."""
    if get_llm() is not None:
        dispatch_on_commit(llm_extract_task, str(memory.pk))


@transaction.atomic
def memory_write_undo(
    *,
    user: User,
    memory_id: str,
    action: str,
    superseded: Sequence[str] = (),
    source_message_id: str | None = None,
) -> bool:
    """Take back one write (the chat's Undo): a stored memory is deleted and the facts it superseded are current
    again; a repeat counted on an existing memory is uncounted, its source removed. False if nothing was left."""
    memory = Memory.objects.filter(user=user, pk=memory_id).first()
    if memory is None:
        return False
    if action in (curation.DUPLICATE, curation.MERGE):
        if memory.seen_count <= 1:
            return False
        sources = list(memory.sources)
        mine = [
            i for i, s in enumerate(sources) if source_message_id and s.get("message") == source_message_id
        ]
        if mine or sources:
            sources.pop(mine[-1] if mine else len(sources) - 1)
        memory.seen_count -= 1
        memory.sources = sources
        mirror.save_unmirrored(memory, ["seen_count", "sources"])
        MemoryEdit.objects.create(
            memory=memory,
            via=EditVia.CHAT,
            changes={"seen_count": [memory.seen_count + 1, memory.seen_count]},
            reason=Text(gettext_noop("a repeat taken back (undo)")),
        )
        return True
    for older in Memory.objects.filter(user=user, pk__in=list(superseded), superseded_by=memory):
        memory_reinstate(
            memory=older, via=EditVia.CHAT, reason=Text(gettext_noop("the fact that replaced it was undone"))
        )
    return memories_delete(user=user, memory_ids=[memory.pk]) == 1


@dataclass(frozen=True)
class NewMemory:
    content: str
    memory_type: str = MemoryType.WORKING
    importance: float = 0.5
    session_key: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    context: str = ""
    outcome: str = ""
    participants: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


def memory_bulk_create(
    *,
    user: User,
    items: Sequence[NewMemory],
    via: str = EditVia.SYSTEM,
    api_key: ApiKey | None = None,
    curate: bool = True,
) -> list[Written]:
    """Add many memories in one transaction (all or none), each checked as memory_write checks one, also
    against the items before it; used for imports, so no working-memory eviction. One result per item.

    The transaction is kept short, because on SQLite it holds the one write lock that every other writer waits
    for (a bulk of 200 once held it for tens of seconds under load, and the others gave up at the busy
    timeout): checking, embedding and reading the texts for entities need no database and run before it; the
    memories' entity links, derived from the stored rows, are written after it, one memory per transaction."""
    these = Text(gettext_noop("these %(count)s memories"), count=len(items))
    disk.require_space(disk.texts_bytes([item.content for item in items]), these)
    memories = []
    for position, item in enumerate(items):
        try:
            memories.append(
                _new_memory(
                    user=user,
                    content=item.content,
                    memory_type=item.memory_type,
                    importance=item.importance,
                    session=None,  # set in the transaction, which creates the sessions that are new
                    metadata=item.metadata,
                    created_at=item.created_at,
                    context=item.context,
                    outcome=item.outcome,
                    participants=item.participants,
                    tags=item.tags,
                )
            )
        except InputRejected as exc:
            raise MemoryRequestError(f"items[{position}]: {exc}") from None
    mentions = {m.pk: model_mentions(m.content) for m in memories if m.policy.links_entities}
    curator = curation.Curator(user, enabled=curate)
    curator.prepare(memories)
    written = _bulk_write(
        user=user,
        memories=memories,
        session_keys=[item.session_key for item in items],
        curator=curator,
        via=via,
        api_key=api_key,
    )
    for result in written:
        if result.stored and result.memory.pk in mentions:
            link_entities(result.memory, mentions=mentions[result.memory.pk])
    return written


@transaction.atomic
def _bulk_write(
    *,
    user: User,
    memories: list[Memory],
    session_keys: list[str | None],
    curator: "curation.Curator",
    via: str,
    api_key: ApiKey | None,
) -> list[Written]:
    sessions: dict[str, AgentSession] = {}
    for memory, key in zip(memories, session_keys, strict=True):
        if key:
            if key not in sessions:
                sessions[key] = session_for_key(user=user, key=key)
            memory.session = sessions[key]
    curator.load_stored_hashes(memories)
    written: list[Written] = []
    stored: list[Memory] = []
    edits: list[MemoryEdit] = []
    for memory in memories:
        decision = curator.decide(memory)
        source = _source(memory, via=via, api_key=api_key)
        if decision.action in (curation.DUPLICATE, curation.MERGE):
            repeated = _count_repeat(decision, memory, source, via=via, api_key=api_key)
            written.append(Written(repeated, decision.action, decision.reason))
            continue
        _set_origin(memory, source, via=via, api_key=api_key)
        # Marked now, so the items after it see what is current; rows already stored are saved right away
        # (their new superseded_by is checked at commit, after this batch's rows exist).
        edits += apply_supersede(decision, memory, via=via, api_key=api_key)
        curator.accept(memory)
        stored.append(memory)
        written.append(Written(memory, decision.action, decision.reason, decision.superseded))
    Memory.objects.bulk_create(stored, batch_size=500)
    index_facts(curator, stored)
    MemoryEdit.objects.bulk_create(edits)
    # bulk_create sends no signals, so the mirror is requested here explicitly.
    mirror.enqueue(memory.pk for memory in stored)
    return written


def enforce_capacity(*, user: User, session: AgentSession | None, policy: MemoryTypePolicy) -> list[str]:
    """Drop the session's expired memories of the policy's type, then the lowest-priority ones (importance ×
    decay) past its capacity or token budget."""
    now = timezone.now()
    kept = Memory.objects.filter(user=user, session=session, memory_type=policy.name, archived_at=None)
    expired = list(kept.filter(expires_at__lte=now).values_list("pk", flat=True))
    capacity = policy.capacity if policy.capacity is not None else float("inf")
    budget = policy.token_budget if policy.token_budget is not None else float("inf")
    live = sorted(
        kept.exclude(pk__in=expired),
        key=lambda m: working_priority(m.importance, now - m.created_at),
        reverse=True,
    )
    evicted: list[UUID] = []
    tokens = sum(m.token_count for m in live)
    while live and (len(live) > capacity or tokens > budget):
        lowest = live.pop()
        tokens -= lowest.token_count
        evicted.append(lowest.pk)
    gone = [*expired, *evicted]
    if gone:
        Memory.objects.filter(pk__in=gone).delete()
    return [str(pk) for pk in gone]


def _new_memory(
    *,
    user: User,
    content: str,
    memory_type: str,
    importance: float,
    session: AgentSession | None,
    metadata: dict[str, Any] | None,
    created_at: datetime | None,
    **detail: Any,
) -> Memory:
    content = validate(content, memory_type, importance)
    check_detail({"metadata": metadata, **detail})
    content, detail, metadata = screened(user, content, detail, metadata)
    check_year(created_at, "created_at")
    created_at = created_at or timezone.now()
    expires_at = detail.pop("expires_at", None)
    check_year(expires_at, "expires_at")
    policy = policy_of(memory_type)
    if expires_at is None and policy.ttl is not None:
        expires_at = created_at + policy.ttl
    tokens = count_tokens(content)
    if policy.token_budget is not None and tokens > policy.token_budget:
        raise MemoryRequestError(
            _(
                "working memory holds at most %(limit)d tokens per session and this content has %(tokens)d: "
                "store it as episodic or semantic memory instead"
            )
            % {"limit": policy.token_budget, "tokens": tokens}
        )
    return Memory(
        user=user,
        session=session,
        memory_type=memory_type,
        content=content,
        importance=float(importance),
        metadata=metadata or {},
        token_count=tokens,
        content_hash=fingerprint(content),
        created_at=created_at,
        expires_at=expires_at,
        **detail,
    )
