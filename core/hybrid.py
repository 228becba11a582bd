"""Hybrid retrieval shared by memories and knowledge: one ranking per signal, fused by calibrated scores.

Signals are one dense search per embedding space (MiniLM, USE, or a remote model) and one sparse lexical search
(jieba words + CJK bigrams, BM25 weights, IDF applied by the vector store).

Why scores and not ranks: reciprocal-rank fusion gives every signal's rank 1 full credit, so a memory that shares
one common word with the query outranked the paraphrase that the dense models found (bench/results/retrieval.md).
Here each signal's scores are put on one scale by how far they stand above that query's other candidates
(distribution-based score fusion, as Qdrant's DBSF: mean ± 3 standard deviations → 0..1), and each signal is
weighted by how much it can know:
- a dense model by the languages it reads: an English-only model gets no say on a Chinese query or a Chinese
  text (EmbeddingSet.pair_weights);
- the lexical signal by its evidence: the share of the query's term weight (IDF among the points the query may
  see, so a word in every memory weighs nothing) that its best match contains. A query that shares only common
  words with everything leaves the ranking to the dense models.

The vector store keeps, per point, its distinct term ids (payload TERMS, indexed) and whether it is mostly CJK
(payload CJK), so coverage, rarity and language weights need no row from the database.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from core import stores
from core.embeddings import CJK_CUTOFF
from core.parallel import in_parallel
from core.text import (
    cjk_ratio,
    lexical_terms,
    query_words,
    sparse_document_vector,
    sparse_query_vector,
    term_index,
)
from core.vectorstore import Hit, Point, SparseVector, VectorStore, Where

LEXICAL = "lexical"
TERMS = "terms"  # payload: the text's distinct lexical term ids, as strings (a keyword index)
CJK = "cjk"  # payload: True when the text is mostly CJK
FUSION_KEYS = (TERMS, CJK)  # the payload fusion reads from a hit

# The lexical signal's weight when its best match holds the whole query (the dense spaces share a weight of 1).
# Chosen on the dev sets (the *_dev sets and LoCoMo conversations 1-3) among 1, 2 and 3 with the gate below and the
# default embedders; reported on the others (bench/results/retrieval.md). Dev hit@1 at 1 / 2 / 3: paraphrase_en
# 0.80 / 0.77 / 0.77, mixed 0.76 / 0.72 / 0.68, knowledge 0.86 / 0.86 / 0.77, LoCoMo R@1 0.32 / 0.37 / 0.38 (lexical
# alone 0.39): 1 loses LoCoMo to the lexical signal, 3 loses the mixed and knowledge sets.
LEXICAL_WEIGHT = 2.0
# The lexical gate looks at this many of the lexical signal's first hits for its best coverage.
GATE_DEPTH = 10
# Distribution-based normalisation: mean - SPREAD·σ → 0, mean + SPREAD·σ (or the best score, if higher) → 1.
SPREAD = 3.0
# A lexical match must hold at least this share of the query's word weight to count on its own as a match
# (the relevance floor; dense models have theirs per model, Embedder.noise_floor). Chosen on the dev sets among
# 0.1, 0.25 and 0.5: paraphrase_zh_dev hit@1 0.80 / 0.80 / 0.87 (lower floors let partial matches on common
# words back in above the answer), LoCoMo 1-3 R@10 0.726 / 0.718 / 0.702.
COVERAGE_FLOOR = 0.5

Ranking = list[tuple[str, float]]

# One line per score part, for the pages and the API docs.
SCORE_PARTS = {
    "fused": "Where every signal puts it among this query's candidates, weighted by what each signal can know (0..1).",
    "dense": "Similarity of meaning (cosine) from the embedding models that read both texts' languages.",
    "lexical": "Share of the query's words found in the text; rare words count more (0..1).",
}


@dataclass
class Evidence:
    """Why one candidate ranked where it did; every part is 0..1 except the raw similarities."""

    relevance: float = 0.0  # the fused score
    coverage: float = 0.0  # share of the query's term weight the text contains (rare terms weigh more)
    dense: float = 0.0  # the dense similarities, weighted as the fusion weighted them
    similarities: dict[str, float] = field(default_factory=dict)  # per dense space, raw cosine
    above_floor: bool = False  # some signal says "related", not merely "nearest"

    def signal_parts(self) -> dict[str, float]:
        """The signals' score parts as the API and the pages show them (SCORE_PARTS explains each)."""
        return {
            "dense": self.dense,
            "lexical": self.coverage,
            **{f"dense_{name}": score for name, score in self.similarities.items()},
        }


@dataclass
class Fused:
    """Per candidate id, its evidence; `relevance` is the fused score (0..1) for short."""

    evidence: dict[str, Evidence] = field(default_factory=dict)

    @property
    def relevance(self) -> dict[str, float]:
        return {point_id: item.relevance for point_id, item in self.evidence.items()}


@dataclass
class Signals:
    """What one query's signals found: each signal's ranking, the candidates' payloads and the query's terms
    with their document frequency among the points `where` selects."""

    query: str
    rankings: dict[str, Ranking]
    payloads: dict[str, dict]
    term_frequency: dict[str, int]
    total: int

    @cached_property
    def word_weights(self) -> dict[str, float]:
        """Each query word's share of the query's IDF weight (BM25's IDF over the visible points)."""
        weights = {
            term: math.log(1 + (self.total - count + 0.5) / (count + 0.5))
            for term, count in self.term_frequency.items()
        }
        whole = sum(weights.values())
        return {term: weight / whole for term, weight in weights.items()} if whole > 0 else {}


def gather(
    store: VectorStore,
    collection: str,
    *,
    query: str,
    where: Where,
    limit: int,
    dense_text: str | None = None,
    every_space: bool = False,
) -> Signals:
    """Every signal's ranking that fusion weighs: a dense space that reads no text in the query's script (MiniLM
    for a Chinese query) is neither embedded nor searched, unless `every_space` (to compare the signals alone).
    `dense_text` replaces the query for the dense signals only (HyDE)."""
    embedding_set = stores.embedding_set()
    spaces = None if every_space else embedding_set.spaces_reading(cjk_ratio(query) >= CJK_CUTOFF)
    dense_query = dense_text or query
    sparse = SparseVector.from_pairs(sparse_query_vector(query))

    def ranking(space: str) -> list[Hit]:
        if space == LEXICAL:
            vector: Sequence[float] | SparseVector = sparse
        else:
            vector = embedding_set.spaces[space].embed_query(dense_query).tolist()
        return store.search(
            collection, using=space, vector=vector, limit=limit, where=where, payload_keys=FUSION_KEYS
        )

    # Each space embeds the query and searches in a thread of its own: the models and the store drop the GIL,
    # so a search waits for its slowest model (e5) instead of all three in turn.
    names = [*(embedding_set.spaces if spaces is None else spaces), *([LEXICAL] if sparse else [])]
    rankings: dict[str, Ranking] = {}
    payloads: dict[str, dict] = {}
    for name, hits in zip(names, in_parallel(names, ranking), strict=True):
        rankings[name] = [(hit.id, hit.score) for hit in hits]
        payloads.update((hit.id, hit.payload) for hit in hits)
    frequency: dict[str, int] = {}
    total = 0
    if sparse:
        # Rarity among what this query may see (this user's memories, this namespace), not the whole store.
        total = store.count_cached(collection, where)
        words = {str(term_index(word)) for word in query_words(query)}
        frequency = {word: store.count_cached(collection, {**where, TERMS: word}) for word in sorted(words)}
    return Signals(query, rankings, payloads, frequency, total)


def signal_rankings(
    store: VectorStore, collection: str, *, query: str, where: Where, limit: int
) -> dict[str, Ranking]:
    """Each signal's ranking alone, best first (benchmarks and the evaluation page compare them)."""
    return gather(store, collection, query=query, where=where, limit=limit, every_space=True).rankings


def points(
    items: Sequence[tuple[str, str, dict]], vectors: Mapping[str, np.ndarray | Sequence[np.ndarray]]
) -> list[Point]:
    """Points for (id, text, payload) items: each dense space's vector (row i of `vectors[space]`), the
    text's lexical sparse vector and the TERMS/CJK payload that fusion reads."""
    return [
        Point(
            id=point_id,
            dense={space: rows[index].tolist() for space, rows in vectors.items()},
            sparse={LEXICAL: SparseVector.from_pairs(sparse_document_vector(text))},
            payload={
                **payload,
                TERMS: sorted({str(term_index(term)) for term in lexical_terms(text)}),
                CJK: cjk_ratio(text) >= CJK_CUTOFF,
            },
        )
        for index, (point_id, text, payload) in enumerate(items)
    ]


def coverage(signals: Signals, payload: dict) -> float:
    """Share of the query's IDF weight whose words the text contains."""
    held = set(payload.get(TERMS, ()))
    return sum(weight for term, weight in signals.word_weights.items() if term in held)


def _spread(scores: list[float]) -> tuple[float, float]:
    """Mean and standard deviation of a ranking's scores."""
    mean = sum(scores) / len(scores)
    return mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))


def _normaliser(scores: list[float]):
    """Maps a score to 0..1 by where it stands in this ranking: mean ± SPREAD standard deviations."""
    if not scores:
        return lambda score: 0.0
    mean, deviation = _spread(scores)
    if deviation <= 1e-9:
        return lambda score: 1.0 if score >= mean and score > 0 else 0.0
    low = mean - SPREAD * deviation
    # The scale reaches the ranking's best score where that stands out further, instead of clipping it: two
    # strong candidates keep their order and the gap between them (LoCoMo 1-3 R@1 0.368 → 0.399, the dev sets
    # unchanged).
    span = max(2 * SPREAD * deviation, max(scores) - low)
    return lambda score: min(1.0, max(0.0, (score - low) / span))


def fuse(runs: Sequence[Signals], limit: int) -> Fused:
    """Calibrated score fusion of one or more runs (query variants); a candidate keeps its best run."""
    fused = Fused()
    for signals in runs:
        for point_id, item in _fuse_run(signals, limit).items():
            previous = fused.evidence.get(point_id)
            if previous is None or item.relevance > previous.relevance:
                fused.evidence[point_id] = item
    return fused


def _fuse_run(signals: Signals, limit: int) -> dict[str, Evidence]:
    embedding_set = stores.embedding_set()
    floors = embedding_set.noise_floors()
    query_cjk = cjk_ratio(signals.query) >= CJK_CUTOFF
    found = {name: dict(ranking) for name, ranking in signals.rankings.items()}
    dense_names = [name for name in found if name != LEXICAL]
    # The lexical signal and an English-only model see only texts in the query's script. Where the multilingual
    # models' likely answers are partly in the other script (a store in two languages), their "best among what
    # I can see" counts only for that share.
    likely = [
        point_id
        for name in embedding_set.cross_lingual_spaces
        for point_id, _ in signals.rankings.get(name, [])[:GATE_DEPTH]
    ]
    same_script = (
        sum(signals.payloads[p].get(CJK, query_cjk) == query_cjk for p in likely) / len(likely)
        if likely
        else 1.0
    )
    by_script = {cjk: embedding_set.pair_weights(query_cjk, cjk, same_script) for cjk in (False, True)}
    pair_weights = {
        point_id: by_script[bool(payload.get(CJK, query_cjk))]
        for point_id, payload in signals.payloads.items()
    }
    # A dense space is normalised over the texts it can read: MiniLM's cosines for Chinese texts are noise and
    # would otherwise set its scale for the English ones.
    readable = {
        name: [s for point_id, s in found[name].items() if pair_weights[point_id].get(name, 0) > 0]
        for name in dense_names
    }
    scale = {name: _normaliser(readable[name]) for name in dense_names}
    # Over this similarity a space calls a text related: its noise floor, and for a model whose floor cannot
    # separate answers from unrelated texts, a place well above the query's other candidates too.
    related_at = {}
    for name in dense_names:
        floor, standout = floors.get(name, (1.0, 0.0))
        if standout and readable[name]:
            mean, deviation = _spread(readable[name])
            floor = max(floor, mean + standout * deviation)
        related_at[name] = floor
    # Points without a lexical hit score 0: pad the pool so one weak match in a small store is no outlier.
    lexical_scores = list(found.get(LEXICAL, {}).values())
    padding = max(0, min(limit, signals.total) - len(lexical_scores))
    scale[LEXICAL] = _normaliser(lexical_scores + [0.0] * padding)
    lowest = {name: min(found[name].values()) for name in dense_names if found[name]}
    coverages = {point_id: coverage(signals, payload) for point_id, payload in signals.payloads.items()}
    gate = max(
        (coverages[point_id] for point_id, _ in signals.rankings.get(LEXICAL, [])[:GATE_DEPTH]), default=0.0
    )
    evidence: dict[str, Evidence] = {}
    for point_id in signals.payloads:
        weights = {name: pair_weights[point_id].get(name, 0.0) for name in dense_names}
        weights[LEXICAL] = LEXICAL_WEIGHT * gate * same_script
        # A space that did not return the point ranks it below its last hit.
        similarities = {name: found[name].get(point_id, lowest.get(name, 0.0)) for name in dense_names}
        lexical = found.get(LEXICAL, {}).get(point_id, 0.0)
        relevance = weights[LEXICAL] * scale[LEXICAL](lexical) + sum(
            weights[name] * scale[name](similarities[name]) for name in dense_names
        )
        relevance /= sum(weights.values()) or 1.0
        dense_weight = sum(weights[name] for name in dense_names)
        dense = (
            sum(weights[name] * similarities[name] for name in dense_names) / dense_weight
            if dense_weight
            else 0.0
        )
        # Only a similarity the space returned counts here, not the one it was ranked at for missing it.
        above_floor = coverages[point_id] >= COVERAGE_FLOOR or any(
            weights[name] > 0 and found[name].get(point_id, -1.0) >= related_at[name] for name in dense_names
        )
        evidence[point_id] = Evidence(
            round(relevance, 6),
            round(coverages[point_id], 4),
            round(dense, 4),
            # Only the spaces that had a say: MiniLM's cosine between English and Chinese is noise, not evidence.
            {name: round(similarity, 4) for name, similarity in similarities.items() if weights[name] > 0},
            above_floor,
        )
    return evidence


def search(store: VectorStore, collection: str, *, query: str, where: Where, limit: int) -> Fused:
    return fuse([gather(store, collection, query=query, where=where, limit=limit)], limit)
