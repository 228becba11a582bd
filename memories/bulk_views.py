"""The memory browser's bulk actions and their undo: parse the selection, call memories.bulk, show the table.

The selection is the ticked rows (`ids`) or, with `scope=all`, every memory the filter in the action's query
string matches. Either way it is read from the subject's memories only (core.acting). The last action's undo
record lives in the session under UNDO_KEY, with whose memories it changed; their table shows an Undo button while
it is there.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from conversations.models import AgentSession
from core.acting import subject_user, subject_view
from core.pages import AuthenticatedHttpRequest
from core.stored_text import in_language
from memories import bulk
from memories.forms import day_bounds
from memories.views import (
    UNDO_KEY,
    _back_to_list,
    _browse,
    _render_table,
    filter_form,
    filtered_memories,
    ticked_ids,
    undo_offered,
)

VALUE_FIELDS = {"set_type": "type_value", "set_importance": "importance_value", "add_tags": "tags_value"}
VALUE_FIELDS["remove_tags"] = "tags_value"


def _all_matching(request: AuthenticatedHttpRequest) -> list:
    """The ids of every memory the list's filter (the query string) matches; a search matches its hits only,
    which the page holds, so "all" then means the ticked rows."""
    filters = filter_form(request).filters
    if "q" in filters:
        raise bulk.BulkError(_("“All matching” does not apply to a search: tick the results instead."))
    session = None
    if "session" in filters:
        session = (
            AgentSession.objects.for_user(subject_user(request))
            .filter(key=filters["session"].strip())
            .first()
        )
        if session is None:
            return []
    start, end = day_bounds(filters.get("date_from"), filters.get("date_to"))
    memories = filtered_memories(subject_user(request), filters, session=session, start=start, end=end)
    # One more than the limit is enough to refuse a selection that is too big without reading it all.
    return list(memories.values_list("pk", flat=True)[: bulk.MAX_BULK + 1])


def _respond(
    request: AuthenticatedHttpRequest, notice: str, *, status: int = 200, keep: list | None = None
) -> HttpResponse:
    if request.htmx:
        context = _browse(request, notice=notice)
        context["selected"] = {str(pk) for pk in keep or []}
        response = _render_table(request, context)
        response.status_code = status
        return response
    (messages.info if status == 200 else messages.error)(request, notice)
    return _back_to_list(request)


@subject_view
@login_required
@require_POST
def memories_bulk(request: AuthenticatedHttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    ticked = ticked_ids(request)
    try:
        value = bulk.parse_value(action, request.POST.get(VALUE_FIELDS.get(action, ""), ""))
        ids = _all_matching(request) if request.POST.get("scope") == "all" else ticked
        count, undo = bulk.bulk_apply(
            user=subject_user(request), memory_ids=ids, action=action, value=value, editor=request.user
        )
    except bulk.BulkError as exc:
        # Nothing changed; the table comes back with the same rows still ticked.
        return _respond(
            request, _("Nothing was changed. %(reason)s") % {"reason": exc}, status=422, keep=ticked
        )
    # Whose memories it changed, so the Undo is offered (and applied) only on that user's list.
    request.session[UNDO_KEY] = {**undo.as_json(), "user": subject_user(request).pk}
    done = _("%(label)s.") % {"label": in_language(undo.label)}
    return _respond(request, done if count else _("Nothing to change: the selection already was so."))


@subject_view
@login_required
@require_POST
def memories_bulk_undo(request: AuthenticatedHttpRequest) -> HttpResponse:
    record = request.session.get(UNDO_KEY)
    undo = bulk.Undo.from_json(record) if undo_offered(request, record) else None
    if undo is None:
        return _respond(request, _("There is no bulk action to undo."), status=422)
    del request.session[UNDO_KEY]
    count = bulk.bulk_undo(user=subject_user(request), undo=undo, editor=request.user)
    undone = _("Undone: %(label)s (%(count)s put back).")
    return _respond(
        request, undone % {"label": in_language(undo.label), "count": in_language(bulk._plural(count))}
    )
