"""Documents, chunks, knowledge search/ask and the RAG tool over the JSON API, scoped to the key's owner."""

from typing import Any, cast
from uuid import UUID

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import File, Form, Query, Router, Status, UploadedFile
from ninja.pagination import paginate

from core.auth import WRITE_AUTH, ApiRequest, require_write
from core.llm import Budget
from core.pagination import BoundedLimitOffset
from core.schemas import FormFlag
from core.tooling import ToolOut, ToolRefusalOut
from knowledge import services
from knowledge.curation import chunk_update
from knowledge.models import Chunk, ChunkEditVia, Document
from knowledge.pipeline import formats
from knowledge.schemas import (
    AskIn,
    AskOut,
    ChunkDetailOut,
    ChunkOut,
    ChunkPatch,
    DocumentDetailOut,
    DocumentFilter,
    DocumentOut,
    KnowledgeSearchIn,
    KnowledgeSearchOut,
    Namespace,
    RagToolIn,
    RechunkIn,
    StatusOut,
    UploadOut,
)
from knowledge.search import ask, search_chunks
from knowledge.tools import RAGTool

# The app's one router, mounted at the API's root; the RAG tool is tagged with the other tools.
router = Router(tags=["knowledge"])

LLM_COST = (
    " `mqe` (multi-query expansion) adds one LLM call and a search per extra query; `hyde` adds one LLM call. "
    "Both run only when an LLM is configured (LLM_BASE_URL); otherwise the notice says they were skipped. "
    "The model calls of one request share LLM_TURN_SECONDS (120 by default), and stop before the next call or "
    "chunk once the client has disconnected (logged as 499)."
)


def _owner(request: HttpRequest):
    return cast(ApiRequest, request).auth.user


def _document(request: HttpRequest, document_id: UUID) -> Document:
    return get_object_or_404(Document, pk=document_id, user=_owner(request))


@router.post(
    "/documents", response={201: UploadOut, 200: UploadOut}, summary="Upload a document", auth=WRITE_AUTH
)
def upload_document(
    request: HttpRequest,
    file: File[UploadedFile],
    namespace: Namespace = Form("default"),  # noqa: B008 (ninja's idiom: the call declares a form field)
    # The bounds services.check_chunking enforces; the overlap's, relative to chunk_size, is said in words.
    chunk_size: int = Form(800, ge=50, le=8000, description="Tokens per chunk."),
    chunk_overlap: int = Form(100, ge=0, lt=4000, description="Tokens; less than half of chunk_size."),
    wait: FormFlag = Form(False),  # noqa: B008
):
    accepted = services.document_create(
        user=_owner(request),
        file=file,
        namespace=namespace,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        background=not wait,
    )
    document = Document.objects.get(pk=accepted.document.pk)
    cast(Any, document).duplicate = not accepted.created  # read by the response schema
    return Status(201 if accepted.created else 200, document)


# The types come from the format registry (knowledge.pipeline.formats), as the upload's check does.
upload_document.__doc__ = (
    f"Multipart upload ({', '.join(f.name for f in formats.formats() if f.family != 'image')}, and images "
    f"({', '.join(f.name for f in formats.formats() if f.family == 'image')}): without an LLM to describe it, an "
    "image has no text to index and ends ready with no chunks and a `notice` saying so). Ingestion runs in the "
    "background: poll GET /documents/{id}/status, or send wait=true to get the answer once the document is "
    "searchable. The same file again in the namespace answers 200 with the existing document and duplicate=true."
)


@router.get("/documents", response=list[DocumentOut], summary="List documents")
@paginate(BoundedLimitOffset)
def list_documents(request: HttpRequest, filters: Query[DocumentFilter]):
    documents = Document.objects.for_user(_owner(request)).with_chunk_count()
    if filters.namespace:
        documents = documents.filter(namespace=filters.namespace)
    if filters.status:
        documents = documents.filter(status=filters.status)
    return documents


@router.get(
    "/documents/{uuid:document_id}", response=DocumentDetailOut, summary="A document with its Markdown"
)
def get_document(request: HttpRequest, document_id: UUID):
    return _document(request, document_id)


@router.get(
    "/documents/{uuid:document_id}/status", response=StatusOut, summary="Ingestion state and progress"
)
def get_document_status(request: HttpRequest, document_id: UUID):
    return _document(request, document_id)


@router.delete(
    "/documents/{uuid:document_id}",
    response={204: None},
    summary="Delete a document, its chunks and vectors",
    auth=WRITE_AUTH,
)
def delete_document(request: HttpRequest, document_id: UUID):
    services.document_delete(document=_document(request, document_id))
    return Status(204, None)


@router.post(
    "/documents/{uuid:document_id}/retry",
    response=StatusOut,
    summary="Ingest a failed, cancelled or stalled document again",
    auth=WRITE_AUTH,
)
def retry_document(request: HttpRequest, document_id: UUID):
    """Stalled: still queued or in progress, but untouched for 15 minutes (its worker was killed). Such documents
    are also resumed on their own: when the server starts on the embedded default, and by the periodic sweep."""
    return services.document_retry(document=_document(request, document_id))


@router.post(
    "/documents/{uuid:document_id}/cancel",
    response=StatusOut,
    summary="Cancel an ingestion in progress",
    auth=WRITE_AUTH,
)
def cancel_document(request: HttpRequest, document_id: UUID):
    return services.document_cancel(document=_document(request, document_id))


@router.post(
    "/documents/{uuid:document_id}/rechunk",
    response=DocumentOut,
    summary="Chunk a document again with other settings",
    auth=WRITE_AUTH,
)
def rechunk_document(request: HttpRequest, document_id: UUID, payload: RechunkIn):
    """Replaces every chunk: edited and disabled chunks come back as the new settings cut the text, and their
    history goes with them. The document goes through queued → converting → chunking → embedding → ready again
    (poll GET /documents/{id}/status, or send wait=true). 409 while the document is being ingested."""
    document = services.document_rechunk(
        document=_document(request, document_id),
        chunk_size=payload.chunk_size,
        chunk_overlap=payload.chunk_overlap,
        background=not payload.wait,
    )
    return Document.objects.with_chunk_count().get(pk=document.pk)


@router.get("/documents/{uuid:document_id}/chunks", response=list[ChunkOut], summary="A document's chunks")
@paginate(BoundedLimitOffset)
def list_chunks(request: HttpRequest, document_id: UUID):
    """Disabled chunks too (`enabled` false), in the document's order."""
    return Chunk.objects.filter(document=_document(request, document_id)).order_by("ordinal")


def _chunk(request: HttpRequest, document_id: UUID, chunk_id: UUID) -> Chunk:
    return get_object_or_404(Chunk, pk=chunk_id, document=_document(request, document_id))


@router.get(
    "/documents/{uuid:document_id}/chunks/{uuid:chunk_id}",
    response=ChunkDetailOut,
    summary="A chunk with its edit history",
)
def get_chunk(request: HttpRequest, document_id: UUID, chunk_id: UUID):
    return _chunk(request, document_id, chunk_id)


@router.patch(
    "/documents/{uuid:document_id}/chunks/{uuid:chunk_id}",
    response=ChunkDetailOut,
    summary="Edit, disable or enable a chunk (the change is recorded)",
    auth=WRITE_AUTH,
)
def update_chunk(request: HttpRequest, document_id: UUID, chunk_id: UUID, payload: ChunkPatch):
    """`text`: the chunk's new text, embedded again; the old text is kept in its history. `enabled`: false keeps
    the chunk (and its history) but no search, ask, RAG tool or chat returns it; true returns it to them. A field
    left out or null is left as it is; a change that changes nothing records nothing."""
    changes = {name: value for name, value in payload.dict(exclude_unset=True).items() if value is not None}
    chunk = _chunk(request, document_id, chunk_id)
    if changes:
        chunk_update(chunk=chunk, via=ChunkEditVia.API, api_key=cast(ApiRequest, request).auth, **changes)
    return _chunk(request, document_id, chunk_id)


@router.post("/knowledge/search", response=KnowledgeSearchOut, summary="Hybrid search over chunks")
def knowledge_search(request: HttpRequest, payload: KnowledgeSearchIn):
    result = search_chunks(user=_owner(request), budget=Budget.for_request(request), **payload.dict())
    results = [hit.as_dict() for hit in result.hits]
    return {"results": results, "notice": result.notice, "queries": result.queries}


knowledge_search.__doc__ = "Dense + lexical fused per namespace, filtered by min_score." + LLM_COST


@router.post("/knowledge/ask", response=AskOut, summary="Answer with numbered citations")
def knowledge_ask(request: HttpRequest, payload: AskIn):
    data = payload.dict()
    answer = ask(user=_owner(request), question=data.pop("query"), budget=Budget.for_request(request), **data)
    return {
        "answer": answer.text,
        "citations": answer.citations,
        "llm_used": answer.llm_used,
        "notice": answer.notice,
    }


knowledge_ask.__doc__ = (
    "An answer citing passages as [1], [2] with the chunks and documents behind each number; without an LLM, "
    "the best passages with the same citations and a notice." + LLM_COST
)


@router.post(
    "/tools/rag",
    tags=["tools"],
    response={200: ToolOut, frozenset({404, 422}): ToolRefusalOut},
    summary="Hello-Agents' RAGTool.run({...})",
)
def rag_tool(request: HttpRequest, payload: RagToolIn):
    """The same dict RAGTool.run takes: {"action": "add_text"|"search"|"ask"|"stats"|"clear", "namespace": ...},
    each parameter typed as on the REST routes. add_document needs a server path, so over the API upload to
    POST /api/v1/documents instead. A refused action answers 422 with the tool's reply and `detail`."""
    parameters = payload.parameters()
    if RAGTool.writes(parameters):
        require_write(request)
    tool = RAGTool(
        rag_namespace=parameters.get("namespace", "default"),
        user_id=_owner(request).get_username(),
        allow_file_paths=False,
        budget=Budget.for_request(request),
    )
    reply = tool.execute(parameters)
    return Status(reply.status, reply.answer())
