"""The review queue's pages: the cleaning proposals (memories.cleaning) waiting for a person, shown with a word
diff, found on demand, approved, rejected or undone one by one or several at once. Every query starts from
subject_user(request), as the other memory pages' do (memories.views).
"""

import difflib
import re
from collections.abc import Callable
from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, ngettext_lazy
from django.views.decorators.http import require_GET, require_POST

from core.acting import subject_user, subject_view
from core.pages import AuthenticatedHttpRequest
from memories import cleaning
from memories.models import EditVia, Proposal, ProposalStatus


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) segments from `old` to `new`: "same", "del" or "ins"; words, and characters of Chinese."""
    tokens = lambda text: re.findall(r"[\u4e00-\u9fff]|\s+|[^\s\u4e00-\u9fff]+", text)  # noqa: E731
    a, b = tokens(old), tokens(new)
    segments = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(("ins", "".join(b[j1:j2])))
    return segments


@subject_view
@login_required
@require_GET
def review(request: AuthenticatedHttpRequest) -> HttpResponse:
    proposals = Proposal.objects.filter(user=subject_user(request)).select_related("memory", "target")
    pending = list(proposals.filter(status=ProposalStatus.PENDING)[:200])
    for proposal in pending:
        # Only this page shows a diff, so it rides on the proposal to the template rather than on the model.
        cast(Any, proposal).diff = word_diff(proposal.memory.content, proposal.target.content)
    decided = proposals.exclude(status=ProposalStatus.PENDING).order_by("-decided_at")[:20]
    return render(request, "memories/review.html", {"pending": pending, "decided": decided})


@subject_view
@login_required
@require_POST
def review_find(request: AuthenticatedHttpRequest) -> HttpResponse:
    drafts = cleaning.propose(subject_user(request))
    queued = cleaning.queue(subject_user(request), drafts)
    messages.success(
        request,
        ngettext(
            "%(found)d proposal found, %(new)d new in the queue.",
            "%(found)d proposals found, %(new)d new in the queue.",
            len(drafts),
        )
        % {"found": len(drafts), "new": len(queued)},
    )
    return redirect("memory_review")


DECISIONS: dict[str, Callable[..., Proposal]] = {
    "approve": cleaning.approve,
    "reject": cleaning.reject,
    "undo": cleaning.undo,
}
# What a decision did, for the message after it ("reject" + "d" once read "Proposal rejectd.").
# One decision's message, and the count's message of a decision on several (its number is "count").
DECIDED = {
    "approve": (
        gettext_lazy("Proposal approved."),
        ngettext_lazy("%(count)d proposal approved.", "%(count)d proposals approved.", "count"),
    ),
    "reject": (
        gettext_lazy("Proposal rejected."),
        ngettext_lazy("%(count)d proposal rejected.", "%(count)d proposals rejected.", "count"),
    ),
    "undo": (
        gettext_lazy("Proposal undone."),
        ngettext_lazy("%(count)d proposal undone.", "%(count)d proposals undone.", "count"),
    ),
}


def _decide(request: AuthenticatedHttpRequest, proposal: Proposal, decision: str) -> bool:
    try:
        if decision == "reject":
            cleaning.reject(proposal)
        else:
            DECISIONS[decision](proposal, editor=request.user, via=EditVia.PAGE)
    except cleaning.ProposalError as exc:
        messages.error(request, _("Proposal %(id)s: %(error)s.") % {"id": proposal.pk, "error": exc})
        return False
    return True


@subject_view
@login_required
@require_POST
def review_decide(request: AuthenticatedHttpRequest, pk: int, decision: str) -> HttpResponse:
    if decision not in DECISIONS:
        raise Http404("No such decision.")
    proposal = get_object_or_404(Proposal, pk=pk, user=subject_user(request))
    if _decide(request, proposal, decision):
        messages.success(request, DECIDED[decision][0])
    return redirect("memory_review")


@subject_view
@login_required
@require_POST
def review_bulk(request: AuthenticatedHttpRequest) -> HttpResponse:
    decision = request.POST.get("decision")
    ids = [value for value in request.POST.getlist("ids") if value.isdigit()]
    if decision not in ("approve", "reject") or not ids:
        messages.error(request, _("Select proposals, then Approve or Reject."))
        return redirect("memory_review")
    proposals = Proposal.objects.filter(user=subject_user(request), pk__in=ids, status=ProposalStatus.PENDING)
    done = sum(_decide(request, proposal, decision) for proposal in proposals)
    messages.success(request, DECIDED[decision][1] % {"count": done})
    return redirect("memory_review")
