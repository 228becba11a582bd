"""Every change to memories goes through here: one transaction each, then the vector mirror on commit.

The mirror runs right after the commit, inside the caller's request, so a memory is searchable as soon as the
call that wrote it returns (read-your-writes). If the vector store is down the rows stay committed and marked,
and the mirror sweep, or `resync_mirrors`, syncs them later. Deletes are mirrored by memories.signals alone, which
hears every path (these services, the admin, querysets, cascades) and removes a transaction's points in one call.
"""

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import OperationalError, transaction
from django.db.models import Count, F, Q, Value
from django.db.models.functions import StrIndex
from django.utils import timezone

from core import privacy
from core.cpu_slots import uses_cpu
from core.dispatch import dispatch_on_commit
from core.limits import (
    MAX_CONTENT_CHARS,
    MAX_NAME_CHARS,
    MAX_SHORT_TEXT_CHARS,
    InputRejected,
    check_json,
    check_names,
    check_text,
)
from core.llm import get_llm
from core.models import ApiKey, MirrorState
from core.text import count_tokens, fingerprint
from memories import curation, mirror
from memories.entities import Extraction, Mention, ModelMentions, entity_key, extract, model_mentions
from memories.models import (
    AgentSession,
    EditVia,
    Entity,
    Fact,
    Memory,
    MemoryAccess,
    MemoryEdit,
    MemoryEntity,
    MemoryType,
    Relation,
)

logger = logging.getLogger(__name__)

# Hello-Agents' working-memory rules (MemoryConfig defaults).
WORKING_MEMORY_TTL = timedelta(minutes=120)
WORKING_MEMORY_CAPACITY = 10
WORKING_MEMORY_TOKENS = 2000
DECAY_FACTOR = 0.95
DECAY_PERIOD_HOURS = 6
DECAY_FLOOR = 0.1
CONSOLIDATION_BOOST = 1.1
MAX_ENTITIES_PER_MEMORY = 12
# Facts and events feed the entity graph; working memory is too short-lived and perceptual notes describe files.
GRAPH_TYPES = (MemoryType.SEMANTIC, MemoryType.EPISODIC)
MAX_AGE_DAYS = 36_500  # a century; more overflows the date arithmetic
MAX_CAPACITY = 10_000_000
# Dates a memory may carry: the edges of Python's calendar overflow when the working-memory TTL is added
# or the time is shown in another zone.
EARLIEST_YEAR, LATEST_YEAR = 2, 9998
EDITABLE_FIELDS = (
    "content",
    "importance",
    "memory_type",
    "metadata",
    "context",
    "outcome",
    "participants",
    "tags",
    "session",
    "expires_at",
)
# A perceptual file's modality, by the prefix of its content type; anything else is "text".
PERCEPTUAL_MODALITIES = {"image": "image/", "audio": "audio/", "video": "video/"}
# What an edit record may restore: the editable fields as they were, session by key and dates as ISO text.
RESTORABLE_FIELDS = EDITABLE_FIELDS


class MemoryRequestError(InputRejected):
    """A request the memory system refuses; the message says what to change."""


def time_decay(age: timedelta) -> float:
    """Hello-Agents' working-memory decay: 0.95 per 6 hours, never below 0.1."""
    hours = max(age.total_seconds(), 0) / 3600
    return max(DECAY_FLOOR, DECAY_FACTOR ** (hours / DECAY_PERIOD_HOURS))


def working_priority(memory: Memory, now: datetime) -> float:
    return memory.importance * time_decay(now - memory.created_at)


def session_for_key(*, user: User, key: str) -> AgentSession:
    key = check_text(key.strip(), "session_id", MAX_NAME_CHARS)
    if not key:
        raise MemoryRequestError("session_id must not be empty")
    session, _ = AgentSession.objects.get_or_create(user=user, key=key, defaults={"title": key})
    return session


def _save_mirrored(memory: Memory, **kwargs: Any) -> None:
    """Save a memory that this service mirrors itself right after the commit (read-your-writes), so the save
    signal does not queue a second mirror task that would embed and write the same vector again."""
    memory.mirrored_by_service = True
    try:
        memory.save(**kwargs)
    finally:
        del memory.mirrored_by_service


def _mirror_on_commit(memory_ids: Iterable[UUID | str]) -> None:
    ids = [str(memory_id) for memory_id in memory_ids]
    if ids:
        transaction.on_commit(lambda: mirror.try_sync_memories(ids))


def _validate(content: str, memory_type: str, importance: float) -> str:
    if memory_type not in MemoryType.values:
        raise MemoryRequestError(
            f"memory_type must be one of: {', '.join(MemoryType.values)} (got {memory_type!r})"
        )
    if not isinstance(content, str) or not content.strip():
        raise MemoryRequestError("content must not be empty")
    check_text(content, "content", MAX_CONTENT_CHARS)
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        raise MemoryRequestError(f"importance must be a number between 0 and 1 (got {importance!r})")
    return content.strip()


def _check_detail(fields: dict[str, Any]) -> None:
    """The optional fields of a memory, checked against the same limits on every write path."""
    for name in ("context", "outcome"):
        if fields.get(name) is not None:
            check_text(fields[name], name, MAX_SHORT_TEXT_CHARS)
    for name in ("participants", "tags"):
        if fields.get(name) is not None:
            if not isinstance(fields[name], list):
                raise MemoryRequestError(f"{name} must be a list of names")
            check_names(fields[name], name)
    if fields.get("metadata") is not None:
        if not isinstance(fields["metadata"], dict):
            raise MemoryRequestError("metadata must be a JSON object")
        check_json(fields["metadata"], "metadata")


def _screened(
    user: User, content: str, detail: dict[str, Any], metadata: dict[str, Any] | None
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """Secrets and personal data in the text fields and the metadata, masked, kept or refused by the owner's
    privacy settings; what was found is recorded in metadata["privacy"] (kinds and actions, never the values)."""
    fields, found = _screened_fields(user, {"content": content, "metadata": metadata, **detail})
    content, metadata = fields.pop("content"), fields.pop("metadata")
    if found:
        metadata = {**(metadata or {}), "privacy": found}
    return content, fields, metadata


_SCREENED_TEXT = ("content", "context", "outcome")


def _screened_fields(
    user: User, fields: dict[str, Any], subject: str = "the memory"
) -> tuple[dict[str, Any], list[dict]]:
    """`fields` with their text (content, context, outcome) and metadata values screened, and the record of
    what was found."""
    fields, found = dict(fields), list[dict]()
    for name in _SCREENED_TEXT:
        if fields.get(name):
            what = subject if name == "content" else f"{subject}'s {name}"
            screened = privacy.screen_for(user, fields[name], what)
            fields[name], found = screened.text, found + screened.record()
    if fields.get("metadata"):
        metadata, record = privacy.screen_json_for(user, fields["metadata"], f"{subject}'s metadata")
        if record:
            fields["metadata"], found = metadata, found + record
    return fields, found


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
    content = _validate(content, memory_type, importance)
    _check_detail({"metadata": metadata, **detail})
    content, detail, metadata = _screened(user, content, detail, metadata)
    _check_year(created_at, "created_at")
    created_at = created_at or timezone.now()
    expires_at = detail.pop("expires_at", None)
    _check_year(expires_at, "expires_at")
    if expires_at is None and memory_type == MemoryType.WORKING:
        expires_at = created_at + WORKING_MEMORY_TTL
    tokens = count_tokens(content)
    if memory_type == MemoryType.WORKING and tokens > WORKING_MEMORY_TOKENS:
        raise MemoryRequestError(
            f"working memory holds at most {WORKING_MEMORY_TOKENS} tokens per session and this content has "
            f"{tokens}: store it as episodic or semantic memory instead"
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


def _check_year(moment: datetime | None, name: str) -> None:
    if moment is not None and not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        raise MemoryRequestError(
            f"{name} must fall between the years {EARLIEST_YEAR} and {LATEST_YEAR} (got {moment.year})"
        )


def memory_check(memory: Memory) -> None:
    """A memory made elsewhere (a row of an imported archive) against the rules every write path applies: its
    content, type, importance, episodic detail, metadata and dates."""
    _validate(memory.content, memory.memory_type, memory.importance)
    _check_detail(
        {name: getattr(memory, name) for name in ("context", "outcome", "participants", "tags", "metadata")}
    )
    for name in ("created_at", "updated_at", "expires_at", "last_accessed_at", "archived_at", "last_seen_at"):
        _check_year(getattr(memory, name), name)
    _check_year(memory.valid_to, "valid_to")


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
    Working memory then evicts by priority to keep its per-session capacity. `session_key` names the session
    instead of `session`: it is created (when new) in the write's transaction, so a refused write leaves none."""
    if session_key is not None:
        check_text(session_key.strip(), "session_id", MAX_NAME_CHARS)
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
    link = bool(extract_entities or (extract_entities is None and memory.memory_type in GRAPH_TYPES))
    mentions = model_mentions(memory.content) if link else None
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
        curate=curate,
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
    curate: bool,
) -> Written:
    if session_key is not None:
        session = memory.session = session_for_key(user=user, key=session_key)
    memory_type = memory.memory_type
    curator = curation.Curator(user, enabled=curate, llm=get_llm() if curate else None)
    decision = curator.decide(memory)
    source = _source(memory, via=via, api_key=api_key, editor=editor)
    if decision.action in (curation.DUPLICATE, curation.MERGE):
        existing = _count_repeat(decision, memory, source, via=via, api_key=api_key, editor=editor)
        return Written(existing, decision.action, decision.reason)
    _set_origin(memory, source, via=via, api_key=api_key)
    _save_mirrored(memory)
    _index_facts(curator, [memory])
    MemoryEdit.objects.bulk_create(apply_supersede(decision, memory, via=via, api_key=api_key, editor=editor))
    if link:
        link_entities(memory, mentions=mentions)
        _enrich_with_llm(memory)
    if memory_type == MemoryType.WORKING:
        enforce_working_capacity(
            user=user, session=session
        )  # the evicted's points go with their rows (signals)
    _mirror_on_commit([memory.pk])
    return Written(memory, decision.action, decision.reason, decision.superseded)


MAX_SOURCES = 50  # per memory; seen_count keeps counting past it


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
    source: dict,
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
    changes: dict[str, list] = {}
    if repeat.importance > existing.importance:
        changes["importance"] = [existing.importance, repeat.importance]
        existing.importance = repeat.importance
    tags = list(dict.fromkeys([*existing.tags, *repeat.tags]))
    if tags != existing.tags:
        changes["tags"] = [existing.tags, tags]
        existing.tags = tags
    if existing._state.adding:
        return existing  # an earlier item of the same bulk write, saved with it
    _save_mirrored(
        existing, update_fields=["seen_count", "last_seen_at", "sources", "importance", "tags", "updated_at"]
    )
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
    if "importance" in changes:
        _mirror_on_commit([existing.pk])  # importance is in the vector payload
    if decision.merged_text and decision.merged_text != existing.content:
        existing = memory_update(
            memory=existing, via=via, api_key=api_key, editor=editor, content=decision.merged_text
        )
    return existing


def _index_facts(curator: "curation.Curator", memories: Sequence[Memory]) -> None:
    Fact.objects.bulk_create(
        Fact(user_id=memory.user_id, memory=memory, key=slot.key[:200], value=slot.value[:200])
        for memory in memories
        for slot in curator.slots_of(memory)
    )


def apply_supersede(
    decision: "curation.Decision",
    memory: Memory,
    *,
    via: str,
    api_key: ApiKey | None,
    editor: User | None = None,
) -> list[MemoryEdit]:
    """Mark what a new fact replaces (kept, never deleted), or the new fact itself when it is the older one.
    Returns the history records, unsaved: a bulk write saves them once its rows exist."""
    pairs = [(older, memory) for older in decision.superseded]
    if decision.superseded_by is not None:
        pairs.append((memory, decision.superseded_by))
    edits = []
    for older, newer in pairs:
        older.valid_to = max(newer.created_at, older.created_at)
        older.superseded_by = newer
        if not older._state.adding:  # the vector payload does not change: no re-mirroring
            _save_mirrored(older, update_fields=["valid_to", "superseded_by", "updated_at"])
        edits.append(
            MemoryEdit(
                memory=older,
                editor=editor,
                api_key=api_key,
                via=via,
                changes={"superseded_by": [None, str(newer.pk)]},
                reason=decision.reason,
            )
        )
    if decision.superseded:
        edits.append(
            MemoryEdit(
                memory=memory,
                editor=editor,
                api_key=api_key,
                via=via,
                changes={"supersedes": [None, [str(older.pk) for older in decision.superseded]]},
                reason=decision.reason,
            )
        )
    return edits


@transaction.atomic
def memory_reinstate(
    *,
    memory: Memory,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    reason: str = "restored by hand",
) -> Memory:
    """Make a superseded fact current again (the one that replaced it stays current too); recorded as an edit."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id is None:
        return memory
    MemoryEdit.objects.create(
        memory=memory,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={"superseded_by": [str(memory.superseded_by_id), None]},
        reason=reason,
    )
    memory.superseded_by = None
    memory.valid_to = None
    memory.save(update_fields=["superseded_by", "valid_to", "updated_at"])
    return memory


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
        _save_mirrored(memory, update_fields=["seen_count", "sources", "updated_at"])
        MemoryEdit.objects.create(
            memory=memory,
            via=EditVia.CHAT,
            changes={"seen_count": [memory.seen_count + 1, memory.seen_count]},
            reason="a repeat taken back (undo)",
        )
        return True
    for older in Memory.objects.filter(user=user, pk__in=list(superseded), superseded_by=memory):
        memory_reinstate(memory=older, via=EditVia.CHAT, reason="the fact that replaced it was undone")
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


@transaction.atomic
def memory_bulk_create(
    *,
    user: User,
    items: Sequence[NewMemory],
    via: str = EditVia.SYSTEM,
    api_key: ApiKey | None = None,
    curate: bool = True,
) -> list[Written]:
    """Add many memories in one transaction (all or none), each checked as memory_write checks one, also
    against the items before it; used for imports, so no working-memory eviction. One result per item."""
    sessions: dict[str, AgentSession] = {}
    memories = []
    for position, item in enumerate(items):
        session = None
        if item.session_key:
            session = sessions.get(item.session_key) or session_for_key(user=user, key=item.session_key)
            sessions[item.session_key] = session
        try:
            memories.append(
                _new_memory(
                    user=user,
                    content=item.content,
                    memory_type=item.memory_type,
                    importance=item.importance,
                    session=session,
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
    curator = curation.Curator(user, enabled=curate)
    curator.prepare(memories)
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
    _index_facts(curator, stored)
    MemoryEdit.objects.bulk_create(edits)
    for memory in stored:
        if memory.memory_type in GRAPH_TYPES:
            link_entities(memory)
    # bulk_create sends no signals, so the mirror is requested here explicitly.
    _mirror_on_commit(memory.pk for memory in stored)
    return written


def enforce_working_capacity(*, user: User, session: AgentSession | None) -> list[str]:
    """Drop expired working memories of the session, then the lowest-priority ones past capacity or tokens."""
    now = timezone.now()
    working = Memory.objects.filter(
        user=user, session=session, memory_type=MemoryType.WORKING, archived_at=None
    )
    expired = list(working.filter(expires_at__lte=now).values_list("pk", flat=True))
    live = sorted(working.exclude(pk__in=expired), key=lambda m: working_priority(m, now), reverse=True)
    evicted: list[UUID] = []
    tokens = sum(m.token_count for m in live)
    while live and (len(live) > WORKING_MEMORY_CAPACITY or tokens > WORKING_MEMORY_TOKENS):
        lowest = live.pop()
        tokens -= lowest.token_count
        evicted.append(lowest.pk)
    gone = [*expired, *evicted]
    if gone:
        Memory.objects.filter(pk__in=gone).delete()
    return [str(pk) for pk in gone]


@transaction.atomic
def link_entities(
    memory: Memory, extraction: Extraction | None = None, mentions: ModelMentions | None = None
) -> list[Entity]:
    """(Re)link a memory to the entities it names, merged per user by key, and record their relations:
    co-occurrence for every pair, plus typed relations the extractor found (patterns or the LLM)."""
    # A worker's LLM extraction relinks a memory after the request linked it, and the memory may be deleted
    # meanwhile: the row lock makes the two take turns, and a memory that is gone has nothing to link (on
    # PostgreSQL its links failed the foreign key at commit, an error in the worker's log).
    if not Memory.objects.select_for_update().filter(pk=memory.pk).values_list("pk", flat=True):
        return []
    known = _known_entities_in(memory)
    extraction = extraction or extract(
        memory.content, known_types={m.key: m.entity_type for m in known}, mentions=mentions
    )
    found = {mention.key for mention in extraction.mentions}
    extraction.mentions += [mention for mention in known if mention.key not in found]
    old_entity_ids = set(memory.entity_links.values_list("entity_id", flat=True))
    memory.entity_links.all().delete()
    entities: dict[str, Entity] = {}
    for mention in extraction.mentions[:MAX_ENTITIES_PER_MEMORY]:
        entity, _ = Entity.objects.get_or_create(
            user=memory.user,
            key=mention.key,
            defaults={"name": mention.name, "entity_type": mention.entity_type},
        )
        MemoryEntity.objects.get_or_create(memory=memory, entity=entity, defaults={"mention": mention.name})
        entities[mention.key] = entity
    linked = list(entities.values())
    for source, target, relation_type in graph_edges(extraction, list(entities)):
        _strengthen(memory, entities[source], entities[target], relation_type)
    _refresh_entity_frequencies(old_entity_ids | {entity.pk for entity in linked})
    return linked


def typed_pairs(extraction: Extraction) -> list[tuple[str, str, str]]:
    """The typed relations (source key, target key, type) the extractor found, once each."""
    return list(dict.fromkeys((r.source, r.target, r.relation_type) for r in extraction.relations))


def graph_edges(extraction: Extraction, keys: Sequence[str]) -> list[tuple[str, str, str]]:
    """One edge per related pair of the linked entities `keys`: its typed relation when the text states one,
    else CO_OCCURS (named together)."""
    linked = set(keys)
    typed = [edge for edge in typed_pairs(extraction) if edge[0] in linked and edge[1] in linked]
    related = {frozenset(edge[:2]) for edge in typed}
    together = [
        (a, b, "CO_OCCURS")
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if frozenset((a, b)) not in related
    ]
    return typed + together


def _known_entities_in(memory: Memory) -> list[Mention]:
    """Entities this user already has, named again in the text: the extractor's recall grows with the graph
    (spaCy's small English model misses names like "React" that an earlier memory established)."""
    text = entity_key(memory.content)
    # The database finds the keys inside the text (instr / strpos): only those rows come back, not all of them.
    named = (
        Entity.objects.filter(user=memory.user)
        .annotate(position=StrIndex(Value(text), F("key")))
        .filter(position__gt=0)
        .order_by()
    )
    mentions = []
    for key, name, entity_type in named.values_list("key", "name", "entity_type"):
        if len(key) < 2:
            continue
        if key.isascii() and not re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", text):
            continue  # "java" inside "javascript" is not a mention
        mentions.append(Mention(name, entity_type))
    return mentions


def _strengthen(memory: Memory, source: Entity, target: Entity, relation_type: str) -> None:
    between = Relation.objects.filter(
        Q(source=source, target=target) | Q(source=target, target=source), user=memory.user
    )
    if relation_type == "CO_OCCURS":
        if between.exclude(relation_type="CO_OCCURS").exists():
            return  # the pair already has its typed edge: one edge per pair
    else:
        for co_occurrence in between.filter(relation_type="CO_OCCURS"):
            co_occurrence.delete()  # a typed edge replaces it (delete(), so the graph mirror hears of it)
    relation, created = Relation.objects.get_or_create(
        user=memory.user,
        source=source,
        target=target,
        relation_type=relation_type,
        defaults={"evidence": memory, "strength": 0.5 if relation_type == "CO_OCCURS" else 0.7},
    )
    if not created:
        relation.frequency += 1
        relation.strength = min(1.0, relation.strength + 0.1)
        relation.evidence = memory
        relation.save(update_fields=["frequency", "strength", "evidence", "updated_at"])


def _enrich_with_llm(memory: Memory) -> None:
    """With an LLM configured, typed entities and relations are added in the background (it costs a call)."""
    from core.llm import get_llm

    if get_llm() is not None:
        from memories.tasks import llm_extract_task

        dispatch_on_commit(llm_extract_task, str(memory.pk))


def _refresh_entity_frequencies(entity_ids: Iterable[Any]) -> None:
    for entity in Entity.objects.filter(pk__in=list(entity_ids)).annotate(links=Count("memory_links")):
        if entity.links == 0:
            entity.delete()  # an entity nothing mentions any more
        elif entity.frequency != entity.links:
            entity.frequency = entity.links
            entity.save(update_fields=["frequency", "updated_at"])  # save(), so the graph mirror hears of it


@transaction.atomic
def memory_update(
    *,
    memory: Memory,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    reason: str = "",
    **changes: Any,
) -> Memory:
    """Change fields of a memory and keep an edit record of each field's old and new value (a session by its
    key, a date as ISO text, so the record stays readable JSON after the session is gone)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise MemoryRequestError(
            f"cannot change {', '.join(sorted(unknown))}; editable: {', '.join(EDITABLE_FIELDS)}"
        )
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    content = changes.get("content", memory.content)
    memory_type = changes.get("memory_type", memory.memory_type)
    importance = changes.get("importance", memory.importance)
    changes["content"] = _validate(content, memory_type, importance)
    _check_detail(changes)
    _check_year(changes.get("expires_at"), "expires_at")
    given = {
        name: value
        for name, value in changes.items()
        if name in (*_SCREENED_TEXT, "metadata") and value != getattr(memory, name)
    }
    screened, found = _screened_fields(memory.user, given, "the edit")
    changes.update(screened)
    if found:
        changes["metadata"] = {**changes.get("metadata", memory.metadata), "privacy": found}
    diff = {
        field: [_recorded(getattr(memory, field)), _recorded(value)]
        for field, value in changes.items()
        if getattr(memory, field) != value
    }
    if not diff:
        return memory
    for name in diff:
        setattr(memory, name, changes[name])
    if "content" in diff:
        memory.token_count = count_tokens(memory.content)
    if "memory_type" in diff and "expires_at" not in changes:
        memory.expires_at = (
            timezone.now() + WORKING_MEMORY_TTL if memory.memory_type == MemoryType.WORKING else None
        )
    memory.mirror_state = MirrorState.PENDING
    _save_mirrored(memory)
    MemoryEdit.objects.create(
        memory=memory, editor=editor, api_key=api_key, via=via, changes=diff, reason=reason
    )
    if "content" in diff or "memory_type" in diff:
        memory.facts.all().delete()  # what it states changed: index it again
        _index_facts(curation.Curator(memory.user), [memory])
    if "content" in diff or memory.memory_type in GRAPH_TYPES and "memory_type" in diff:
        link_entities(memory)
    _mirror_on_commit([memory.pk])
    return memory


def _recorded(value: Any) -> Any:
    """A field's value as an edit record keeps it: JSON, a session by its key and a date as ISO text."""
    if isinstance(value, AgentSession):
        return value.key
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def version_before(edit: MemoryEdit) -> dict[str, Any]:
    """The restorable fields as they were just before `edit`: each field's old value in the earliest edit, from
    `edit` on, that changed it (later edits are undone too). Values are as recorded (see _recorded)."""
    newer_first = (
        MemoryEdit.objects.filter(memory_id=edit.memory_id)
        .filter(Q(created_at__gt=edit.created_at) | Q(created_at=edit.created_at, pk__gte=edit.pk))
        .order_by("-created_at", "-pk")
    )
    version: dict[str, Any] = {}
    for later in newer_first:
        if not isinstance(later.changes, dict):
            continue
        for name, pair in later.changes.items():
            if name in RESTORABLE_FIELDS and isinstance(pair, list) and len(pair) == 2:
                version[name] = pair[0]
    return version


@transaction.atomic
def memory_restore_version(
    *, memory: Memory, edit: MemoryEdit, via: str, editor: User | None = None
) -> Memory:
    """Bring a memory back to how it read just before `edit`. The restore is an edit of its own, with the
    reason, so it can be restored past in turn; the vector is re-mirrored when the text changes."""
    if edit.memory_id != memory.pk:
        raise MemoryRequestError("that edit belongs to another memory")
    version = version_before(edit)
    if not version:
        raise MemoryRequestError("that edit changed nothing that can be restored (only archive or counts)")
    if "session" in version:
        key = version["session"]
        version["session"] = session_for_key(user=memory.user, key=key) if key else None
    if "expires_at" in version:
        stamp = version["expires_at"]
        version["expires_at"] = datetime.fromisoformat(stamp) if stamp else None
    when = timezone.localtime(edit.created_at)
    edits_before = memory.edits.count()
    restored = memory_update(
        memory=memory,
        via=via,
        editor=editor,
        reason=f"restored the version from before the edit of {when:%Y-%m-%d %H:%M:%S}",
        **version,
    )
    if restored.edits.count() == edits_before:
        raise MemoryRequestError("the memory already reads like that version: there is nothing to restore")
    return restored


@transaction.atomic
def memory_archive(*, memory: Memory, via: str, editor=None, api_key=None, archived: bool = True) -> Memory:
    """Hide a memory from search (its point is removed) without deleting it, or bring it back."""
    new_value = timezone.now() if archived else None
    if (memory.archived_at is None) == (new_value is None):
        return memory
    MemoryEdit.objects.create(
        memory=memory,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={"archived_at": [_iso(memory.archived_at), _iso(new_value)]},
    )
    memory.archived_at = new_value
    memory.mirror_state = MirrorState.PENDING
    _save_mirrored(memory, update_fields=["archived_at", "mirror_state", "updated_at"])
    _mirror_on_commit([memory.pk])
    return memory


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


@transaction.atomic
def memories_delete(*, user: User, memory_ids: Sequence[Any]) -> int:
    """Delete the given memories of `user` (others' ids are ignored); returns how many were deleted."""
    memories = Memory.objects.filter(user=user, pk__in=list(memory_ids))
    ids = [str(pk) for pk in memories.values_list("pk", flat=True)]
    entity_ids = set(MemoryEntity.objects.filter(memory_id__in=ids).values_list("entity_id", flat=True))
    Memory.objects.filter(pk__in=ids).delete()  # their points go with the rows (memories.signals)
    _refresh_entity_frequencies(entity_ids)
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
    """Hello-Agents' forgetting, always scoped to one user; expired working memories go in every strategy."""
    if strategy not in FORGET_STRATEGIES:
        raise MemoryRequestError(
            f"strategy must be one of: {', '.join(FORGET_STRATEGIES)} (got {strategy!r})"
        )
    if not 0 <= max_age_days <= MAX_AGE_DAYS:
        raise MemoryRequestError(f"max_age_days must be between 0 and {MAX_AGE_DAYS:,} (got {max_age_days})")
    if not 0 <= max_capacity <= MAX_CAPACITY:
        raise MemoryRequestError(f"max_capacity must be between 0 and {MAX_CAPACITY:,} (got {max_capacity})")
    now = timezone.now()
    memories = Memory.objects.filter(user=user)
    if memory_types:
        memories = memories.filter(memory_type__in=_checked_types(memory_types))
    doomed = set(
        memories.filter(memory_type=MemoryType.WORKING, expires_at__lte=now).values_list("pk", flat=True)
    )
    if strategy == "importance_based":
        doomed |= set(memories.filter(importance__lt=threshold).values_list("pk", flat=True))
    elif strategy == "time_based":
        doomed |= set(
            memories.filter(created_at__lt=now - timedelta(days=max_age_days)).values_list("pk", flat=True)
        )
    else:
        for memory_type in memory_types or MemoryType.values:
            capacity = WORKING_MEMORY_CAPACITY if memory_type == MemoryType.WORKING else max_capacity
            ranked = memories.filter(memory_type=memory_type).order_by("-importance", "-created_at")
            doomed |= set(ranked.values_list("pk", flat=True)[capacity:])
    return memories_delete(user=user, memory_ids=list(doomed))


def _checked_types(memory_types: Sequence[str]) -> list[str]:
    unknown = [t for t in memory_types if t not in MemoryType.values]
    if unknown:
        raise MemoryRequestError(
            f"unknown memory type(s) {', '.join(map(str, unknown))}; valid: {', '.join(MemoryType.values)}"
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
        raise MemoryRequestError("from_type and to_type must differ")
    candidates = (
        Memory.objects.for_user(user)
        .active()
        .filtered(memory_types=[from_type], session=session, min_importance=importance_threshold)
    )
    promoted = []
    for memory in candidates.select_for_update():
        memory.memory_type = to_type
        memory.importance = min(1.0, memory.importance * CONSOLIDATION_BOOST)
        memory.expires_at = timezone.now() + WORKING_MEMORY_TTL if to_type == MemoryType.WORKING else None
        memory.mirror_state = MirrorState.PENDING
        _save_mirrored(memory)
        MemoryEdit.objects.create(
            memory=memory, via=EditVia.SYSTEM, changes={"memory_type": [from_type, to_type]}
        )
        if to_type in GRAPH_TYPES and from_type not in GRAPH_TYPES:
            link_entities(memory)
        promoted.append(memory)
    if to_type in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
        # What a promotion repeats or outdates goes to the review queue: consolidation changes nothing else.
        from memories import cleaning

        if to_type == MemoryType.SEMANTIC:
            _index_facts(curation.Curator(user), promoted)
        cleaning.queue(user, cleaning.propose_for(user, promoted))
    _mirror_on_commit(memory.pk for memory in promoted)
    return promoted


def memories_clear(*, user: User) -> int:
    """Delete every memory of this user, and only this user's; their points and nodes go with the rows
    (memories.signals)."""
    ids = list(Memory.objects.filter(user=user).values_list("pk", flat=True))
    with transaction.atomic():
        Memory.objects.filter(pk__in=ids).delete()
        Entity.objects.filter(user=user).delete()
    return len(ids)


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


def importance_weight(importance: float) -> float:
    """Hello-Agents' importance weighting of a relevance score."""
    return 0.8 + 0.4 * importance


def recency_score(age: timedelta) -> float:
    return 1.0 / (1.0 + max(age.total_seconds(), 0) / 86400)


__all__ = [
    "MemoryRequestError",
    "NewMemory",
    "memory_archive",
    "memory_bulk_create",
    "memory_create",
    "memory_reinstate",
    "memory_restore_version",
    "memory_update",
    "memory_write",
    "memory_write_undo",
    "memories_clear",
    "memories_consolidate",
    "memories_delete",
    "memories_forget",
    "record_access",
    "session_for_key",
]
