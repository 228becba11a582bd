"""Knowledge search and `ask`: hybrid retrieval over one user's chunks in chosen namespaces.

Multi-query expansion (MQE) and HyDE each cost LLM calls, so they run only when asked for and an LLM is
configured; otherwise the plain hybrid search runs and the notice says why. Those calls and `ask`'s answer share
one Budget (core.llm): LLM_TURN_SECONDS, and only while the request's client waits (ClientGone when it left).
"""

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db.models import Q
from django.utils.translation import gettext

from core import hybrid
from core.cpu_slots import cpu_slot
from core.limits import MAX_QUERY_CHARS, check_text
from core.llm import Budget, LLMError, get_llm
from core.ranking import RANKING, RankingConfig
from core.text import lexical_terms, without_paths
from core.vectorstore import VectorStoreError
from knowledge.mirror import COLLECTION, chunk_store, missing_points
from knowledge.models import Chunk, DocumentStatus
from knowledge.pipeline.convert import normalise_text
from knowledge.services import check_namespace

logger = logging.getLogger(__name__)

MQE_VARIANTS = 2


@dataclass
class ChunkHit:
    chunk: Chunk
    score: float
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The passage's document, and its page or sheet when it has one: "Annual report (page 3)"."""
        where = self.chunk.location
        return f"{self.chunk.document.title} ({where})" if where else self.chunk.document.title

    def as_dict(self, max_chars: int | None = None) -> dict:
        """The hit as the API, the tools and citations give it; the text cut at `max_chars` if given."""
        chunk = self.chunk
        text = chunk.text
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + "…"
        return {
            "chunk_id": str(chunk.pk),
            "document_id": str(chunk.document_id),
            "document_title": chunk.document.title,
            "heading_path": chunk.heading_path,
            "ordinal": chunk.ordinal,
            # Where in the document: "page 3", "pages 3–4" (PDF) or "sheet Sales" (workbook), else "".
            "location": chunk.location,
            "page": chunk.page_start,
            "page_end": chunk.page_end,
            "sheet": chunk.sheet,
            "score": self.score,
            "scores": self.scores,
            "text": text,
        }


@dataclass
class KnowledgeResult:
    hits: list[ChunkHit]
    notice: str = ""
    queries: list[str] = field(default_factory=list)


def search_chunks(
    *,
    user: User,
    query: str,
    namespaces: Sequence[str] = ("default",),
    limit: int = 5,
    min_score: float = 0.0,
    mqe: bool = False,
    hyde: bool = False,
    budget: Budget | None = None,
    config: RankingConfig = RANKING,
) -> KnowledgeResult:
    """`config` is for the benchmarks and tests; the product always ranks by RANKING."""
    # Normalised like the documents' text (knowledge.pipeline.convert.normalise_text), so "ＡＰＩ" finds "API".
    query = normalise_text(check_text(query.strip(), "query", MAX_QUERY_CHARS))
    if not query:
        return KnowledgeResult([], "the query is empty")
    namespaces = [check_namespace(namespace) for namespace in namespaces]
    where = {"user_id": str(user.pk), "namespace": namespaces}
    notices: list[str] = []
    queries, hypothetical = [query], None
    if mqe or hyde:
        llm = get_llm()
        if llm is None:
            notices.append(
                gettext("MQE/HyDE need an LLM (set LLM_BASE_URL); ran a plain hybrid search instead.")
            )
        else:
            budget = budget or Budget.for_request()
            try:
                if mqe:
                    queries += _expand(llm, query, budget)
                if hyde:
                    hypothetical = _hypothetical_answer(llm, query, budget)
            except LLMError as exc:
                notices.append(gettext("MQE/HyDE skipped: %(error)s") % {"error": exc})
    # The CPU slot after the LLM's expansion: a thread waiting on the LLM holds none (core.cpu_slots).
    with cpu_slot():
        try:
            store = chunk_store()
            runs = [
                hybrid.gather(
                    store,
                    COLLECTION,
                    query=text,
                    where=where,
                    limit=config.candidates,
                    dense_text=hypothetical if index == 0 and hypothetical else None,
                )
                for index, text in enumerate(queries)
            ]
        except VectorStoreError as exc:
            logger.warning("knowledge search unavailable, falling back to text match: %s", exc)
            # What went wrong helps (another process holds the embedded store); where on the disk does not.
            reason = without_paths(str(exc) or exc.__class__.__name__)
            notices.append(
                gettext("The vector store is unavailable (%(reason)s); results come from a plain text match.")
                % {"reason": reason}
            )
            hits = [hit for hit in _text_match(user, query, namespaces) if hit.score >= min_score]
            hits.sort(key=lambda hit: hit.score, reverse=True)
            return KnowledgeResult(hits[:limit], " ".join(notices), queries)
        missing = missing_points(user, namespaces)
        if missing:
            notices.append(
                gettext(
                    "The vector store is missing %(count)s of your passages until it is repaired; plain text "
                    "matches are included meanwhile."
                )
                % {"count": f"{missing:,}"}
            )
        fused = hybrid.fuse(runs, config)
        # Fetch by primary key only and check owner, namespace and state in Python: SQLite's planner otherwise
        # walks the user's whole (user, namespace) index, and the documents' Markdown is never needed here.
        # A disabled chunk has no vector, and is left out here too while its vector is still being removed.
        candidates = Chunk.objects.filter(pk__in=list(fused.relevance)).select_related("document")
        chunks = [
            chunk
            for chunk in candidates.defer("document__markdown").order_by()
            if chunk.user_id == user.pk
            and chunk.namespace in namespaces
            and chunk.document.status == DocumentStatus.READY
            and chunk.enabled
        ]
        hits = []
        for chunk in chunks:
            evidence = fused.evidence[str(chunk.pk)]
            if evidence.relevance < min_score or not evidence.above_floor:
                continue  # nearest is not related: under every model's floor and without the query's terms
            hits.append(
                ChunkHit(chunk, evidence.relevance, {**evidence.signal_parts(), "fused": evidence.relevance})
            )
    if missing:
        found = {hit.chunk.pk for hit in hits}
        hits += [
            hit
            for hit in _text_match(user, query, namespaces)
            if hit.chunk.pk not in found and hit.score >= min_score
        ]
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return KnowledgeResult(hits[:limit], " ".join(notices), queries)


TEXT_MATCHES = 500


def _text_match(user: User, query: str, namespaces: list[str]) -> list[ChunkHit]:
    """Passages containing the query's words, each scored by the share of them it holds: what a search can
    still find while the vector store cannot serve it (unavailable, or missing points until they are repaired)."""
    terms = sorted(set(lexical_terms(query, for_query=True)), key=len, reverse=True)[:8]
    if not terms:
        return []
    condition = Q()
    for term in terms:
        condition |= Q(text__icontains=term)
    chunks = (
        Chunk.objects.active()
        .filter(user=user, namespace__in=namespaces)
        .filter(condition)
        .select_related("document")
        .defer("document__markdown")[:TEXT_MATCHES]
    )
    hits = []
    for chunk in chunks:
        lowered = chunk.text.lower()
        overlap = round(sum(1 for term in terms if term in lowered) / len(terms), 4)
        hits.append(ChunkHit(chunk, overlap, {"text": overlap, "fused": overlap}))
    return hits


def _expand(llm, query: str, budget: Budget) -> list[str]:
    text = llm.ask(
        "You rewrite search queries. Reply with alternative phrasings of the user's query, one per line, "
        "in the query's language, no numbering, no commentary.",
        f"Query: {query}\nGive {MQE_VARIANTS} alternative queries.",
        temperature=0.3,
        budget=budget,
    )
    variants = [re.sub(r"^[\s\-*\d.)]+", "", line).strip() for line in text.splitlines()]
    return [variant for variant in variants if variant and variant != query][:MQE_VARIANTS]


def _hypothetical_answer(llm, query: str, budget: Budget) -> str:
    return llm.ask(
        "Write a short passage (3-5 sentences) that would answer the question, as it might appear in a document. "
        "Use the question's language.",
        query,
        temperature=0.3,
        budget=budget,
    )


@dataclass
class Answer:
    text: str
    citations: list[dict]
    llm_used: bool
    notice: str = ""


ASK_SYSTEM = (
    "Answer the question using only the numbered passages. Cite every statement with the passage numbers in "
    "square brackets, like [1] or [2][3]. If the passages do not contain the answer, say so. "
    "Answer in the question's language."
)


def ask(
    *,
    user: User,
    question: str,
    namespaces: Sequence[str] = ("default",),
    limit: int = 5,
    min_score: float = 0.0,
    mqe: bool = False,
    hyde: bool = False,
    max_chars: int = 1200,
    budget: Budget | None = None,
) -> Answer:
    """An answer with numbered citations [n] to chunks; without an LLM, the best passages with the same citations.
    `budget`: pass Budget.for_request(request) so the answer stops when the client leaves."""
    budget = budget or Budget.for_request()
    result = search_chunks(
        user=user,
        query=question,
        namespaces=namespaces,
        limit=limit,
        min_score=min_score,
        mqe=mqe,
        hyde=hyde,
        budget=budget,
    )
    citations = [citation(index, hit, max_chars) for index, hit in enumerate(result.hits, start=1)]
    if not citations:
        return Answer(
            gettext("No passage in the knowledge base matches this question."), [], False, result.notice
        )
    passages = "\n\n".join(f"[{c['n']}] ({source(c)})\n{c['text']}" for c in citations)
    llm = get_llm()
    if llm is None:
        notice = gettext(
            "No LLM is configured (LLM_BASE_URL): these are the most relevant passages, not a generated answer."
        )
        return Answer(passages, citations, False, " ".join(filter(None, [result.notice, notice])))
    try:
        text = llm.ask(
            ASK_SYSTEM, f"Passages:\n{passages}\n\nQuestion: {question}", temperature=0.2, budget=budget
        )
    except LLMError as exc:
        notice = gettext("The LLM failed (%(error)s); these are the most relevant passages instead.") % {
            "error": exc
        }
        return Answer(passages, citations, False, " ".join(filter(None, [result.notice, notice])))
    return Answer(text, citations, True, result.notice)


def citation(n: int, hit: ChunkHit, max_chars: int) -> dict:
    return {"n": n, **hit.as_dict(max_chars)}


def source(hit: dict) -> str:
    """A hit dict's source as a reader names it: "Annual report, page 3 > Results"."""
    where = ", ".join(filter(None, [hit["document_title"], hit["location"]]))
    heading = hit["heading_path"] if hit["heading_path"] != hit["sheet"] else ""  # a sheet is its own heading
    return f"{where} > {heading}" if heading else where
