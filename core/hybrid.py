"""Hybrid retrieval shared by memories and knowledge: one ranking per signal, fused by weighted RRF.

Signals are one dense search per embedding space (MiniLM, USE, or a remote model) and one sparse lexical search
(jieba words + CJK bigrams, BM25 weights, IDF applied by the vector store). Fusing ranks rather than raw scores
keeps signals with different scales comparable, and weighting the dense spaces by the query's language keeps an
English-only model from adding noise to a Chinese query.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from core import stores
from core.text import sparse_document_vector, sparse_query_vector
from core.vectorstore import Point, SparseVector, VectorStore, Where

# Small: a signal's first ranks count for much more than its tail. Measured on LoCoMo (bench/results/locomo.md,
# knowledge_recall.md): memory turn recall@10 0.688 at 5 against 0.654 at 20, and knowledge search ahead at 5 in
# every chunking and metric (evidence recall@1 +0.02 to +0.06); 3 is within 0.01 of 5 with more ties.
RRF_K = 5
LEXICAL = "lexical"
LEXICAL_WEIGHT = 1.0

Ranking = list[tuple[str, float]]


@dataclass
class Fused:
    """Fused relevance per id (1.0 = first in every signal) and each signal's raw best score."""

    relevance: dict[str, float] = field(default_factory=dict)
    raw: dict[str, dict[str, float]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)


def signal_rankings(
    store: VectorStore,
    collection: str,
    *,
    query: str,
    where: Where,
    limit: int,
    dense_text: str | None = None,
) -> dict[str, Ranking]:
    """One ranking per signal. `dense_text` replaces the query for the dense signals only (HyDE)."""
    rankings: dict[str, Ranking] = {}
    for space, vector in stores.embedding_set().embed_query(dense_text or query).items():
        hits = store.search(collection, using=space, vector=vector.tolist(), limit=limit, where=where)
        rankings[space] = [(hit.id, hit.score) for hit in hits]
    sparse = SparseVector.from_pairs(sparse_query_vector(query))
    if sparse:
        hits = store.search(collection, using=LEXICAL, vector=sparse, limit=limit, where=where)
        rankings[LEXICAL] = [(hit.id, hit.score) for hit in hits]
    return rankings


def points(items: Sequence[tuple[str, str, dict]], vectors: dict[str, Sequence]) -> list[Point]:
    """Points for (id, text, payload) items: each dense space's vector (row i of `vectors[space]`) and the
    text's lexical sparse vector, the signals `signal_rankings` searches."""
    return [
        Point(
            id=point_id,
            dense={space: rows[index].tolist() for space, rows in vectors.items()},
            sparse={LEXICAL: SparseVector.from_pairs(sparse_document_vector(text))},
            payload=payload,
        )
        for index, (point_id, text, payload) in enumerate(items)
    ]


def signal_weights(query: str, signals: Sequence[str]) -> dict[str, float]:
    weights = dict.fromkeys(signals, LEXICAL_WEIGHT)
    for space, weight in stores.embedding_set().query_weights(query).items():
        if space in weights:
            weights[space] = weight
    return weights


def fuse(runs: Sequence[tuple[dict[str, Ranking], dict[str, float]]]) -> Fused:
    """Weighted reciprocal-rank fusion of several runs (one per query variant), normalised to 0..1."""
    fused = Fused()
    totals: dict[str, float] = defaultdict(float)
    best_possible = 0.0
    for rankings, weights in runs:
        best_possible += sum(weights.get(name, 0.0) for name in rankings) / (RRF_K + 1)
        for name, ranking in rankings.items():
            for rank, (point_id, score) in enumerate(ranking, start=1):
                totals[point_id] += weights.get(name, 0.0) / (RRF_K + rank)
                signal_scores = fused.raw.setdefault(point_id, {})
                signal_scores[name] = max(signal_scores.get(name, score), score)
        for name, weight in weights.items():
            fused.weights[name] = max(fused.weights.get(name, 0.0), weight)
    best_possible = best_possible or 1.0
    fused.relevance = {point_id: total / best_possible for point_id, total in totals.items()}
    return fused


def dense_score(raw: dict[str, float], weights: dict[str, float]) -> float:
    """The dense spaces' similarities weighted as the fusion weighted them: one figure for the console."""
    dense = {name: score for name, score in raw.items() if name != LEXICAL}
    total = sum(weights.get(name, 0.0) for name in dense)
    return sum(weights.get(name, 0.0) * score for name, score in dense.items()) / total if total else 0.0


# Below this a dense similarity says "unrelated" for both local models (and for the usual remote ones).
NOISE_FLOOR = 0.05


def is_noise(raw: dict[str, float], weights: dict[str, float]) -> bool:
    """No lexical match and barely any dense similarity: ranked only because every candidate gets a rank."""
    return raw.get(LEXICAL, 0.0) <= 0 and dense_score(raw, weights) < NOISE_FLOOR


def search(store: VectorStore, collection: str, *, query: str, where: Where, limit: int) -> Fused:
    rankings = signal_rankings(store, collection, query=query, where=where, limit=limit)
    return fuse([(rankings, signal_weights(query, list(rankings)))])
