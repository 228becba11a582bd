"""Authoring pages: add a memory of any type (a perceptual one with its file), edit every field of one, restore
an earlier version from its history, and serve a perceptual memory's file to its owner's browser session.

Every query starts from subject_user(request) (the signed-in user, or the user a staff member opened: core.acting),
so another user's memory is a 404; every write goes through memories.actions and names request.user as editor.
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from conversations.models import AgentSession
from core.acting import subject_user, subject_view
from core.disk import DiskFull
from core.pages import AuthenticatedHttpRequest
from memories import curation
from memories.actions import edit
from memories.actions.rules import MemoryRequestError, session_for_key
from memories.actions.write import memory_write
from memories.forms import MemoryAddForm, MemoryPageEditForm
from memories.models import EditVia, Memory, MemoryEdit

# Magic numbers of the raster images a browser shows safely. The upload's own content type is the client's
# claim, so a file is shown inline only when its first bytes say it is one of these (never SVG or HTML).
IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def image_type(head: bytes) -> str | None:
    """The content type of a PNG, JPEG, GIF or WebP from its first 12 bytes, else None."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in IMAGE_SIGNATURES.items() if head.startswith(magic)), None)


def _memory(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> Memory:
    return get_object_or_404(Memory.objects.for_user(subject_user(request)).select_related("session"), pk=pk)


def _session_keys(request: AuthenticatedHttpRequest) -> list[str]:
    return list(
        AgentSession.objects.for_user(subject_user(request))
        .order_by("-started_at")
        .values_list("key", flat=True)[:50]
    )


def _session(request: AuthenticatedHttpRequest, key: str) -> AgentSession | None:
    return session_for_key(user=subject_user(request), key=key) if key else None


ADDED = {
    curation.ADD: gettext_lazy("Memory added."),
    curation.SUPERSEDE: gettext_lazy("Memory added; it replaces an older value of the same fact."),
    curation.DUPLICATE: gettext_lazy("That memory was already stored: the repeat is counted on it."),
    curation.MERGE: gettext_lazy("That says the same as a stored memory: it was merged into it."),
}


@subject_view
@login_required
@require_http_methods(["GET", "POST"])
def memory_add(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = MemoryAddForm(request.POST or None, request.FILES or None)
    if form.is_valid():
        fields = form.memory_fields()
        try:
            # One transaction, so a refused memory leaves no new session behind.
            with transaction.atomic():
                written = memory_write(
                    user=subject_user(request),
                    session=_session(request, form.cleaned_data["session"]),
                    via=EditVia.PAGE,
                    editor=request.user,
                    # A file is its own memory: curation would count it as a repeat of one with the same
                    # description and drop the upload.
                    curate="file" not in fields,
                    **fields,
                )
        except (MemoryRequestError, DiskFull) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, ADDED.get(written.action, ADDED[curation.ADD]))
            return redirect("memory_detail", pk=written.memory.pk)
    status = 422 if form.is_bound else 200
    context = {"form": form, "session_keys": _session_keys(request)}
    return render(request, "memories/memory_add.html", context, status=status)


def memory_edit_page(request: AuthenticatedHttpRequest, memory: Memory) -> HttpResponse:
    """The edit page (memories.views.memory_edit hands over when the request is not htmx): every field."""
    form = MemoryPageEditForm(request.POST if request.method == "POST" else None, memory=memory)
    if form.is_valid():
        try:
            with transaction.atomic():
                memory = edit.memory_update(
                    memory=memory,
                    via=EditVia.PAGE,
                    editor=request.user,
                    session=_session(request, form.cleaned_data["session"]),
                    **form.changes(),
                )
        except MemoryRequestError as exc:
            form.add_error(None, str(exc))
        else:
            if memory.archived_at is not None:  # it now repeats another memory (curate_edit)
                messages.info(
                    request,
                    _("Memory saved: it now says what another memory says, so it was merged into it."),
                )
            else:
                messages.success(request, _("Memory saved."))
            return redirect("memory_detail", pk=memory.pk)
    status = 422 if form.is_bound else 200
    context = {"memory": memory, "form": form, "session_keys": _session_keys(request)}
    return render(request, "memories/memory_edit.html", context, status=status)


@subject_view
@login_required
@require_POST
def memory_restore_version(request: AuthenticatedHttpRequest, pk: uuid.UUID, edit_pk: int) -> HttpResponse:
    memory = _memory(request, pk)
    record = get_object_or_404(MemoryEdit, pk=edit_pk, memory=memory)
    try:
        edit.memory_restore_version(memory=memory, edit=record, via=EditVia.PAGE, editor=request.user)
    except MemoryRequestError as exc:
        messages.error(request, _("Not restored: %(error)s.") % {"error": exc})
    else:
        messages.success(request, _("The earlier version is restored; the restore is in the history."))
    return redirect("memory_detail", pk=memory.pk)


def _open(memory: Memory):
    if not memory.file:
        raise Http404("This memory has no file.")
    try:
        return memory.file.open("rb")
    except FileNotFoundError:
        raise Http404("The file is missing from storage.") from None


@subject_view
@login_required
@require_GET
def memory_file(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> FileResponse:
    """Download a perceptual memory's file under its original name."""
    memory = _memory(request, pk)
    handle = _open(memory)
    assert memory.file.name is not None  # _open opened it
    name = memory.metadata.get("filename") or memory.file.name.rsplit("/", 1)[-1]
    response = FileResponse(handle, as_attachment=True, filename=name)
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@subject_view
@login_required
@require_GET
def memory_image(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> FileResponse:
    """The file shown inline on the detail page, only when its bytes are a PNG, JPEG, GIF or WebP image."""
    memory = _memory(request, pk)
    handle = _open(memory)
    content_type = image_type(handle.read(12))
    if content_type is None:
        handle.close()
        raise Http404("This file is not an image the page can show.")
    handle.seek(0)
    response = FileResponse(handle, content_type=content_type)
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=3600"
    return response
