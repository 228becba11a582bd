"""Golden questions and evaluation runs. Every function is keyword-only and works inside one user's data.

A run asks the product's own search every golden question (memories.retrieval.search_memories,
knowledge.search.search_chunks) and each signal alone (core.hybrid.signal_rankings), and stores the scores with a
snapshot of the settings that shaped them, so a change of model, fusion constants or data shows up as a change
in the numbers between two runs.
"""

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone
from django.utils.translation import gettext

from console import metrics
from console.models import EvaluationRun, GoldenQuestion, RunScope, Target
from core import hybrid, ranking, stores
from core.errors import RequestRefused
from core.queries import owned_by_pk
from core.vectorstore import VectorStoreError
from knowledge import search as knowledge_search
from knowledge.mirror import chunk_store
from knowledge.models import Chunk
from knowledge.services import KnowledgeError, check_namespace
from memories import mirror, retrieval
from memories.models import Memory, MemoryType

LIMIT = 10  # results per question: hit@10 is the widest cut-off
TOP_KEPT = 3  # returned results kept per question in a run
MAX_TEXT = 1000
SNIPPET = 140


class EvaluationError(RequestRefused):
    """A request evaluation refuses."""


# --- golden questions ----------------------------------------------------------------------------------------


def parse_ids(values: Iterable[str | uuid.UUID]) -> list[uuid.UUID]:
    """Distinct ids in the order given; a value that is not an id is refused by name."""
    ids, bad = [], []
    for value in values:
        try:
            ids.append(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip()))
        except ValueError:
            bad.append(str(value)[:40])
    if bad:
        raise EvaluationError(
            gettext("not an id: %(items)s") % {"items": ", ".join(repr(value) for value in bad[:5])}
        )
    return list(dict.fromkeys(ids))


def _owned[M: (Memory, Chunk)](model: type[M], user: User, ids: list[uuid.UUID], label: str) -> list[M]:
    rows = list(owned_by_pk(model.objects.all(), user, ids))
    missing = [str(pk) for pk in ids if pk not in {row.pk for row in rows}]
    if missing:
        # The same words whether the row is someone else's or does not exist: ids reveal nothing.
        raise EvaluationError(
            gettext("no %(label)s of yours has the id %(items)s")
            % {"label": label, "items": ", ".join(missing[:5])}
        )
    return rows


def _clean_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise EvaluationError(gettext("the question must not be empty"))
    if len(text) > MAX_TEXT:
        raise EvaluationError(
            gettext("the question is longer than %(max_text)s characters") % {"max_text": MAX_TEXT}
        )
    return text


def _clean_namespaces(namespaces: Iterable[str]) -> list[str]:
    try:
        return sorted({check_namespace(namespace) for namespace in namespaces if namespace.strip()})
    except KnowledgeError as exc:
        raise EvaluationError(str(exc)) from None


@dataclass
class _Answers:
    memories: list[Memory]
    chunks: list[Chunk]
    namespaces: list[str]


def _checked_answers(
    *,
    user: User,
    target: str,
    memory_ids: Iterable[str | uuid.UUID],
    chunk_ids: Iterable[str | uuid.UUID],
    namespaces: Sequence[str],
    known_namespaces: Sequence[str] = (),
    no_answer: bool,
    require_answers: bool = True,
) -> _Answers:
    """The expected answers as rows of `user`, or an EvaluationError before anything is written.

    Knowledge questions search `namespaces`; left empty, they are those of the expected chunks (and
    `known_namespaces`, the question's before an edit), and "default" when that is nothing either. A question
    needs answers or "no answer expected", except when an edit leaves its answers alone: answers deleted
    since keep it saveable, shown as needing answers.
    """
    if target not in Target.values:
        raise EvaluationError(
            gettext("target must be one of %(items)s") % {"items": ", ".join(Target.values)}
        )
    memory_ids, chunk_ids = parse_ids(memory_ids), parse_ids(chunk_ids)
    if target == Target.MEMORIES and chunk_ids:
        raise EvaluationError(
            "a memories question expects memories, not chunks (send expected_chunk_ids: [])"
        )
    if target == Target.KNOWLEDGE and memory_ids:
        raise EvaluationError(
            "a knowledge question expects chunks, not memories (send expected_memory_ids: [])"
        )
    if target == Target.MEMORIES and any(namespace.strip() for namespace in namespaces):
        raise EvaluationError(gettext("namespaces apply to knowledge questions only"))
    answers = _Answers(
        _owned(Memory, user, memory_ids, gettext("memory")),
        _owned(Chunk, user, chunk_ids, gettext("chunk")),
        [],
    )
    if no_answer and (answers.memories or answers.chunks):
        raise EvaluationError(gettext("a question marked “no answer expected” cannot also expect answers"))
    if require_answers and not no_answer and not (answers.memories or answers.chunks):
        raise EvaluationError(
            gettext("expect at least one answer, or mark the question “no answer expected”")
        )
    if target == Target.KNOWLEDGE:
        chosen = _clean_namespaces(namespaces)
        held = {chunk.namespace for chunk in answers.chunks}
        outside = sorted(held - set(chosen))
        if chosen and outside:
            raise EvaluationError(
                f"an expected chunk is in namespace {', '.join(outside)}, which the question does not search"
            )
        answers.namespaces = chosen or sorted(held | set(known_namespaces)) or ["default"]
    return answers


def _save(question: GoldenQuestion, answers: _Answers) -> GoldenQuestion:
    question.namespaces = answers.namespaces
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction survives a duplicate
            question.save()
    except IntegrityError:
        raise EvaluationError(
            gettext("you already have a golden question with this text for this target")
        ) from None
    question.expected_memories.set(answers.memories)
    question.expected_chunks.set(answers.chunks)
    return question


@transaction.atomic
def question_create(
    *,
    user: User,
    text: str,
    target: str = Target.MEMORIES,
    expected_memory_ids: Sequence = (),
    expected_chunk_ids: Sequence = (),
    namespaces: Sequence[str] = (),
    no_answer: bool = False,
    note: str = "",
) -> GoldenQuestion:
    answers = _checked_answers(
        user=user,
        target=target,
        memory_ids=expected_memory_ids,
        chunk_ids=expected_chunk_ids,
        namespaces=namespaces,
        no_answer=no_answer,
    )
    question = GoldenQuestion(
        user=user, target=target, text=_clean_text(text), no_answer=no_answer, note=(note or "").strip()
    )
    return _save(question, answers)


@transaction.atomic
def question_update(
    *,
    question: GoldenQuestion,
    text: str | None = None,
    target: str | None = None,
    expected_memory_ids: Sequence | None = None,
    expected_chunk_ids: Sequence | None = None,
    namespaces: Sequence[str] | None = None,
    no_answer: bool | None = None,
    note: str | None = None,
) -> GoldenQuestion:
    """Change the given fields (None keeps a field); the whole result is checked before anything is written."""
    question = GoldenQuestion.objects.select_for_update().get(pk=question.pk)
    target = question.target if target is None else target
    answers = _checked_answers(
        user=question.user,
        target=target,
        memory_ids=question.expected_memories.values_list("pk", flat=True)
        if expected_memory_ids is None
        else expected_memory_ids,
        chunk_ids=question.expected_chunks.values_list("pk", flat=True)
        if expected_chunk_ids is None
        else expected_chunk_ids,
        namespaces=namespaces or [],
        known_namespaces=question.namespaces if namespaces is None and target == question.target else [],
        no_answer=question.no_answer if no_answer is None else no_answer,
        require_answers=(target, expected_memory_ids, expected_chunk_ids, no_answer)
        != (question.target, None, None, None),
    )
    question.target = target
    if text is not None:
        question.text = _clean_text(text)
    if no_answer is not None:
        question.no_answer = no_answer
    if note is not None:
        question.note = note.strip()
    return _save(question, answers)


def question_delete(*, question: GoldenQuestion) -> None:
    question.delete()


@transaction.atomic
def question_add_answer(
    *,
    user: User,
    target: str,
    text: str,
    answer_id: str | uuid.UUID,
    namespaces: Sequence[str] = (),
) -> tuple[GoldenQuestion, bool]:
    """The "✓ right answer" button: the golden question for this query gets this answer; (question, created).

    An existing question for the same text keeps its other answers and namespaces, and stops being a no-answer
    question: the user just said something is the right result.
    """
    text = _clean_text(text)
    kind = "expected_memory_ids" if target == Target.MEMORIES else "expected_chunk_ids"
    question = GoldenQuestion.objects.for_user(user).filter(target=target, text=text).first()
    if question is None:
        answers: dict[str, Any] = {kind: [answer_id]}
        created = question_create(user=user, text=text, target=target, namespaces=namespaces, **answers)
        return created, True
    current = question.expected_ids()
    chosen = sorted(set(question.namespaces) | set(namespaces)) if target == Target.KNOWLEDGE else None
    answers = {kind: [*current, str(answer_id)]}
    updated = question_update(question=question, no_answer=False, namespaces=chosen, **answers)
    return updated, False


# --- runs ------------------------------------------------------------------------------------------------------


def search_settings() -> dict:
    """What shapes search results now: the models, the stores and every number of the ranking (core.ranking)."""
    return {
        "embedding": stores.embedding_set().describe(),
        "embed_model_type": settings.EMBED_MODEL_TYPE,
        "vector_store": "Qdrant server" if settings.QDRANT_URL else "Qdrant Edge (embedded)",
        "ranking": ranking.RANKING.snapshot(),
        "limit": LIMIT,
    }


def evaluation_run(*, user: User, scope: str = RunScope.ALL) -> EvaluationRun:
    """Run the user's golden questions in `scope` now and store the run; nothing is stored when search is down."""
    if scope not in RunScope.values:
        raise EvaluationError(
            gettext("scope must be one of %(items)s") % {"items": ", ".join(RunScope.values)}
        )
    questions = list(
        GoldenQuestion.objects.for_user(user)
        .in_scope(scope)
        .prefetch_related(
            Prefetch("expected_memories", Memory.objects.only("pk", "memory_type")),
            Prefetch("expected_chunks", Chunk.objects.only("pk")),
        )
        .order_by("created_at", "pk")
    )
    scored = [question for question in questions if not question.needs_answers]
    if not questions:
        raise EvaluationError(
            gettext("no golden question to run in scope “%(scope)s”: add some first") % {"scope": scope}
        )
    if not scored:
        raise EvaluationError(
            f"no golden question to run in scope “{scope}”: every one needs expected answers"
        )
    started = time.monotonic()
    snapshot = search_settings()
    results = [_evaluate(user, question) for question in scored]
    return EvaluationRun.objects.create(
        user=user,
        scope=scope,
        created_at=timezone.now(),
        duration_ms=round((time.monotonic() - started) * 1000),
        question_count=len(scored),
        skipped_count=len(questions) - len(scored),
        summary=summary_of(results),
        results=results,
        settings=snapshot,
    )


def _evaluate(user: User, question: GoldenQuestion) -> dict:
    expected = question.expected_ids()
    result: retrieval.SearchResult | knowledge_search.KnowledgeResult
    if question.target == Target.MEMORIES:
        result = retrieval.search_memories(user=user, query=question.text, limit=LIMIT)
        returned = [(str(hit.memory.pk), hit.memory.content) for hit in result.hits]
        types = sorted({memory.memory_type for memory in question.expected_memories.all()})
        store, collection = mirror.memory_store, mirror.COLLECTION
        # The product's own filter (owner, not expired), so a signal alone sees what fused search sees.
        where = retrieval.build_where(
            user=user,
            memory_types=None,
            min_importance=0.0,
            session=None,
            time_range=None,
            now=timezone.now(),
        )
    else:
        result = knowledge_search.search_chunks(
            user=user, query=question.text, namespaces=question.namespaces or ["default"], limit=LIMIT
        )
        returned = [
            (str(hit.chunk.pk), f"{hit.chunk.document.title} #{hit.chunk.ordinal}: {hit.chunk.text}")
            for hit in result.hits
        ]
        types = []
        store, collection = chunk_store, knowledge_search.COLLECTION
        where = {"user_id": str(user.pk), "namespace": list(question.namespaces or ["default"])}
    if result.notice:  # the searches fall back (or give up) when the vector store is down
        raise EvaluationError(
            gettext("search is degraded, so no run was stored: %(notice)s") % {"notice": result.notice}, 503
        )
    try:
        rankings = hybrid.signal_rankings(store(), collection, query=question.text, where=where, limit=LIMIT)
    except VectorStoreError as exc:
        raise EvaluationError(
            gettext("the vector store is unavailable (%(exc)s); no run was stored") % {"exc": exc}, 503
        ) from None
    ids = [point_id for point_id, _ in returned]
    signals = {}
    for name in [*stores.embedding_set().dimensions, hybrid.LEXICAL]:
        ranked = [point_id for point_id, _ in rankings.get(name, [])]  # no lexical terms: no lexical ranking
        signals[name] = {
            "rank": first_rank_or_none(ranked, expected, question.no_answer),
            "returned": len(ranked),
        }
    return {
        "question_id": question.pk,
        "text": question.text,
        "target": question.target,
        "no_answer": question.no_answer,
        "expected": sorted(expected),
        "types": types,
        "rank": first_rank_or_none(ids, expected, question.no_answer),
        "returned": len(ids),
        "top": [{"id": point_id, "text": text[:SNIPPET]} for point_id, text in returned[:TOP_KEPT]],
        "signals": signals,
    }


def first_rank_or_none(returned: Sequence[str], expected: set[str], no_answer: bool) -> int | None:
    return None if no_answer else metrics.first_rank(returned, expected)


def summary_of(results: Sequence[dict]) -> dict:
    """Metrics overall, per target, per signal alone, and per memory type of the expected memories."""

    def outcomes(rows: Iterable[dict], signal: str | None = None) -> list[metrics.Outcome]:
        parts = [
            row if signal is None else row["signals"].get(signal, {"rank": None, "returned": 0})
            for row in rows
        ]
        return [
            metrics.Outcome(row["no_answer"], part["rank"], part["returned"])
            for row, part in zip(rows, parts, strict=True)
        ]

    results = list(results)
    signals = sorted({name for row in results for name in row["signals"]})
    return {
        "overall": metrics.summarise(outcomes(results)),
        "by_target": {
            target: metrics.summarise(outcomes([row for row in results if row["target"] == target]))
            for target in Target.values
            if any(row["target"] == target for row in results)
        },
        "by_signal": {name: metrics.summarise(outcomes(results, name)) for name in signals},
        "by_type": {
            kind: metrics.summarise(outcomes([row for row in results if kind in row["types"]]))
            for kind in MemoryType.values
            if any(kind in row["types"] for row in results)
        },
    }


@dataclass
class RunView:
    """A run with its comparison to the previous run of the same scope."""

    run: EvaluationRun
    previous: EvaluationRun | None
    deltas: dict[str, float | None]
    settings_changed: bool


def run_view(run: EvaluationRun, previous: EvaluationRun | None) -> RunView:
    before = previous.summary.get("overall") if previous else None
    return RunView(
        run,
        previous,
        metrics.deltas(run.summary.get("overall", {}), before),
        previous is not None and previous.settings != run.settings,
    )


def run_history(*, user: User, limit: int = 20) -> list[RunView]:
    """The newest runs, each compared with the previous run of its scope (one query, plus one per scope whose
    previous run is older than the page)."""
    runs = list(EvaluationRun.objects.for_user(user)[: limit + 1])
    views = []
    for index, run in enumerate(runs[:limit]):
        previous = next((older for older in runs[index + 1 :] if older.scope == run.scope), None)
        if previous is None and len(runs) > limit:
            previous = run.previous()
        views.append(run_view(run, previous))
    return views
