from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema

from console.evaluation import MAX_TEXT
from console.models import GoldenQuestion
from core.limits import MAX_LIST_ITEMS
from core.schemas import BodySchema, Flag, text_rules
from knowledge.schemas import Namespace

TargetName = Literal["memories", "knowledge"]
ScopeName = Literal["all", "memories", "knowledge"]
QuestionText = Annotated[str, *text_rules(MAX_TEXT, min_chars=1)]
Note = Annotated[str, *text_rules(5000)]


class QuestionIn(BodySchema):
    text: QuestionText
    target: TargetName = "memories"
    expected_memory_ids: list[UUID] = Field(default_factory=list, max_length=1000)
    expected_chunk_ids: list[UUID] = Field(default_factory=list, max_length=1000)
    namespaces: list[Namespace] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="Knowledge: the namespaces searched; empty: the expected chunks' ones.",
    )
    no_answer: Flag = Field(
        False, description="The right result is nothing: the search should return nothing."
    )
    note: Note = ""


class QuestionPatch(BodySchema):
    text: QuestionText | None = None
    target: TargetName | None = None
    expected_memory_ids: list[UUID] | None = Field(None, max_length=1000)
    expected_chunk_ids: list[UUID] | None = Field(None, max_length=1000)
    namespaces: list[Namespace] | None = Field(None, max_length=MAX_LIST_ITEMS)
    no_answer: Flag | None = None
    note: Note | None = None


class QuestionOut(Schema):
    id: int
    text: str
    target: str
    expected_memory_ids: list[UUID]
    expected_chunk_ids: list[UUID]
    namespaces: list[str]
    no_answer: bool
    needs_answers: bool
    note: str
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_expected_memory_ids(question: GoldenQuestion) -> list[UUID]:
        return sorted(memory.pk for memory in question.expected_memories.all())

    @staticmethod
    def resolve_expected_chunk_ids(question: GoldenQuestion) -> list[UUID]:
        return sorted(chunk.pk for chunk in question.expected_chunks.all())


class RunIn(BodySchema):
    scope: ScopeName = "all"


class RunOut(Schema):
    id: int
    scope: str
    created_at: datetime
    duration_ms: int
    question_count: int
    skipped_count: int
    summary: dict[str, Any]
    settings: dict[str, Any]
    previous_id: int | None = Field(None, description="The previous run of the same scope.")
    deltas: dict[str, float | None] = Field(
        default_factory=dict, description="Overall metrics minus the previous run's."
    )
    settings_changed: bool = False


class RunDetailOut(RunOut):
    results: list[dict[str, Any]]


class ImportOut(Schema):
    username: str
    counts: dict[str, int] = Field(description="Rows written, per model.")
    merged: dict[str, int] = Field(
        description="Rows matched to one this account already had (a session by its key, a document by its "
        "namespace and content, an entity by its key, ...), per model."
    )
