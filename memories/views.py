"""The memory pages: browser, detail, sessions. Every query starts from subject_user(request), the signed-in user
or the user a staff member opened (core.acting); writes go through memories.actions and name request.user as
editor. The browser's paging is memories.listing.
"""

import json
import uuid
from itertools import groupby
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from conversations.models import AgentSession
from core.acting import subject_user, subject_view, viewing_other
from core.pages import AuthenticatedHttpRequest, from_row, navigate, next_url
from core.querystrings import clean_query
from memories import authoring_views, bulk, facets, history, listing
from memories.actions import edit, forgetting
from memories.actions.access import record_access
from memories.actions.rules import MemoryRequestError
from memories.forms import ForgetForm, MemoryEditForm, MemoryFilterForm, day_bounds
from memories.models import EditVia, Memory, MemoryType
from memories.retrieval import SCORE_PARTS, search_memories

SEARCH_LIMIT = 50
SESSIONS_PER_PAGE = 50
TIMELINE_LIMIT = 1000
TAG_CHOICES = 100  # the tags the filter's field suggests, most used first
LIST_TEMPLATE = "memories/memory_list.html"
UNDO_KEY = "memory_bulk_undo"  # the session's record of the last bulk action (memories.bulk_views)


# --- the browser -------------------------------------------------------------------------------------------


def filter_form(request: AuthenticatedHttpRequest) -> MemoryFilterForm:
    """The browser's filters from the query string (the subject's API keys for the key filter), checked."""
    form = MemoryFilterForm(request.GET, keys=facets.key_choices(subject_user(request)))
    form.is_valid()
    return form


def _browse(request: AuthenticatedHttpRequest, *, notice: str = "") -> dict:
    """The context of the memory table for the filters in request.GET."""
    form = filter_form(request)
    filters = form.filters
    user = subject_user(request)
    context: dict[str, Any] = {
        "form": form,
        "filters": filters,
        "types": MemoryType.choices,
        "query": clean_query(request.GET, "before", "after", "page"),
        "notice": notice,
        "forget_form": ForgetForm(),
        "hits": None,
        "page": None,
        "score_parts": SCORE_PARTS,
        "bulk_actions": bulk.ACTIONS.items(),
        "page_sizes": listing.PAGE_SIZES,
        "selected": set(),
        "bulk_undo": _bulk_undo(request),
    }
    session = None
    if "session" in filters:
        session = AgentSession.objects.for_user(user).filter(key=filters["session"].strip()).first()
        if session is None:
            context["notice"] = notice or f"No session has the key “{filters['session']}”."
            context["page"] = listing.KeysetPage([], None, None)
            return context
    start, end = day_bounds(filters.get("date_from"), filters.get("date_to"))
    if "q" in filters:
        result = search_memories(
            user=user,
            query=filters["q"],
            limit=SEARCH_LIMIT,
            memory_types=[filters["type"]] if "type" in filters else None,
            min_importance=filters.get("min_importance", 0.0),
            session=session,
            time_range=(start, end) if start or end else None,
            include_chat_copies=True,  # the browser shows every memory the filters select
            tag=filters.get("tag"),
        )
        context["hits"] = [hit for hit in result.hits if _kept(hit.memory, filters)]
        listing.attach_entities([hit.memory for hit in context["hits"]])
        archived_note = "Search covers active memories only; archived ones are left out."
        context["search_notice"] = " ".join(
            text for text in (result.notice, archived_note if filters.get("archived") else "") if text
        )
        return context
    memories = filtered_memories(user, filters, session=session, start=start, end=end)
    context["page"] = listing.memory_page(memories, request.GET)
    listing.attach_entities(context["page"].memories)
    return context


def undo_offered(request: AuthenticatedHttpRequest, record: object) -> bool:
    """Whether the session's bulk undo record is for the memories this page shows (the viewer's, or a subject's)."""
    return isinstance(record, dict) and record.get("user", request.user.pk) == subject_user(request).pk


def _bulk_undo(request: AuthenticatedHttpRequest) -> dict | None:
    record = request.session.get(UNDO_KEY)
    if not isinstance(record, dict) or not undo_offered(request, record):
        return None
    return {**record, "label": bulk.shown_label(record)}


def _kept(memory: Memory, filters: dict) -> bool:
    """The filters a search does not apply itself, applied to one of its hits."""
    high, origin, key = filters.get("max_importance"), filters.get("origin"), filters.get("origin_key")
    return (
        (high is None or memory.importance <= high)
        and (not origin or memory.origin == origin)
        and (key is None or memory.origin_key_id == key)
    )


def filtered_memories(user, filters: dict, *, session: AgentSession | None, start, end) -> QuerySet:
    """The browser's (non-search) filters as one QuerySet of `user`'s memories; bulk "all matching" reads it."""
    memories = Memory.objects.for_user(user).listed(archived=bool(filters.get("archived")))
    return memories.select_related("session", "origin_key").filtered(
        memory_types=[filters["type"]] if "type" in filters else None,
        session=session,
        min_importance=filters.get("min_importance"),
        max_importance=filters.get("max_importance"),
        since=start,
        until=end,
        tag=filters.get("tag"),
        origin=filters.get("origin"),
        origin_key=filters.get("origin_key"),
    )


def _render_table(request: AuthenticatedHttpRequest, context: dict) -> HttpResponse:
    response = render(request, f"{LIST_TEMPLATE}#memory-table", context)
    if request.method == "GET":
        # Push the URL without the empty fields a submitted form sends along.
        query = clean_query(request.GET).urlencode()
        push_url(response, f"{request.path}?{query}" if query else request.path)
    return response


@subject_view
@login_required
@require_GET
def memory_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    context = _browse(request)
    # A curator's search is a retrieval too, shown on the memory's page as "page"; a staff member looking at
    # someone else's memories is not using them, so their look is not counted.
    if context.get("hits") and not viewing_other(request):
        record_access(
            user=subject_user(request),
            memories=[(hit.memory, hit.score) for hit in context["hits"]],
            query=context["filters"]["q"],
            via=EditVia.PAGE,
        )
    if request.htmx.target == "memory-table":
        return _render_table(request, context)
    subject = subject_user(request)
    context["session_keys"] = AgentSession.objects.for_user(subject).values_list("key", flat=True)[:100]
    suggested = facets.tag_counts(subject, limit=TAG_CHOICES, newest=facets.SUGGESTED_FROM)
    context["tag_names"] = [tag for tag, _ in suggested]
    return render(request, LIST_TEMPLATE, context)


def _back_to_list(request: AuthenticatedHttpRequest) -> HttpResponseRedirect:
    # The browser's filters travel in the action's query string; keep them for the page we return to.
    query = clean_query(request.GET).urlencode()
    return redirect(f"{reverse('memory_list')}?{query}" if query else reverse("memory_list"))


def ticked_ids(request: AuthenticatedHttpRequest) -> list[uuid.UUID]:
    """The memory ids a list form posts as `ids`; a malformed one is skipped."""
    ids = []
    for value in request.POST.getlist("ids"):
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    return ids


@subject_view
@login_required
@require_POST
def memories_bulk_delete(request: AuthenticatedHttpRequest) -> HttpResponse:
    ids = ticked_ids(request)
    if ids:
        deleted = forgetting.memories_delete(user=subject_user(request), memory_ids=ids)
        notice = f"Forgot {deleted} selected {'memory' if deleted == 1 else 'memories'}."
    else:
        notice = "Select at least one memory first."
    if request.htmx:
        return _render_table(request, _browse(request, notice=notice))
    messages.info(request, notice)
    return _back_to_list(request)


@subject_view
@login_required
@require_POST
def memories_forget(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ForgetForm(request.POST)
    if form.is_valid():
        forgotten = forgetting.memories_forget(user=subject_user(request), **form.cleaned_data)
        notice = f"Forgot {forgotten} {'memory' if forgotten == 1 else 'memories'} ({form.cleaned_data['strategy'].replace('_', ' ')})."
    else:
        errors = "; ".join(
            f"{form[name].label if name in form.fields else 'Form'}: {' '.join(map(str, errs))}"
            for name, errs in form.errors.items()
        )
        notice = f"Nothing was forgotten. {errors}"
    if request.htmx:
        response = _render_table(request, _browse(request, notice=notice))
        if not form.is_valid():
            response.status_code = 422
        return response
    messages.info(request, notice)
    return _back_to_list(request)


# --- one memory: row, inline edit, archive, delete, detail ----------------------------------------------------


def _memory(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> Memory:
    memories = Memory.objects.for_user(subject_user(request)).select_related("session", "origin_key")
    return get_object_or_404(memories, pk=pk)


@subject_view
@login_required
@require_GET
def memory_row(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """One table row; "Cancel" in the inline form swaps this back in."""
    memory = _memory(request, pk)
    listing.attach_entities([memory])
    return render(request, f"{LIST_TEMPLATE}#memory-row", {"memory": memory})


@subject_view
@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Inline in the browser's row with htmx; a page of its own, with every field, without JS (and from the
    detail page): memories.authoring_views.memory_edit_page."""
    memory = _memory(request, pk)
    if not request.htmx:
        return authoring_views.memory_edit_page(request, memory)
    form = MemoryEditForm(request.POST if request.method == "POST" else None, memory=memory)
    if form.is_valid():
        try:
            memory = edit.memory_update(
                memory=memory, via=EditVia.PAGE, editor=request.user, **form.cleaned_data
            )
        except MemoryRequestError as exc:
            form.add_error(None, str(exc))
        else:
            return render(request, f"{LIST_TEMPLATE}#memory-row", {"memory": memory, "saved": True})
    status = 422 if form.is_bound else 200
    return render(
        request, f"{LIST_TEMPLATE}#memory-row-form", {"memory": memory, "form": form}, status=status
    )


def _set_archived(request: AuthenticatedHttpRequest, pk: uuid.UUID, *, archived: bool) -> HttpResponse:
    memory = edit.memory_archive(
        memory=_memory(request, pk), via=EditVia.PAGE, editor=request.user, archived=archived
    )
    if from_row(request, f"memory-{memory.pk}"):
        listing.attach_entities([memory])
        return render(request, f"{LIST_TEMPLATE}#memory-row", {"memory": memory})
    messages.success(request, _("Memory archived.") if archived else _("Memory restored."))
    return navigate(request, next_url(request, reverse("memory_detail", args=[memory.pk])))


@subject_view
@login_required
@require_POST
def memory_archive(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    return _set_archived(request, pk, archived=True)


@subject_view
@login_required
@require_POST
def memory_restore(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    return _set_archived(request, pk, archived=False)


@subject_view
@login_required
@require_POST
def memory_reinstate(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Make a superseded fact current again."""
    memory = edit.memory_reinstate(memory=_memory(request, pk), via=EditVia.PAGE, editor=request.user)
    messages.success(request, _("The fact is current again."))
    return navigate(request, next_url(request, reverse("memory_detail", args=[memory.pk])))


@subject_view
@login_required
@require_POST
def memory_delete(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    memory = _memory(request, pk)
    forgetting.memories_delete(user=subject_user(request), memory_ids=[memory.pk])
    if from_row(request, f"memory-{memory.pk}"):
        return HttpResponse("")  # the row swaps itself out for nothing
    messages.success(request, _("Memory deleted."))
    return navigate(request, next_url(request, reverse("memory_list")))


@subject_view
@login_required
@require_GET
def memory_detail(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    memory = _memory(request, pk)
    context = {
        "memory": memory,
        "metadata": json.dumps(memory.metadata, indent=2, ensure_ascii=False, sort_keys=True),
        "entity_links": memory.entity_links.select_related("entity").order_by("entity__name"),
        "edits": [
            (edit, history.change_rows(edit.changes), history.restorable(edit))
            for edit in memory.edits.select_related("editor", "api_key")
        ],
        "is_expired": memory.expires_at is not None and memory.expires_at <= timezone.now(),
        "replaced": memory.supersedes.filter(user=subject_user(request)).order_by("-valid_to"),
        "sources": history.provenance(memory),
        "retrievals": history.retrievals(memory, request.GET.get("retrievals")),
    }
    return render(request, "memories/memory_detail.html", context)


# --- sessions ----------------------------------------------------------------------------------------------


@subject_view
@login_required
@require_GET
def session_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    sessions = AgentSession.objects.for_user(subject_user(request)).order_by("-started_at", "key")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    # Count memories for this page's sessions only, with one grouped query on the (user, session) index.
    counts = dict(
        Memory.objects.for_user(subject_user(request))
        .filter(session__in=[session.pk for session in page])
        .values_list("session")
        .annotate(n=Count("id"))
        .values_list("session", "n")
    )
    for session in page:
        session.memory_count = counts.get(session.pk, 0)
    template = "memories/session_list.html"
    if request.htmx.target == "session-table":
        template += "#session-table"
    return render(request, template, {"page": page})


@subject_view
@login_required
@require_GET
def session_detail(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    session = get_object_or_404(AgentSession.objects.for_user(subject_user(request)), pk=pk)
    memories = list(
        Memory.objects.for_user(subject_user(request))
        .filter(session=session)
        .order_by("created_at", "id")[: TIMELINE_LIMIT + 1]
    )
    truncated = len(memories) > TIMELINE_LIMIT
    days = [
        (day, list(group))
        for day, group in groupby(memories[:TIMELINE_LIMIT], key=lambda m: timezone.localdate(m.created_at))
    ]
    context = {
        "session": session,
        "days": days,
        "memory_total": len(memories[:TIMELINE_LIMIT]),
        "truncated": truncated,
        "timeline_limit": TIMELINE_LIMIT,
    }
    return render(request, "memories/session_detail.html", context)
