"""The knowledge pages: library (upload, live ingestion rows, filters), document detail, retrieval test.

Every query starts from subject_user(request) (the signed-in user, or the one a staff member opened: core.acting),
so another user's document is a 404 on every page and action; writes go through knowledge.services. Rows of
documents being ingested poll their own row partial every second and stop once the state is final (the returned
row has no hx-trigger).
"""

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.uploadedfile import UploadedFile
from django.core.paginator import Paginator
from django.db import models
from django.db.models import Count, Prefetch, Q
from django.db.models.functions import Length, Substr
from django.http import FileResponse, Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import (
    HttpResponseClientRefresh,
    push_url,
    trigger_client_event,
)

from core import hybrid
from core.acting import subject_user, subject_view
from core.disk import DiskFull
from core.llm import Budget
from core.pages import AuthenticatedHttpRequest, from_row, navigate, next_url
from core.querystrings import clean_query
from knowledge import services
from knowledge.forms import ACTIVE, LibraryFilterForm, RechunkForm, SearchForm, UploadForm
from knowledge.markdown import render_markdown
from knowledge.models import Chunk, ChunkEdit, Document, DocumentQuerySet
from knowledge.pipeline import safe_filename
from knowledge.pipeline.formats import SUPPORTED
from knowledge.search import ask, search_chunks

LIBRARY_TEMPLATE = "knowledge/library.html"
DETAIL_TEMPLATE = "knowledge/document_detail.html"
SEARCH_TEMPLATE = "knowledge/search.html"
PAGE_SIZE = 50
CHUNKS_PER_PAGE = 50
# The document page previews the start of the Markdown; the paged chunk viewer below it holds all of the text.
MARKDOWN_PREVIEW_CHARS = 3_000
CHANGED_EVENT = "documents-changed"  # the library table listens for it and reloads itself


def _owned(request: AuthenticatedHttpRequest) -> DocumentQuerySet:
    return Document.objects.for_user(subject_user(request))


def _document(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> Document:
    return get_object_or_404(_owned(request), pk=pk)


def _namespaces(request: AuthenticatedHttpRequest) -> list[str]:
    return list(_owned(request).order_by("namespace").values_list("namespace", flat=True).distinct())


def _with_query(url: str, query: QueryDict) -> str:
    return f"{url}?{query.urlencode()}" if query else url


def chunk_url(chunk_id: uuid.UUID | str, document_id: uuid.UUID | str, ordinal: int) -> str:
    """A cited chunk on its document's page: the chunk viewer's page that holds it, scrolled to it, its passage
    highlighted (`cite`)."""
    page = ordinal // CHUNKS_PER_PAGE + 1  # ordinals run 0, 1, 2… in viewer order
    query = f"page={page}&cite={chunk_id}" if page > 1 else f"cite={chunk_id}"
    return f"{reverse('document_detail', args=[document_id])}?{query}#chunk-{chunk_id}"


# --- the library ---------------------------------------------------------------------------------------------


def _library(request: AuthenticatedHttpRequest, namespaces: list[str]) -> dict:
    """The context of the document table for the filters in request.GET."""
    form = LibraryFilterForm(request.GET, namespaces=namespaces)
    form.is_valid()
    filters = form.filters
    # The Markdown column can hold megabytes per document, and the table shows none of it.
    documents = _owned(request).defer("markdown").with_chunk_count().order_by("-created_at", "-id")
    if "namespace" in filters:
        documents = documents.filter(namespace=filters["namespace"])
    if filters.get("status") == ACTIVE:
        documents = documents.filter(status__in=services.ACTIVE_STATES)
    elif "status" in filters:
        documents = documents.filter(status=filters["status"])
    if "q" in filters:
        documents = documents.filter(
            Q(title__icontains=filters["q"]) | Q(original_name__icontains=filters["q"])
        )
    query = clean_query(request.GET, "page")
    return {
        "filter_form": form,
        "filters": filters,
        "query": query,
        "table_url": _with_query(reverse("library"), clean_query(request.GET)),
        "page": Paginator(documents, PAGE_SIZE).get_page(request.GET.get("page")),
        "active_states": services.ACTIVE_STATES,
    }


def _upload_context(namespaces: list[str]) -> dict:
    return {
        "namespaces": namespaces,
        "supported": sorted(SUPPORTED),
        "max_upload_mb": settings.MNEMO_MAX_UPLOAD_MB,
        "llm_configured": bool(settings.LLM_BASE_URL),
    }


@subject_view
@login_required
@require_GET
def library(request: AuthenticatedHttpRequest) -> HttpResponse:
    namespaces = _namespaces(request)
    context = _library(request, namespaces)
    if request.htmx.target == "document-table":
        response = render(request, f"{LIBRARY_TEMPLATE}#document-table", context)
        if request.htmx.trigger == "document-filters":
            # Push the URL without the empty fields the filter form sends along.
            push_url(response, context["table_url"])
        return response
    context |= _upload_context(namespaces) | {"upload_form": UploadForm()}
    return render(request, LIBRARY_TEMPLATE, context)


@dataclass(frozen=True)
class UploadOutcome:
    """What became of one file of an upload: created, a duplicate of an existing document, or refused."""

    name: str
    status: int  # 201 created, 200 duplicate, else the 4xx the service gave with its reason
    document: Document | None = None
    error: str = ""

    @property
    def created(self) -> bool:
        return self.status == 201


def _accept(request: AuthenticatedHttpRequest, file: UploadedFile, data: dict) -> UploadOutcome:
    name = safe_filename(file.name or "document")
    try:
        accepted = services.document_create(
            user=subject_user(request),
            file=file,
            namespace=data["namespace"],
            chunk_size=data["chunk_size"],
            chunk_overlap=data["chunk_overlap"],
            background=True,
        )
    except (services.KnowledgeError, DiskFull) as exc:
        return UploadOutcome(name, exc.status, error=str(exc))
    return UploadOutcome(name, 201 if accepted.created else 200, accepted.document)


@subject_view
@login_required
@require_POST
def document_upload(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Each file goes through the service on its own: one refused file does not stop the others.

    200 when at least one file was accepted (new or already there); 422 for an invalid form, and when every
    file was refused (htmx swaps 422 only). Without htmx, a refusal shared by every file keeps its own status
    (413 too large, 415 unsupported).
    """
    form = UploadForm(request.POST, request.FILES)
    outcomes = (
        [_accept(request, file, form.cleaned_data) for file in form.cleaned_data["files"]]
        if form.is_valid()
        else []
    )
    accepted = [outcome for outcome in outcomes if outcome.document is not None]
    refusals = {outcome.status for outcome in outcomes} - {200, 201}
    if accepted:
        status = 200
    elif len(refusals) == 1 and not request.htmx:
        status = refusals.pop()
    else:
        status = 422
    namespaces = _namespaces(request)
    context = _upload_context(namespaces) | {"upload_form": form, "outcomes": outcomes}
    if request.htmx:
        response = render(request, f"{LIBRARY_TEMPLATE}#upload-panel", context, status=status)
        if accepted:
            trigger_client_event(response, CHANGED_EVENT)
        return response
    return render(request, LIBRARY_TEMPLATE, _library(request, namespaces) | context, status=status)


def _render_row(
    request: AuthenticatedHttpRequest, pk: uuid.UUID, *, status: int = 200, **extra
) -> HttpResponse:
    document = get_object_or_404(_owned(request).defer("markdown").with_chunk_count(), pk=pk)
    context = {"document": document, "active_states": services.ACTIVE_STATES, **extra}
    return render(request, f"{LIBRARY_TEMPLATE}#document-row", context, status=status)


@subject_view
@login_required
@require_GET
def document_row(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """One table row: what an ingesting row polls every second."""
    return _render_row(request, pk)


def _change_state(
    request: AuthenticatedHttpRequest, pk: uuid.UUID, action: Callable[[Document], object], done: str
):
    document = _document(request, pk)
    try:
        action(document)
    except services.KnowledgeError as exc:  # 409: the state moved on meanwhile (say, it became ready)
        error, status = str(exc), exc.status
    else:
        error, status = "", 200
    if from_row(request, f"document-{pk}"):
        return _render_row(request, pk, status=status, row_error=error)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return navigate(request, next_url(request, reverse("document_detail", args=[pk])))


@subject_view
@login_required
@require_POST
def document_retry(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    return _change_state(
        request,
        pk,
        lambda document: services.document_retry(document=document, background=True),
        _("Ingestion queued again."),
    )


@subject_view
@login_required
@require_POST
def document_cancel(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    return _change_state(
        request, pk, lambda document: services.document_cancel(document=document), _("Ingestion cancelled.")
    )


@subject_view
@login_required
@require_POST
def document_delete(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    document = _document(request, pk)
    services.document_delete(document=document)
    if from_row(request, f"document-{pk}"):
        return HttpResponse("")  # the row swaps itself out for nothing
    messages.success(
        request, _("Deleted “%(title)s” with its chunks and vectors.") % {"title": document.title}
    )
    return navigate(request, next_url(request, reverse("library")))


# --- one document --------------------------------------------------------------------------------------------


def _preview(markdown: str) -> str:
    """The start of the Markdown, cut at the last paragraph (or line) break so no block is cut in half."""
    if len(markdown) <= MARKDOWN_PREVIEW_CHARS:
        return markdown
    head = markdown[:MARKDOWN_PREVIEW_CHARS]
    cut = max(head.rfind("\n\n"), head.rfind("\n"))
    head = head[:cut] if cut > MARKDOWN_PREVIEW_CHARS // 2 else head
    if head.count("```") % 2:  # close a fence the cut left open, or the rest of the preview turns into code
        head += "\n```"
    return head


def chunks_with_history() -> models.QuerySet[Chunk]:
    """Chunks with their edits and who made them, for the chunk viewer (two queries a page)."""
    edits = ChunkEdit.objects.select_related("editor", "api_key")
    return Chunk.objects.prefetch_related(Prefetch("edits", edits))


def rechunk_context(document: Document, form: RechunkForm | None = None) -> dict:
    """The re-chunk panel: its form, and how many chunks lose an edit or come back enabled."""
    counts = document.chunks.aggregate(
        total=Count("pk"),
        edited=Count("pk", filter=Q(edited_at__isnull=False)),
        disabled=Count("pk", filter=Q(enabled=False)),
    )
    initial = {"chunk_size": document.chunk_size, "chunk_overlap": document.chunk_overlap}
    return {"rechunk_form": form or RechunkForm(initial=initial), "chunk_counts": counts}


def _cited(request: AuthenticatedHttpRequest, document: Document) -> Chunk | None:
    """The chunk a citation link opened the page at (`?cite=<chunk id>`), when it is one of this document's."""
    try:
        chunk_id = uuid.UUID(request.GET.get("cite", ""))
    except ValueError:
        return None
    return document.chunks.filter(pk=chunk_id).first()


def detail_context(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> dict:
    # Only the preview's worth of the Markdown leaves the database: a document's Markdown can be megabytes.
    document = get_object_or_404(
        _owned(request)
        .defer("markdown")
        .annotate(
            markdown_head=Substr("markdown", 1, MARKDOWN_PREVIEW_CHARS + 1),
            markdown_length=Length("markdown"),
        ),
        pk=pk,
    )
    cited = _cited(request, document)
    chunks = chunks_with_history().filter(document=document).order_by("ordinal")
    return {
        "document": document,
        "active": document.status in services.ACTIVE_STATES,
        "chunks": Paginator(chunks, CHUNKS_PER_PAGE).get_page(request.GET.get("page")),
        "cited": cited,
        "cited_id": cited.pk if cited else None,
    }


@subject_view
@login_required
@require_GET
def document_detail(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    context = detail_context(request, pk)
    document = context["document"]
    if request.htmx.target == "document-status":
        if context["active"]:
            return render(request, f"{DETAIL_TEMPLATE}#document-status", context)
        # Ingestion just finished: reload the page, which now has the Markdown and the chunks.
        return HttpResponseClientRefresh()
    if request.htmx.target == "chunk-list":
        return render(request, f"{DETAIL_TEMPLATE}#chunk-list", context)
    return render(request, DETAIL_TEMPLATE, context | page_context(document))


def page_context(document: Document, rechunk_form: RechunkForm | None = None) -> dict:
    """What the whole document page shows beyond its chunks: the Markdown's preview and the re-chunk panel.
    `document` comes from detail_context, annotated with the start and the length of its Markdown."""
    annotated = cast(Any, document)
    return rechunk_context(document, rechunk_form) | {
        "markdown_html": render_markdown(_preview(annotated.markdown_head)),
        "markdown_truncated": annotated.markdown_length > MARKDOWN_PREVIEW_CHARS,
        "markdown_length": annotated.markdown_length,
    }


@subject_view
@login_required
@require_GET
def document_download(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> FileResponse:
    """The original uploaded file, under the name it was uploaded with; only its owner's session gets it."""
    document = get_object_or_404(_owned(request).defer("markdown"), pk=pk)
    if not document.file:
        raise Http404("This document has no stored file.")
    try:
        handle = document.file.open("rb")
    except FileNotFoundError:
        raise Http404("The file is missing from storage.") from None
    name = document.original_name or document.file.name.rsplit("/", 1)[-1]
    response = FileResponse(handle, as_attachment=True, filename=name)
    # Served from our origin: an HTML or SVG upload must not run as a page of this site if opened directly.
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


# --- the retrieval test ----------------------------------------------------------------------------------------


_CITATION = re.compile(r"\[(\d{1,3})\]")


def linked_answer(text: str, count: int) -> SafeString:
    """The answer escaped, with each [n] of a real citation made a link to that citation."""

    def link(match: re.Match) -> str:
        n = int(match.group(1))
        return f'<a href="#citation-{n}">[{n}]</a>' if 1 <= n <= count else match.group(0)

    return mark_safe(_CITATION.sub(link, escape(text)))  # noqa: S308 - escaped first; only our links are added


def _retrieval(request: AuthenticatedHttpRequest, *, asking: bool) -> HttpResponse:
    """The search and ask pages. When the client leaves before the LLM answers, ClientGone stops the request
    and core.disconnect's middleware answers 499 for the access log."""
    form = SearchForm(request.GET or None, namespaces=_namespaces(request))
    context: dict = {
        "form": form,
        "asking": asking,
        "llm_configured": bool(settings.LLM_BASE_URL),
        "result": None,
        "answer": None,
        "score_parts": hybrid.SCORE_PARTS,
    }
    status = 200
    if form.is_bound and form.is_valid():
        query, arguments = form.cleaned_data["q"], form.search_arguments()
        arguments["budget"] = Budget.for_request(request)
        if asking:
            answer = ask(user=subject_user(request), question=query, **arguments)
            for citation in answer.citations:
                citation["url"] = chunk_url(
                    citation["chunk_id"], citation["document_id"], citation["ordinal"]
                )
            context |= {"answer": answer, "answer_html": linked_answer(answer.text, len(answer.citations))}
        else:
            result = search_chunks(user=subject_user(request), query=query, **arguments)
            for hit in result.hits:
                # Only this page links a hit to its passage, so the link rides on the hit to the template.
                cast(Any, hit).url = chunk_url(hit.chunk.pk, hit.chunk.document_id, hit.chunk.ordinal)
            context["result"] = result
    elif form.is_bound:
        status = 422
    if request.htmx.target == "search-results":
        response = render(request, f"{SEARCH_TEMPLATE}#search-results", context, status=status)
        # Push the URL without the empty fields, so the result can be bookmarked and reloaded.
        push_url(response, _with_query(request.path, clean_query(request.GET)))
        return response
    return render(request, SEARCH_TEMPLATE, context, status=status)


@subject_view
@login_required
@require_GET
def knowledge_search(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Hybrid search with each hit's dense, lexical and fused scores."""
    return _retrieval(request, asking=False)


@subject_view
@login_required
@require_GET
def knowledge_ask(request: AuthenticatedHttpRequest) -> HttpResponse:
    """knowledge.search.ask: an answer with numbered citations (the passages only, without an LLM)."""
    return _retrieval(request, asking=True)
