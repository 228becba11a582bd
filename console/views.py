"""The evaluation pages (golden questions, runs and their history, the "✓ right answer" button on search
results), the dashboard and the health page. The evaluation pages and the dashboard read subject_user(request),
the signed-in user or the one a staff member opened (core.acting). Writes go through console.evaluation. The
Settings page (account, privacy, archive, API keys) is console.settings_views."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console import evaluation
from console.forms import AnswerForm, QuestionForm, RunForm, split_values
from console.metrics import METRICS
from console.models import EvaluationRun, GoldenQuestion, RunScope, Target
from conversations.models import AgentSession
from core.acting import subject_user, subject_view
from core.health import run_checks
from core.pages import AuthenticatedHttpRequest
from core.queries import owned_by_pk
from knowledge.models import Chunk, Document
from knowledge.search import search_chunks
from memories import facets
from memories.history import most_and_least_retrieved
from memories.models import Entity, Memory, MemoryType
from memories.profile import user_profile
from memories.retrieval import search_memories

TEMPLATE = "console/evaluation.html"
RUN_TEMPLATE = "console/run_detail.html"
BUTTON_TEMPLATE = "console/answer_button.html"
PICKER_LIMIT = 10


# --- what the tables show --------------------------------------------------------------------------------------


def cells(summary: dict, previous: dict | None) -> list[dict]:
    """One cell per metric: the value as text and, when there is a previous figure, the change and its sign."""
    row = []
    for metric in METRICS:
        value, before = summary.get(metric), (previous or {}).get(metric)
        cell = {"metric": metric, "value": "—" if value is None else f"{value:.3f}", "delta": "", "trend": ""}
        if value is not None and before is not None and round(value - before, 3):
            change = value - before
            cell |= {"delta": f"{change:+.3f}", "trend": "up" if change > 0 else "down"}
        row.append(cell)
    return row


def summary_rows(run: EvaluationRun, previous: EvaluationRun | None) -> list[dict]:
    """The run's summary as table rows (overall, per target, per signal alone, per memory type), each compared
    with the same row of the previous run."""
    before = previous.summary if previous else {}
    rows = []

    def add(group: str, label: str, summary: dict, earlier: dict | None) -> None:
        rows.append(
            {
                "group": group,
                "label": label,
                "answerable": summary.get("answerable", 0),
                "no_answer": summary.get("no_answer", 0),
                "cells": cells(summary, earlier),
            }
        )

    add("overall", _("Fused search (the product)"), run.summary.get("overall", {}), before.get("overall"))
    # The summary's keys are stored values (a target, a memory type, a signal's name): shown by their label in
    # the page's language, the signals' technical names as they are.
    labels = {"target": dict(Target.choices), "type": dict(MemoryType.choices), "signal": {}}
    for key, group in (("by_target", "target"), ("by_signal", "signal"), ("by_type", "type")):
        for name, summary in run.summary.get(key, {}).items():
            if key == "by_target" and len(run.summary[key]) < 2:
                continue  # one target: the same numbers as overall
            add(group, str(labels[group].get(name, name)), summary, before.get(key, {}).get(name))
    return rows


def _questions(request: AuthenticatedHttpRequest):
    return GoldenQuestion.objects.for_user(subject_user(request)).prefetch_related(
        Prefetch("expected_memories", Memory.objects.only("pk", "content", "memory_type")),
        Prefetch(
            "expected_chunks",
            Chunk.objects.select_related("document").only(
                "pk", "ordinal", "text", "document", "document__title"
            ),
        ),
    )


def _page(request: AuthenticatedHttpRequest, **extra) -> dict:
    history = evaluation.run_history(user=subject_user(request))
    latest = history[0] if history else None
    return {
        "questions": _questions(request),
        "form": QuestionForm(),
        "run_form": RunForm(),
        "history": [
            (view, cells(view.run.summary.get("overall", {}), _overall(view.previous))) for view in history
        ],
        "latest": latest,
        "latest_rows": summary_rows(latest.run, latest.previous) if latest else [],
        "metrics": METRICS,
        **extra,
    }


def _overall(run: EvaluationRun | None) -> dict | None:
    return run.summary.get("overall") if run else None


# --- the page and golden questions ------------------------------------------------------------------------------


@subject_view
@login_required
@require_GET
def evaluation_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, TEMPLATE, _page(request))


@subject_view
@login_required
@require_POST
def question_add(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = QuestionForm(request.POST)
    if form.is_valid():
        try:
            evaluation.question_create(user=subject_user(request), **form.service_arguments())
        except evaluation.EvaluationError as exc:
            form.add_error(None, str(exc))
    if not form.errors:
        if request.htmx:
            return render(
                request, f"{TEMPLATE}#questions", {"questions": _questions(request), "form": QuestionForm()}
            )
        messages.success(request, _("Golden question added."))
        return redirect("evaluation")
    # Refused: the form comes back as typed, with the answers ticked in the picker still ticked.
    picked = _candidates(
        request, target=request.POST.get("target", ""), query="", picked=request.POST.getlist("picked")
    )
    context = {"form": form, "candidates": picked}
    if request.htmx:
        return render(
            request, f"{TEMPLATE}#questions", {"questions": _questions(request), **context}, status=422
        )
    return render(request, TEMPLATE, _page(request, **context), status=422)


def _question(request: AuthenticatedHttpRequest, pk: int) -> GoldenQuestion:
    return get_object_or_404(_questions(request), pk=pk)


def _edit_form(question: GoldenQuestion) -> QuestionForm:
    initial = {
        "text": question.text,
        "target": question.target,
        "pasted": "\n".join(sorted(question.expected_ids())),
        "namespaces": ", ".join(question.namespaces),
        "no_answer": question.no_answer,
        "note": question.note,
    }
    return QuestionForm(initial=initial, prefix_id=f"edit-{question.pk}")


@subject_view
@login_required
@require_http_methods(["GET", "POST"])
def question_edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    question = _question(request, pk)
    status = 200
    if request.method == "GET":
        form = _edit_form(question)
    else:
        form = QuestionForm(request.POST, prefix_id=f"edit-{question.pk}")
        if form.is_valid():
            try:
                evaluation.question_update(question=question, **form.service_arguments())
            except evaluation.EvaluationError as exc:
                form.add_error(None, str(exc))
            else:
                if request.htmx:
                    context = {"question": _question(request, pk), "saved": True}
                    return render(request, f"{TEMPLATE}#question-row", context)
                messages.success(request, _("Golden question saved."))
                return redirect("evaluation")
        status = 422
    context = {"question": question, "form": form}
    if request.htmx:
        return render(request, f"{TEMPLATE}#question-row-form", context, status=status)
    return render(request, "console/question_edit.html", context, status=status)


@subject_view
@login_required
@require_GET
def question_row(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """One row of the questions table (what an edit's Cancel swaps back)."""
    return render(request, f"{TEMPLATE}#question-row", {"question": _question(request, pk)})


@subject_view
@login_required
@require_POST
def question_delete(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    evaluation.question_delete(question=_question(request, pk))
    if request.htmx:
        return HttpResponse("")  # the row swaps itself out
    messages.success(request, _("Golden question deleted."))
    return redirect("evaluation")


def _candidates(
    request: AuthenticatedHttpRequest, *, target: str, query: str, picked: list[str]
) -> list[dict]:
    """The ticked answers (still ticked) and then search results for `query` to tick, as picker rows."""
    try:
        ids = evaluation.parse_ids(picked)
    except evaluation.EvaluationError:
        ids = []
    rows = []
    if target == Target.KNOWLEDGE:
        chunks = owned_by_pk(Chunk.objects.select_related("document"), subject_user(request), ids)
        rows += [_chunk_candidate(chunk, checked=True) for chunk in chunks]
        namespaces = sorted(
            set(Document.objects.for_user(subject_user(request)).values_list("namespace", flat=True))
        )
        if query and namespaces:  # every namespace the user has: the question's come from its answers
            hits = search_chunks(
                user=subject_user(request), query=query, namespaces=namespaces, limit=PICKER_LIMIT
            )
            rows += [_chunk_candidate(hit.chunk) for hit in hits.hits]
    else:
        memories = owned_by_pk(Memory.objects.all(), subject_user(request), ids)
        rows += [_memory_candidate(memory, checked=True) for memory in memories]
        if query:
            memory_hits = search_memories(user=subject_user(request), query=query, limit=PICKER_LIMIT).hits
            rows += [_memory_candidate(hit.memory) for hit in memory_hits]
    seen, unique = set(), []
    for row in rows:
        if row["id"] not in seen:
            seen.add(row["id"])
            unique.append(row)
    return unique


def _memory_candidate(memory: Memory, *, checked: bool = False) -> dict:
    return {"id": memory.pk, "label": memory.content, "kind": memory.memory_type, "checked": checked}


def _chunk_candidate(chunk: Chunk, *, checked: bool = False) -> dict:
    label = f"{chunk.document.title} #{chunk.ordinal} ({chunk.namespace}): {chunk.text}"
    return {"id": chunk.pk, "label": label, "kind": "chunk", "checked": checked}


@subject_view
@login_required
@require_GET
def answer_picker(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Search results to tick as expected answers of the question being added; ticked ones stay."""
    query = request.GET.get("pick_q", "").strip()[: evaluation.MAX_TEXT]
    candidates = _candidates(
        request, target=request.GET.get("target", ""), query=query, picked=request.GET.getlist("picked")
    )
    return render(request, f"{TEMPLATE}#answer-picker", {"candidates": candidates, "pick_query": query})


# --- runs ------------------------------------------------------------------------------------------------------


@subject_view
@login_required
@require_POST
def run_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = RunForm(request.POST)
    scope = (form.cleaned_data["scope"] if form.is_valid() else "") or RunScope.ALL
    try:
        run = evaluation.evaluation_run(user=subject_user(request), scope=scope)
    except evaluation.EvaluationError as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect("evaluation")
        # htmx swaps 2xx and 422 only (base.html): a 503 would leave the button with no word of why.
        status = 422 if exc.status == 422 else 200
        return render(request, f"{TEMPLATE}#runs", _page(request, run_error=str(exc)), status=status)
    if request.htmx:
        return render(request, f"{TEMPLATE}#runs", _page(request))
    return redirect("evaluation_run", pk=run.pk)


@subject_view
@login_required
@require_GET
def run_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EvaluationRun.objects.for_user(subject_user(request)), pk=pk)
    view = evaluation.run_view(run, run.previous())
    context = {
        "view": view,
        "run": run,
        "rows": summary_rows(run, view.previous),
        "overall": cells(run.summary.get("overall", {}), _overall(view.previous)),
        "metrics": METRICS,
    }
    return render(request, RUN_TEMPLATE, context)


# --- the "✓ right answer" button on the memory and knowledge search results -------------------------------------


@subject_view
@login_required
@require_POST
def answer_mark(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = AnswerForm(request.POST)
    error, question, created = "", None, False
    if not form.is_valid():
        error = "This result could not be saved as an answer: " + "; ".join(
            f"{field} {', '.join(map(str, errors))}" for field, errors in form.errors.items()
        )
    else:
        data = form.cleaned_data
        knowledge = data["target"] == Target.KNOWLEDGE
        try:
            question, created = evaluation.question_add_answer(
                user=subject_user(request),
                target=data["target"],
                text=data["q"],
                answer_id=data["answer"],
                namespaces=split_values(data["namespaces"]) if knowledge else (),
            )
        except evaluation.EvaluationError as exc:
            error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        else:
            assert question is not None  # question_add_answer returned it, or there would be an error
            messages.success(
                request, _("Saved as an expected answer of “%(question)s”.") % {"question": question.text}
            )
        return redirect(reverse("evaluation") + (f"#question-{question.pk}" if question else ""))
    context = {"question": question, "created": created, "error": error}
    return render(request, f"{BUTTON_TEMPLATE}#answer-saved", context, status=422 if error else 200)


# --- Dashboard and health ------------------------------------------------------------------------------


@subject_view
@login_required
@require_GET
def dashboard(request: AuthenticatedHttpRequest) -> HttpResponse:
    memories = Memory.objects.for_user(subject_user(request))
    # COUNT(*): the (user, memory_type, -created_at) index answers alone, where COUNT(id) reads every row.
    by_type = dict(memories.values_list("memory_type").annotate(n=Count("*")).order_by())
    profile = user_profile(subject_user(request), per_group=5)
    context = {
        "memory_count": sum(by_type.values()),
        "by_type": by_type,
        "entity_count": Entity.objects.filter(user=subject_user(request)).count(),
        "document_count": Document.objects.for_user(subject_user(request)).count(),
        "session_count": AgentSession.objects.for_user(subject_user(request)).count(),
        "recent": memories.select_related("session")[:8],
        "profile": profile,
        # The profile's headings and conflict lines are worded in the page's language (memories.profile).
        "profile_outline": profile.outline(chinese=get_language() == "zh-hans"),
        "sources": facets.source_counts(subject_user(request)),
        "tags": facets.tag_counts(subject_user(request)),
        "top_tags": facets.TOP_TAGS,
    }
    # Most and least retrieved memories (memories.history), each row a link to the memory.
    context["most_retrieved"], context["least_retrieved"] = most_and_least_retrieved(subject_user(request))
    return render(request, "console/dashboard.html", context)


@login_required
@require_GET
def health(request: AuthenticatedHttpRequest) -> HttpResponse:
    checks = run_checks()
    # Details name hosts, ports and data paths: staff only, as at /api/v1/health.
    ok = all(c.ok for c in checks)
    context = {"checks": checks, "ok": ok, "details": request.user.is_staff}
    return render(request, "console/health.html", context, status=200 if ok else 503)
