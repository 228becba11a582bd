"""One search over all requested memory types of one user, with every score part kept.

1. Candidates from each signal: one dense search per embedding space and one sparse lexical search, all under
   the same filter (user, types, importance, session, time range, not expired).
2. Weighted reciprocal-rank fusion (core.hybrid): dense spaces weighted by the query's language (MiniLM for
   English, USE for Chinese), the lexical signal always counts fully.
3. Hello-Agents' shaping per type, applied to the normalised fused relevance:
   working  relevance × time decay;  episodic/perceptual 0.8·relevance + 0.2·recency;
   semantic 0.7·relevance + 0.3·graph (relevance alone when the query names no known entity);
   then × (0.8 + 0.4·importance).
The limit applies to the merged list: never split per type and re-sorted by importance.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.utils import timezone

from agents.models import AgentSession
from core import hybrid, stores
from core.queries import owned_by_pk
from core.text import lexical_terms
from core.vectorstore import VectorStoreError
from memories import mirror
from memories.entities import extract_mentions
from memories.models import Entity, Memory, MemoryEntity, MemoryType
from memories.services import importance_weight, recency_score, time_decay

logger = logging.getLogger(__name__)

# Per signal. LoCoMo turn recall@10 moves by under 0.01 between 30 and 200 candidates (bench/results/locomo.md):
# past rank 50 a memory rarely reaches a top 10, and every candidate is a row to load.
CANDIDATES_PER_SIGNAL = 50
GRAPH_DEPTH = 2
GRAPH_HOP_SCORES = {0: 1.0, 1: 0.6, 2: 0.3}


@dataclass
class MemoryHit:
    memory: Memory
    score: float
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class SearchResult:
    hits: list[MemoryHit]
    notice: str = ""  # e.g. the vector store was unavailable and a plain text match was used


def build_where(
    *,
    user: AbstractBaseUser,
    memory_types: Sequence[str] | None,
    min_importance: float,
    session: AgentSession | None,
    time_range: tuple[datetime | None, datetime | None] | None,
    now: datetime,
) -> dict:
    where: dict = {"user_id": str(user.pk), "expires_ts": {"gt": now.timestamp()}}
    if memory_types:
        where["memory_type"] = list(memory_types)
    if min_importance > 0:
        where["importance"] = {"gte": float(min_importance)}
    if session is not None:
        where["session_id"] = str(session.pk)
    if time_range:
        start, end = time_range
        bounds = {}
        if start:
            bounds["gte"] = start.timestamp()
        if end:
            bounds["lte"] = end.timestamp()
        if bounds:
            where["created_ts"] = bounds
    return where


def search_memories(
    *,
    user: AbstractBaseUser,
    query: str,
    limit: int = 5,
    memory_types: Sequence[str] | None = None,
    min_importance: float = 0.0,
    session: AgentSession | None = None,
    time_range: tuple[datetime | None, datetime | None] | None = None,
) -> SearchResult:
    now = timezone.now()
    query = query.strip()
    if not query:
        return SearchResult(
            _by_importance(user, limit, memory_types, min_importance, session, time_range, now)
        )
    where = build_where(
        user=user,
        memory_types=memory_types,
        min_importance=min_importance,
        session=session,
        time_range=time_range,
        now=now,
    )
    notice = ""
    try:
        fused = hybrid.search(
            mirror.memory_store(), mirror.COLLECTION, query=query, where=where, limit=CANDIDATES_PER_SIGNAL
        )
    except VectorStoreError as exc:
        logger.warning("vector search unavailable, falling back to text match: %s", exc)
        fused = hybrid.Fused()
        notice = f"The vector store is unavailable ({exc}); results come from a plain text match."
    relevance_by_id, raw, weights = fused.relevance, fused.raw, fused.weights

    graph = _graph_scores(user, query)
    candidates = _candidates(
        user, set(relevance_by_id) | set(graph), memory_types, min_importance, session, time_range, now
    )
    if notice:
        matches = _text_match(user, query, memory_types, min_importance, session, time_range, now)
        for memory_id, (candidate, overlap) in matches.items():
            candidates[memory_id] = candidate
            relevance_by_id[memory_id] = overlap

    ranked: list[tuple[float, str, dict[str, float]]] = []
    for memory_id, candidate in candidates.items():
        relevance = relevance_by_id.get(memory_id, 0.0)
        graph_score = graph.get(memory_id, 0.0)
        if relevance <= 0 and graph_score <= 0:
            continue
        if not notice and graph_score <= 0 and hybrid.is_noise(raw.get(memory_id, {}), weights):
            continue  # a memory must match the query in some way, not merely be one of few
        score, scores = _shape(
            candidate, relevance, graph_score, bool(graph), raw.get(memory_id, {}), weights, now
        )
        ranked.append((score, memory_id, scores))
    ranked.sort(key=lambda item: item[0], reverse=True)
    ranked = ranked[:limit]
    rows = _rows(user, [memory_id for _, memory_id, _ in ranked])
    # A memory deleted between the two queries is simply left out.
    hits = [
        MemoryHit(rows[memory_id], score, scores) for score, memory_id, scores in ranked if memory_id in rows
    ]
    return SearchResult(hits, notice)


@dataclass(frozen=True)
class _Candidate:
    """The columns the shaping reads: ranking ~150 candidates needs no content, metadata or session."""

    memory_type: str
    importance: float
    created_at: datetime


_CANDIDATE_COLUMNS = ("pk", "memory_type", "importance", "created_at")


def _shape(
    candidate: _Candidate,
    relevance: float,
    graph: float,
    graph_applies: bool,
    raw: dict[str, float],
    weights: dict[str, float],
    now: datetime,
) -> tuple[float, dict[str, float]]:
    age = now - candidate.created_at
    recency = recency_score(age)
    decay = time_decay(age)
    if candidate.memory_type == MemoryType.WORKING:
        base = relevance * decay
    elif candidate.memory_type == MemoryType.SEMANTIC:
        # The tutorial's 0.7 vector + 0.3 graph, when the query names entities; otherwise a missing graph
        # signal must not cap facts at 0.7 while other types reach 1.0.
        base = 0.7 * relevance + 0.3 * graph if graph_applies else relevance
    else:
        base = 0.8 * relevance + 0.2 * recency
    weight = importance_weight(candidate.importance)
    dense = {name: score for name, score in raw.items() if name != hybrid.LEXICAL}
    scores = {
        "dense": round(hybrid.dense_score(raw, weights), 4),
        "lexical": round(raw.get(hybrid.LEXICAL, 0.0), 4),
        "fused": round(relevance, 4),
        "recency": round(recency, 4),
        "decay": round(decay, 4),
        "importance": round(weight, 4),
        "graph": round(graph, 4),
        **{f"dense_{name}": round(score, 4) for name, score in dense.items()},
    }
    return round(base * weight, 6), scores


def _graph_scores(user: AbstractBaseUser, query: str) -> dict[str, float]:
    """Memories linked to entities named in the query (1.0) or to their neighbours within two hops."""
    if not Entity.objects.filter(user=user).exists():
        return {}  # nothing to link to: skip extraction (spaCy NER costs ~9 ms per English query)
    keys = [mention.key for mention in extract_mentions(query)]
    if not keys:
        return {}
    start = {str(pk) for pk in Entity.objects.filter(user=user, key__in=keys).values_list("pk", flat=True)}
    if not start:
        return {}
    distance = dict.fromkeys(start, 0)
    for neighbor in stores.graph_store().neighbors(str(user.pk), sorted(start), depth=GRAPH_DEPTH):
        distance.setdefault(neighbor.entity_id, neighbor.distance)
    scores: dict[str, float] = {}
    links = MemoryEntity.objects.filter(entity_id__in=list(distance), memory__user=user)
    for memory_id, entity_id in links.values_list("memory_id", "entity_id"):
        score = GRAPH_HOP_SCORES.get(distance[str(entity_id)], 0.0)
        scores[str(memory_id)] = max(scores.get(str(memory_id), 0.0), score)
    return scores


def _filtered(user, memory_types, min_importance, session, time_range, now, ids=None):
    if ids is None:
        memories = Memory.objects.filter(user=user)
    else:
        memories = owned_by_pk(Memory.objects.all(), user, ids)
    memories = memories.filter(archived_at=None).exclude(expires_at__lte=now)
    if memory_types:
        memories = memories.filter(memory_type__in=list(memory_types))
    if min_importance > 0:
        memories = memories.filter(importance__gte=min_importance)
    if session is not None:
        memories = memories.filter(session=session)
    if time_range:
        start, end = time_range
        if start:
            memories = memories.filter(created_at__gte=start)
        if end:
            memories = memories.filter(created_at__lte=end)
    return memories


def _candidates(user, ids, memory_types, min_importance, session, time_range, now) -> dict[str, _Candidate]:
    # The filters are applied again in SQL: the database, not the mirror, decides what a user may see.
    memories = _filtered(user, memory_types, min_importance, session, time_range, now, ids=ids)
    return {
        str(pk): _Candidate(memory_type, importance, created_at)
        for pk, memory_type, importance, created_at in memories.values_list(*_CANDIDATE_COLUMNS)
    }


def _rows(user, ids: Sequence[str]) -> dict[str, Memory]:
    memories = owned_by_pk(Memory.objects.select_related("session"), user, ids)
    return {str(memory.pk): memory for memory in memories}


def _by_importance(user, limit, memory_types, min_importance, session, time_range, now) -> list[MemoryHit]:
    memories = _filtered(user, memory_types, min_importance, session, time_range, now)
    hits = []
    for memory in memories.select_related("session").order_by("-importance", "-created_at")[:limit]:
        hits.append(
            MemoryHit(
                memory, round(memory.importance, 6), {"importance": importance_weight(memory.importance)}
            )
        )
    return hits


def _text_match(
    user, query, memory_types, min_importance, session, time_range, now
) -> dict[str, tuple[_Candidate, float]]:
    """Memories containing the query's terms, each with the share of terms it contains."""
    terms = sorted(set(lexical_terms(query, for_query=True)), key=len, reverse=True)[:8]
    if not terms:
        return {}
    condition = Q()
    for term in terms:
        condition |= Q(content__icontains=term)
    memories = _filtered(user, memory_types, min_importance, session, time_range, now).filter(condition)[:500]
    return {
        str(pk): (_Candidate(memory_type, importance, created_at), _text_overlap(query, content))
        for pk, memory_type, importance, created_at, content in memories.values_list(
            *_CANDIDATE_COLUMNS, "content"
        )
    }


def _text_overlap(query: str, content: str) -> float:
    terms = set(lexical_terms(query, for_query=True))
    if not terms:
        return 0.0
    lowered = content.lower()
    return sum(1 for term in terms if term in lowered) / len(terms)
