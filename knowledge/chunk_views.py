"""Curation on a document's page: edit a chunk, disable or enable it, chunk the document again.

Every chunk is looked up through its owner (subject_user: the signed-in user, or the end-user a staff member
opened under /users/<id>/, core.acting), so another user's chunk is a 404; the writes go through
knowledge.curation and knowledge.services and name request.user, whoever made the change, as its editor. Under
htmx a chunk's action answers with that chunk's article (or its form), which swaps itself in place; without
JavaScript the forms post and the browser comes back to the chunk.
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.acting import subject_user, subject_view
from core.errors import RequestRefused
from core.pages import AuthenticatedHttpRequest, navigate
from knowledge import services
from knowledge.curation import chunk_update
from knowledge.forms import ChunkEditForm, RechunkForm
from knowledge.models import Chunk, ChunkEditVia
from knowledge.views import (
    CHUNKS_PER_PAGE,
    DETAIL_TEMPLATE,
    chunks_with_history,
    detail_context,
    page_context,
)

CHUNK_EDIT_TEMPLATE = "knowledge/chunk_edit.html"


def _chunk(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID) -> Chunk:
    chunks = chunks_with_history().select_related("document").defer("document__markdown")
    return get_object_or_404(chunks, pk=chunk_pk, document_id=pk, user=subject_user(request))


def _at_chunk(chunk: Chunk) -> str:
    """The chunk on its document's page (not highlighted: it is not a citation)."""
    page = chunk.ordinal // CHUNKS_PER_PAGE + 1
    url = reverse("document_detail", args=[chunk.document_id])
    return f"{url}?page={page}#chunk-{chunk.pk}" if page > 1 else f"{url}#chunk-{chunk.pk}"


def _render_chunk(
    request: AuthenticatedHttpRequest, chunk: Chunk, *, status: int = 200, **extra
) -> HttpResponse:
    chunk = _chunk(request, chunk.document_id, chunk.pk)  # fresh, with its history
    return render(request, f"{DETAIL_TEMPLATE}#chunk-item", {"chunk": chunk, **extra}, status=status)


@subject_view
@login_required
@require_GET
def chunk_item(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID) -> HttpResponse:
    """One chunk's article: what "Cancel" in its edit form swaps back in."""
    return _render_chunk(request, _chunk(request, pk, chunk_pk))


@subject_view
@login_required
@require_http_methods(["GET", "POST"])
def chunk_edit(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID) -> HttpResponse:
    """The chunk's text in a form, in place under htmx and as a page of its own without it."""
    chunk = _chunk(request, pk, chunk_pk)
    form = ChunkEditForm(request.POST if request.method == "POST" else None, initial={"text": chunk.text})
    if form.is_valid():
        try:
            chunk = chunk_update(
                chunk=chunk, via=ChunkEditVia.PAGE, editor=request.user, text=form.cleaned_data["text"]
            )
        except RequestRefused as exc:  # empty, too long, or refused by the owner's privacy settings
            form.add_error("text", str(exc))
        else:
            if request.htmx:
                return _render_chunk(request, chunk, saved=True)
            messages.success(
                request, _("Chunk #%(n)s saved; its previous text is in its history.") % {"n": chunk.ordinal}
            )
            return redirect(_at_chunk(chunk))
    status = 422 if form.is_bound else 200
    template = f"{DETAIL_TEMPLATE}#chunk-form" if request.htmx else CHUNK_EDIT_TEMPLATE
    return render(request, template, {"chunk": chunk, "form": form}, status=status)


def _set_enabled(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID, *, enabled: bool):
    chunk = _chunk(request, pk, chunk_pk)
    try:
        chunk = chunk_update(chunk=chunk, via=ChunkEditVia.PAGE, editor=request.user, enabled=enabled)
    except RequestRefused as exc:  # 409: the document is being chunked again
        if request.htmx:  # 422: the page's htmx swaps it in, with the reason
            return _render_chunk(request, chunk, status=422, chunk_error=str(exc))
        messages.error(request, str(exc))
        return redirect(_at_chunk(chunk))
    if request.htmx:
        return _render_chunk(request, chunk)
    if enabled:
        state = _("Chunk #%(n)s enabled: searches return it again.")
    else:
        state = _("Chunk #%(n)s disabled: no search returns it.")
    messages.success(request, state % {"n": chunk.ordinal})
    return redirect(_at_chunk(chunk))


@subject_view
@login_required
@require_POST
def chunk_disable(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID) -> HttpResponse:
    return _set_enabled(request, pk, chunk_pk, enabled=False)


@subject_view
@login_required
@require_POST
def chunk_enable(request: AuthenticatedHttpRequest, pk: uuid.UUID, chunk_pk: uuid.UUID) -> HttpResponse:
    return _set_enabled(request, pk, chunk_pk, enabled=True)


@subject_view
@login_required
@require_POST
def document_rechunk(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Chunk the document again with the form's settings; its page then follows the ingestion's progress."""
    context = detail_context(request, pk)
    document = context["document"]
    form = RechunkForm(request.POST)
    if form.is_valid():
        try:
            services.document_rechunk(document=document, background=True, **form.cleaned_data)
        except services.KnowledgeError as exc:  # 409: it is being ingested
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                _("Chunking again at %(size)s tokens with %(overlap)s overlap.")
                % {"size": form.cleaned_data["chunk_size"], "overlap": form.cleaned_data["chunk_overlap"]},
            )
            return navigate(request, reverse("document_detail", args=[pk]))
    context |= page_context(document, form)
    if request.htmx:
        return render(request, f"{DETAIL_TEMPLATE}#rechunk-panel", context, status=422)
    return render(request, DETAIL_TEMPLATE, context, status=422)
