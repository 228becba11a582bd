from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, model_validator

from core.acting import USER_PARAM
from core.limits import (
    MAX_CONTENT_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_SHORT_TEXT_CHARS,
    STORABLE_PATTERN,
    InputRejected,
    check_json,
)
from core.schemas import (
    BodySchema,
    Flag,
    FormFlag,
    Metadata,
    Number,
    Timestamp,
    Whole,
    text_rules,
)
from core.tooling import LANGUAGE_RULE, ReplyLanguage
from memories.actions.forgetting import MAX_AGE_DAYS, MAX_CAPACITY
from memories.actions.rules import PERCEPTUAL_MODALITIES
from memories.models import Memory
from memories.retrieval import SCORE_PARTS
from memories.tools import ACTIONS as MEMORY_TOOL_ACTIONS
from memories.types import NAMES as MEMORY_TYPE_NAMES
from memories.types import WORKING

NAMES_RULE = f"Each at most {MAX_NAME_CHARS} characters."
# The memory types' names, from their policies (memories.types).
MemoryTypeName = Literal[MEMORY_TYPE_NAMES]  # type: ignore[valid-type]
Content = Annotated[str, *text_rules(MAX_CONTENT_CHARS, min_chars=1)]
ShortText = Annotated[str, *text_rules(MAX_SHORT_TEXT_CHARS)]
Name = Annotated[str, *text_rules(MAX_NAME_CHARS)]
# A perceptual memory's description, sent as a form field beside its file.
Description = Annotated[str, *text_rules(MAX_CONTENT_CHARS)]
ProposalStatus = Literal["pending", "approved", "rejected", "undone"]
OriginName = Literal["page", "api", "mcp", "openai", "tool", "admin", "system", "chat", "doc", "import"]
ORIGIN_RULE = (
    "How the memory was first written: page (the console), api (the JSON API), mcp, openai (the "
    "OpenAI-compatible endpoint), chat (the chat page), doc (from a document), import (a data archive), tool "
    "(MemoryTool in Python), admin, system."
)
SessionKey = Annotated[str, *text_rules(MAX_NAME_CHARS, min_chars=1)]
Importance = Annotated[Number, Field(ge=0.0, le=1.0)]


class MemoryIn(BodySchema):
    content: Content
    memory_type: MemoryTypeName = WORKING.name
    importance: Importance = 0.5
    session_id: SessionKey | None = Field(
        None, description="Your name for the session; created on first use."
    )
    metadata: Metadata = Field(default_factory=dict)
    created_at: Timestamp | None = Field(None, description="Keep an imported memory's original date.")
    context: ShortText = ""
    outcome: ShortText = ""
    participants: list[Name] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)
    tags: list[Name] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)


class MemoryPatch(BodySchema):
    content: Content | None = None
    memory_type: MemoryTypeName | None = None
    importance: Importance | None = None
    metadata: Metadata | None = None
    context: ShortText | None = None
    outcome: ShortText | None = None
    participants: list[Name] | None = Field(None, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)
    tags: list[Name] | None = Field(None, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)
    archived: Flag | None = Field(None, description="true hides the memory from search; false restores it.")


class BulkIn(BodySchema):
    items: list[MemoryIn] = Field(..., min_length=1, max_length=1000)


WRITE_ACTIONS = (
    "What the write did: `add` stored a new memory; `supersede` stored it and marked the current facts it "
    "replaces (`superseded`); `duplicate` (the same text) and `merge` (the same fact in other words) stored "
    "nothing and counted the repeat on the existing memory, whose id is returned."
)
WriteAction = Literal["add", "duplicate", "merge", "supersede"]


class WriteOut(Schema):
    action: WriteAction = Field(description=WRITE_ACTIONS)
    reason: str = Field("", description="Why, for anything but `add`.")
    superseded: list[UUID] = Field(default_factory=list, description="The facts this one replaced.")


class BulkOut(Schema):
    ids: list[UUID] = Field(description="Per item, in order: the new memory, or the existing one it repeats.")
    actions: list[WriteAction] = Field(description="Per item, in order. " + WRITE_ACTIONS)


class MemoryOut(Schema):
    id: UUID
    content: str
    memory_type: str
    importance: float
    session_id: str | None
    metadata: dict[str, Any]
    token_count: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    archived_at: datetime | None
    last_accessed_at: datetime | None
    access_count: int
    mirror_state: str
    mirror_error: str
    context: str
    outcome: str
    participants: list[Any]
    tags: list[Any]
    modality: str
    has_file: bool
    seen_count: int = Field(description="How many times this memory was written: repeats are counted here.")
    last_seen_at: datetime | None
    sources: list[dict[str, Any]] = Field(
        description="Every write of it (at most the last 50): route, API key id, chat message, document, time."
    )
    valid_to: datetime | None = Field(description="When a newer fact replaced this one.")
    superseded_by: UUID | None = Field(description="The memory that replaced this one.")
    origin: OriginName = Field(description=ORIGIN_RULE)
    origin_key: int | None = Field(description="The API key it was written with (api, mcp, openai), if any.")
    origin_key_name: str | None = Field(description="That key's name.")

    @staticmethod
    def resolve_origin_key(memory: Memory) -> int | None:
        return memory.origin_key_id

    @staticmethod
    def resolve_origin_key_name(memory: Memory) -> str | None:
        return memory.origin_key.name if memory.origin_key_id and memory.origin_key else None

    @staticmethod
    def resolve_has_file(memory: Memory) -> bool:
        return bool(memory.file)

    @staticmethod
    def resolve_superseded_by(memory: Memory) -> UUID | None:
        return memory.superseded_by_id

    @staticmethod
    def resolve_session_id(memory: Memory) -> str | None:
        return memory.session.key if memory.session else None


class WrittenMemoryOut(MemoryOut):
    write: WriteOut


class SearchIn(BodySchema):
    user: int | None = Field(None, description=USER_PARAM)
    query: Annotated[str, *text_rules(MAX_QUERY_CHARS)]
    limit: Whole = Field(5, ge=1, le=100)
    memory_types: list[MemoryTypeName] | None = None
    min_importance: Importance = 0.0
    session_id: SessionKey | None = None
    time_range: tuple[Timestamp | None, Timestamp | None] | None = Field(
        None, description="[start, end], ISO 8601; either may be null."
    )
    include_superseded: Flag = Field(False, description="Also return facts a newer fact replaced.")
    tag: Name | None = Field(None, description="Only memories carrying this tag.")
    include_chat_copies: Flag = Field(
        False,
        description="Also return the working-memory copies of chat messages (a search within one session "
        "returns that session's anyway).",
    )


class ScoredMemoryOut(Schema):
    id: UUID
    content: str
    memory_type: str
    importance: float
    created_at: datetime
    session_id: str | None
    superseded_by: UUID | None = Field(None, description="Set when a newer fact replaced this one.")
    score: float = Field(description=SCORE_PARTS["score"])
    scores: dict[str, float] = Field(
        description="Why it ranked here, 0..1 unless noted. "
        + " ".join(f"`{name}`: {text}" for name, text in SCORE_PARTS.items() if name != "score")
        + " `dense_<model>`: that model's raw cosine similarity, for each model that reads both texts' languages"
        " (an English-only model has no say on Chinese)."
    )


class SearchOut(Schema):
    results: list[ScoredMemoryOut]
    notice: str = ""


class ForgetIn(BodySchema):
    """Forgetting deletes, so the strategy is never assumed: the body must name it."""

    strategy: Literal["importance_based", "time_based", "capacity_based"]
    threshold: Importance = 0.1
    max_age_days: Number = Field(30, ge=0, le=MAX_AGE_DAYS)
    max_capacity: Whole = Field(100, ge=0, le=MAX_CAPACITY)
    memory_types: list[MemoryTypeName] | None = None


class ForgetOut(Schema):
    forgotten: int


class ConsolidateIn(BodySchema):
    """Consolidation changes memories' types, so the body must name both."""

    from_type: MemoryTypeName
    to_type: MemoryTypeName
    importance_threshold: Importance = 0.7
    session_id: SessionKey | None = None


class ConsolidateOut(Schema):
    consolidated: list[UUID]


class SessionOut(Schema):
    id: UUID
    key: str
    title: str
    started_at: datetime
    ended_at: datetime | None
    memory_count: int = 0


class SessionDetailOut(SessionOut):
    memories: list[MemoryOut]


class EntityOut(Schema):
    id: UUID
    name: str
    key: str
    entity_type: str
    description: str
    frequency: int
    mirror_state: str
    created_at: datetime


class RelationOut(Schema):
    id: UUID
    source_id: UUID
    target_id: UUID
    source_name: str
    target_name: str
    relation_type: str
    strength: float
    frequency: int
    evidence_id: UUID | None

    @staticmethod
    def resolve_source_name(relation) -> str:
        return relation.source.name

    @staticmethod
    def resolve_target_name(relation) -> str:
        return relation.target.name


class EntityDetailOut(EntityOut):
    memories: list[MemoryOut]
    relations: list[RelationOut]


class NeighborOut(Schema):
    entity: EntityOut
    hops: int


class NeighborhoodOut(Schema):
    center: EntityOut
    neighbors: list[NeighborOut]
    relations: list[RelationOut]


class MergeIn(BodySchema):
    into: UUID = Field(..., description="The entity that remains; the one in the path is folded into it.")


class ProfileFactOut(Schema):
    id: UUID
    content: str
    memory_type: str
    importance: float
    seen_count: int
    created_at: datetime


class ProfileGroupOut(Schema):
    kind: Literal["identity", "work", "people", "preferences", "other", "recent"]
    label: str
    memories: list[ProfileFactOut]


class PersonOut(Schema):
    name: str
    relation: str | None = Field(description="Their relation to the user, when a memory states it.")
    memory_ids: list[UUID] = Field(description="The memories the profile read this person from.")


class ConflictOptionOut(Schema):
    value: str
    memories: list[ProfileFactOut] = Field(
        description="The memories stating it; none for the account's name."
    )


class ConflictOut(Schema):
    kind: Literal["identity", "work", "people", "preferences", "other", "recent"]
    attribute: str = Field(description='The fact in dispute: "name", "home", "employer", "likes:tea", …')
    options: list[ConflictOptionOut]


class ProfileOut(Schema):
    name: str = Field(
        description="What to call the user: the account's name, or the name their facts agree on."
    )
    groups: list[ProfileGroupOut] = Field(
        description="The user's current facts by kind, most important first; superseded ones are left out. "
        "The people group holds the memories relating the user to someone."
    )
    people: list[PersonOut] = Field(description="The people the user knows, their stated relations first.")
    conflicts: list[ConflictOut] = Field(
        description="Facts that cannot all be true (two names, two homes), to resolve; none of their memories "
        "is in a group."
    )

    @staticmethod
    def of(profile) -> dict:
        """The JSON shape of a memories.profile.Profile."""
        return {
            "name": profile.name,
            "groups": [
                {"kind": kind, "label": label, "memories": memories}
                for kind, label, memories in profile.sections
            ],
            "people": [
                {
                    "name": p.name,
                    "relation": p.relation,
                    "memory_ids": [m.pk for m in p.memories + p.mentions],
                }
                for p in profile.people
            ],
            "conflicts": [
                {
                    "kind": c.kind,
                    "attribute": c.attribute,
                    "options": [{"value": v, "memories": ms} for v, ms in c.options],
                }
                for c in profile.conflicts
            ],
        }


class ProposalMemoryOut(Schema):
    id: UUID
    content: str


class ProposalOut(Schema):
    id: int | None = Field(description="None in a dry run: nothing was queued.")
    action: Literal["merge", "supersede"] = Field(
        description="merge: fold `memory` into `target` (archived, its repeats counted on the target); "
        "supersede: `target` is the newer value of the fact `memory` states."
    )
    status: Literal["pending", "approved", "rejected", "undone"]
    reason: str
    memory: ProposalMemoryOut
    target: ProposalMemoryOut
    created_at: datetime | None = None
    decided_at: datetime | None = None


class DedupeIn(BodySchema):
    dry_run: Flag = Field(True, description="true: only list the proposals; false: queue them for review.")


class DedupeOut(Schema):
    proposals: list[ProposalOut]
    queued: int


class MemoryFilter(Schema):
    user: int | None = Field(None, description=USER_PARAM)
    memory_type: MemoryTypeName | None = None
    session_id: Name | None = None
    min_importance: float | None = Field(None, ge=0.0, le=1.0)
    max_importance: float | None = Field(None, ge=0.0, le=1.0)
    since: Timestamp | None = None
    until: Timestamp | None = None
    archived: FormFlag = False
    superseded: FormFlag | None = Field(
        None, description="true: only facts a newer one replaced; false: only current ones; unset: both."
    )
    q: Annotated[str, *text_rules(MAX_QUERY_CHARS)] | None = None
    tag: Name | None = Field(None, description="Only memories carrying this tag.")
    origin: OriginName | None = Field(None, description=ORIGIN_RULE)
    origin_key: int | None = Field(None, description="Only memories written with this API key (its id).")


Modality = Literal["text", *PERCEPTUAL_MODALITIES]  # type: ignore[valid-type]
TimeRange = tuple[Timestamp | None, Timestamp | None]


class TimeRangeIn(BaseModel):
    start: Timestamp | None = None
    end: Timestamp | None = None


class MemoryToolIn(BaseModel):
    """MemoryTool.run's dict: the action and the parameters it reads, each typed as its REST counterpart. `add`
    keeps parameters it does not know as the memory's metadata (Hello-Agents' event_type, concept, ...). A
    plain pydantic model: ninja's Schema reads declared fields only, and the unknown ones must reach the tool."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            # Any JSON value, held to metadata's rules (nesting, size, text) as a whole: spelled out per value,
            # the schema made request generators (schemathesis) use gigabytes.
            "additionalProperties": True,
            "propertyNames": {"maxLength": MAX_NAME_CHARS, "pattern": STORABLE_PATTERN},
        },
    )

    action: Literal[MEMORY_TOOL_ACTIONS]  # type: ignore[valid-type]
    session_id: SessionKey | None = None
    language: ReplyLanguage | None = Field(None, description=LANGUAGE_RULE)
    # add, update
    content: Content | None = None
    memory_type: MemoryTypeName | None = None
    importance: Importance | None = None
    created_at: Timestamp | None = None
    context: ShortText | None = None
    outcome: ShortText | None = None
    participants: list[Name] | Name | None = Field(None, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)
    tags: list[Name] | Name | None = Field(None, max_length=MAX_LIST_ITEMS, description=NAMES_RULE)
    file_path: Annotated[str, *text_rules(1000)] | None = Field(None, description="Kept in metadata.")
    modality: Modality | None = None
    # search, summary
    query: Annotated[str, *text_rules(MAX_QUERY_CHARS)] | None = None
    limit: Whole | None = Field(None, ge=1, le=100)
    memory_types: list[MemoryTypeName] | MemoryTypeName | None = None
    min_importance: Importance | None = None
    time_range: TimeRange | TimeRangeIn | None = Field(None, description="[start, end] or {start, end}.")
    include_superseded: Flag | None = None
    # update, remove
    memory_id: Annotated[str, *text_rules(100)] | None = None
    # forget, consolidate, clear_all
    strategy: Literal["importance_based", "time_based", "capacity_based"] | None = None
    threshold: Importance | None = None
    max_age_days: Number | None = Field(None, ge=0, le=MAX_AGE_DAYS)
    from_type: MemoryTypeName | None = None
    to_type: MemoryTypeName | None = None
    importance_threshold: Importance | None = None
    confirm: Flag | None = Field(None, description="clear_all needs true.")

    @model_validator(mode="after")
    def _extras_are_metadata(self) -> "MemoryToolIn":
        # What add keeps as metadata is held to metadata's rules whichever the action, as the schema says.
        try:
            check_json(self.model_extra or {}, "the parameters kept as metadata")
        except InputRejected as exc:
            raise ValueError(str(exc)) from None
        return self

    def parameters(self) -> dict:
        """The dict the tool takes: what the caller sent, without nulls (a null means "the default")."""
        sent = self.model_dump(exclude_unset=True)
        if isinstance(self.time_range, TimeRangeIn):
            sent["time_range"] = [self.time_range.start, self.time_range.end]
        return {name: value for name, value in sent.items() if value is not None}
