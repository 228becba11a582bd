"""The knowledge API's types: documents, chunks, search and ask, and the namespace rule other apps share."""

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import BaseModel

from core import hybrid
from core.limits import MAX_DOCUMENT_TEXT_CHARS, MAX_LIST_ITEMS, MAX_QUERY_CHARS
from core.schemas import BodySchema, Flag, Number, Whole, text_rules
from core.tooling import LANGUAGE_RULE, ReplyLanguage
from knowledge.curation import MAX_CHUNK_CHARS
from knowledge.models import Chunk, ChunkEdit, Document
from knowledge.services import NAMESPACE
from knowledge.tools import ACTIONS as RAG_TOOL_ACTIONS

# The rule knowledge.services.check_namespace applies, as a schema pattern (which also refuses what it strips).
Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE.pattern, description="Letters, digits, '_', '-' and '.', at most 100 characters."
    ),
]


class DocumentOut(Schema):
    id: UUID
    title: str
    namespace: str
    original_name: str
    mime: str
    size: int
    sha256: str
    status: str
    progress: int
    # The stored English, as API clients have always read it (and may match on); the pages show it in the
    # reader's language from the row's message key (Document.error_shown, core.stored_text).
    error: str
    notice: str = Field(
        description="What to know about a document that did not fail (an image with no text)."
    )
    chunk_size: int
    chunk_overlap: int
    chunk_count: int
    created_at: datetime
    ready_at: datetime | None

    @staticmethod
    def resolve_chunk_count(document: Document) -> int:
        return getattr(document, "chunk_count", None) or document.chunks.count()


class DocumentDetailOut(DocumentOut):
    markdown: str


class UploadOut(DocumentOut):
    duplicate: bool


class StatusOut(Schema):
    id: UUID
    status: str
    progress: int
    error: str


LOCATION = 'Where in the document: "page 3" or "pages 3–4" (PDF), "sheet Sales" (workbook), else "".'


class ChunkOut(Schema):
    id: UUID
    document_id: UUID
    ordinal: int
    heading_path: str
    text: str
    token_count: int
    location: str = Field(description=LOCATION)
    page: int | None = Field(description="The PDF page the text starts on (1-based).")
    page_end: int | None = Field(description="The PDF page it ends on.")
    sheet: str
    enabled: bool = Field(description="false: kept but never returned by a search (it has no vector).")
    edited_at: datetime | None = Field(description="When a person last changed its text.")
    mirror_state: str

    @staticmethod
    def resolve_page(chunk: Chunk) -> int | None:
        return chunk.page_start


class ChunkEditOut(Schema):
    id: int
    via: str
    editor: str | None = Field(description="The user who made the change on a page; null through an API key.")
    api_key: str | None = Field(description="The name of the key it was made with.")
    changes: dict[str, list] = Field(description='{"text": [old, new]} and/or {"enabled": [old, new]}.')
    created_at: datetime

    @staticmethod
    def resolve_editor(edit: ChunkEdit) -> str | None:
        return edit.editor.get_username() if edit.editor else None

    @staticmethod
    def resolve_api_key(edit: ChunkEdit) -> str | None:
        return edit.api_key.name if edit.api_key else None


class ChunkDetailOut(ChunkOut):
    history: list[ChunkEditOut] = Field(description="Its changes, newest first.")

    @staticmethod
    def resolve_history(chunk: Chunk) -> list[ChunkEdit]:
        return list(chunk.edits.select_related("editor", "api_key"))


class ChunkPatch(BodySchema):
    text: Annotated[str, *text_rules(MAX_CHUNK_CHARS, min_chars=1)] | None = Field(
        None, description="The new text: re-embedded, the old text kept in the chunk's history."
    )
    enabled: Flag | None = Field(
        None, description="false keeps the chunk out of every search; true returns it."
    )


class RechunkIn(BodySchema):
    chunk_size: Whole = Field(..., ge=50, le=8000, description="Tokens per chunk.")
    chunk_overlap: Whole = Field(..., ge=0, lt=4000, description="Tokens; less than half of chunk_size.")
    wait: Flag = Field(False, description="true: answer once the document is ready again.")


class KnowledgeSearchIn(BodySchema):
    query: Annotated[str, *text_rules(MAX_QUERY_CHARS, min_chars=1)]
    namespaces: list[Namespace] = Field(default_factory=lambda: ["default"], max_length=MAX_LIST_ITEMS)
    limit: Whole = Field(5, ge=1, le=50)
    min_score: Number = Field(
        0.0,
        ge=0.0,
        le=100.0,
        description="Minimum fused score, in standard deviations above the query's candidates (σ); the "
        "relevance floor applies whatever this says.",
    )
    mqe: Flag = False
    hyde: Flag = False


class ChunkHitOut(Schema):
    chunk_id: UUID
    document_id: UUID
    document_title: str
    heading_path: str
    ordinal: int
    location: str = Field(description=LOCATION)
    page: int | None
    page_end: int | None
    sheet: str
    text: str
    score: float = Field(description=hybrid.SCORE_PARTS["fused"])
    scores: dict[str, float] = Field(
        description=" ".join(f"`{name}`: {text}" for name, text in hybrid.SCORE_PARTS.items())
        + " `dense_<model>`: that model's raw cosine similarity, for each model that reads both texts' languages"
        " (an English-only model has no say on Chinese). Passages under every model's noise floor and without"
        " half the query's words are left out."
    )


class KnowledgeSearchOut(Schema):
    results: list[ChunkHitOut]
    notice: str
    queries: list[str]


class AskIn(KnowledgeSearchIn):
    max_chars: Whole = Field(1200, ge=100, le=20_000, description="Characters of each cited passage.")


class CitationOut(Schema):
    n: int
    chunk_id: UUID
    document_id: UUID
    document_title: str
    heading_path: str
    ordinal: int
    location: str = Field(description=LOCATION)
    page: int | None
    page_end: int | None
    sheet: str
    score: float
    text: str


class AskOut(Schema):
    answer: str
    citations: list[CitationOut]
    llm_used: bool
    notice: str


class DocumentFilter(Schema):
    namespace: Namespace | None = None
    status: (
        Literal["queued", "converting", "chunking", "embedding", "ready", "failed", "cancelled", "paused"]
        | None
    ) = None


class RagToolIn(BaseModel):
    """RAGTool.run's dict: the action and the parameters it reads, each typed as its REST counterpart; others
    are ignored, as Hello-Agents' tool did."""

    action: Literal[RAG_TOOL_ACTIONS]  # type: ignore[valid-type]
    language: ReplyLanguage | None = Field(None, description=LANGUAGE_RULE)
    namespace: Namespace | None = None
    # add_text (add_document takes a server path, which the API refuses: upload to POST /documents instead)
    text: Annotated[str, *text_rules(MAX_DOCUMENT_TEXT_CHARS)] | None = None
    document_id: Annotated[str, *text_rules(255)] | None = Field(None, description="The document's title.")
    file_path: str | None = None
    chunk_size: Whole | None = Field(None, ge=50, le=8000)
    chunk_overlap: Whole | None = Field(None, ge=0, lt=4000, description="Less than half of chunk_size.")
    # search, ask
    query: Annotated[str, *text_rules(MAX_QUERY_CHARS)] | None = None
    question: Annotated[str, *text_rules(MAX_QUERY_CHARS)] | None = None
    limit: Whole | None = Field(None, ge=1, le=50)
    min_score: Number | None = Field(
        None, ge=0.0, le=100.0, description="Minimum fused score in σ (knowledge search)."
    )
    enable_advanced_search: Flag | None = None
    max_chars: Whole | None = Field(None, ge=100, le=20000)
    include_citations: Flag | None = None
    # clear
    confirm: Flag | None = Field(None, description="clear needs true.")

    def parameters(self) -> dict:
        """The dict the tool takes: what the caller sent, without nulls (a null means "the default")."""
        return {
            name: value for name, value in self.model_dump(exclude_unset=True).items() if value is not None
        }
