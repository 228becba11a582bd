"""Pure scoring formulas of the memory system: Hello-Agents' working-memory decay and recency, and the shaping
that turns a candidate's fused relevance (core.hybrid, in σ) into its ranking score with core.ranking's numbers.

No database: retrieval passes in what it read, and bench/retrieval_eval.py replays the same functions
over captured searches to choose the numbers.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.hybrid import Evidence
from core.ranking import RankingConfig
from memories.types import policy_of

# Hello-Agents' working-memory decay: 0.95 per 6 hours, never below 0.1.
DECAY_FACTOR = 0.95
DECAY_PERIOD_HOURS = 6
DECAY_FLOOR = 0.1


def time_decay(age: timedelta) -> float:
    """Hello-Agents' working-memory decay: 0.95 per 6 hours, never below 0.1."""
    hours = max(age.total_seconds(), 0) / 3600
    return max(DECAY_FLOOR, float(DECAY_FACTOR ** (hours / DECAY_PERIOD_HOURS)))


def recency_score(age: timedelta) -> float:
    """1 now, 1/2 a day old, 1/(1 + days)."""
    return 1.0 / (1.0 + max(age.total_seconds(), 0) / 86400)


def working_priority(importance: float, age: timedelta) -> float:
    """Which working memory a full session keeps: importance times decay (Hello-Agents)."""
    return importance * time_decay(age)


@dataclass(frozen=True)
class Candidate:
    """The columns the shaping reads: ranking ~150 candidates needs no content, metadata or session."""

    memory_type: str
    importance: float
    created_at: datetime
    superseded: bool = False


def shape(
    candidate: Candidate,
    relevance: float,
    graph: float,
    now: datetime,
    config: RankingConfig,
) -> tuple[float, dict[str, float]]:
    """(score, its parts): the fused relevance plus the bonuses of core.ranking, all in σ."""
    age = now - candidate.created_at
    # The type's policy (memories.types) names the curve; the weight is core.ranking's, the same for every type.
    recency = time_decay(age) if policy_of(candidate.memory_type).recency == "decay" else recency_score(age)
    score = (
        relevance
        + config.graph_weight * graph
        + config.recency_weight * recency
        + config.importance_weight * (candidate.importance - 0.5)
    )
    parts = {"recency": round(recency, 4), "importance": candidate.importance, "graph": round(graph, 4)}
    if candidate.superseded:
        score -= config.superseded_penalty
        parts["superseded"] = 1.0
    return round(score, 6), parts


def rank(
    *,
    evidence: Mapping[str, Evidence],
    graph: Mapping[str, float],
    candidates: Mapping[str, Candidate],
    now: datetime,
    config: RankingConfig,
    text_matched: frozenset[str] = frozenset(),
    require_match: bool = False,
) -> list[tuple[float, str, dict[str, float]]]:
    """(score, memory id, score parts) of every related candidate, best first.

    A candidate is related when some model finds it over its noise floor (or it holds every word of the query)
    and its relevance, with the graph's bonus, reaches the floor (core.ranking): only the nearest there is does
    not count. A fact linked to the query's entities comes back even when no signal found it, as just related
    (at the floor) plus its graph bonus: the graph finds, the text ranks. `text_matched`: the
    memories a plain text match found while the vector store could not serve every one (their relevance is a
    share of the query's words, which has no floor).
    `require_match`: only what is related by itself, not through the graph (what goes into an answer or a
    model's context).
    """
    ranked = []
    for memory_id, candidate in candidates.items():
        found = evidence.get(memory_id)
        linked = graph.get(memory_id, 0.0)
        text_match = memory_id in text_matched
        if found is None or not (text_match or found.over_noise):
            if require_match or linked <= 0 or not policy_of(candidate.memory_type).states_facts:
                continue
            found = Evidence(relevance=config.floor or 0.0)
        elif text_match:
            if found.relevance <= 0:
                continue
        elif config.floor is not None and (
            found.relevance + (0.0 if require_match else config.graph_weight * linked) < config.floor
        ):
            continue
        score, parts = shape(candidate, found.relevance, linked, now, config)
        ranked.append((score, memory_id, {**found.signal_parts(), "fused": found.relevance, **parts}))
    ranked.sort(key=lambda item: (-item[0], item[1]))
    return ranked
