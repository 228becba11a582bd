"""Hybrid retrieval shared by memories and knowledge: one ranking per signal, fused on one scale.

Signals are one dense search per embedding space (MiniLM, USE, e5, BGE, or a remote model) and one sparse lexical
search (jieba words + CJK bigrams, BM25 weights, IDF applied by the vector store).

Fusion (core.ranking has every number it uses):
- each dense space's cosines become z-scores, standard deviations above the mean of that space's hits among the
  texts it reads for this query: models whose cosines crowd into 0.75..0.95 (e5) and models that spread them
  over 0..0.8 (USE) then speak on one scale, and a text's score says how far it stands out from this query's
  candidates, not how high its raw cosine happens to be;
- a text's dense relevance is the (weighted) mean of the z-scores of the models that read both the query and
  the text (EmbeddingSet.readers): an English-only model has no say on a Chinese text, and a one-language or
  script-bound model (e5) none on a text in the other script, which the cross-lingual ones (USE) rank;
- the lexical signal adds up to `lexical_weight` σ by coverage: the share of the query's term weight (IDF among
  the points the query may see, so a word in every memory weighs nothing) that the text holds, for texts in the
  query's script that hold at least two of its words (a one-word query: that word). Bounded, and one rare word
  shared with an unrelated text is no match at all, so it never outweighs the models' evidence;
- a candidate is related only when some model finds it closer than that model's noise floor, or when it holds
  every word of the query (Evidence.over_noise);
- a candidate whose fused relevance is under `floor` is not related, only nearest (Evidence.above_floor).
With equal weights and no lexical part this is the plain sum of the dense models' z-scores (`plain_sum`), the
baseline bench/retrieval_eval.py reports beside each signal alone; the product's search must not do worse.

The vector store keeps, per point, its distinct term ids (payload TERMS, indexed) and whether it is mostly CJK
(payload CJK), so coverage and the languages need no row from the database.
"""

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from django.conf import settings

from core import stores
from core.parallel import in_parallel
from core.ranking import RANKING, RankingConfig
from core.text import CJK as CJK_SCRIPT
from core.text import (
    LATIN,
    lexical_terms,
    query_words,
    script_of,
    sparse_document_vector,
    sparse_query_vector,
    term_index,
)
from core.vectorstore import (
    CollectionSpec,
    Hit,
    Point,
    SparseVector,
    VectorStore,
    VectorStoreConfigError,
    Where,
)

LEXICAL = "lexical"
TERMS = "terms"  # payload: the text's distinct lexical term ids, as strings (a keyword index)
CJK = "cjk"  # payload: True when the text is mostly CJK
FUSION_KEYS = (TERMS, CJK)  # the payload fusion reads from a hit

Ranking = list[tuple[str, float]]


def score_parts(config: RankingConfig = RANKING) -> dict[str, str]:
    """The fusion's score parts, explained with the configuration's values (pages, API docs)."""
    parts = config.score_parts()
    return {name: parts[name] for name in ("fused", "dense", "lexical")}


SCORE_PARTS = score_parts()


@dataclass
class Evidence:
    """Why one candidate ranked where it did: relevance and dense in σ, coverage 0..1, similarities raw cosines."""

    relevance: float = 0.0  # the fused score
    coverage: float = 0.0  # share of the query's term weight the text contains (rare terms weigh more)
    dense: float = 0.0  # the mean z-score of the models that read the pair
    similarities: dict[str, float] = field(default_factory=dict)  # per dense space that read it, raw cosine
    above_floor: bool = False  # related to the query, not merely the nearest there is
    # Some model that read it finds it closer than that model's noise floor (RankingConfig.model_floors), or it
    # holds every word of the query.
    over_noise: bool = True

    def signal_parts(self) -> dict[str, float]:
        """The signals' score parts as the API and the pages show them (SCORE_PARTS explains each)."""
        return {
            "dense": self.dense,
            "lexical": self.coverage,
            **{f"dense_{name}": score for name, score in self.similarities.items()},
        }


@dataclass
class Fused:
    """Per candidate id, its evidence; `relevance` is the fused score (σ) for short."""

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
    payloads: dict[str, dict[str, Any]]
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
    spaces = None if every_space else embedding_set.spaces_reading(script_of(query))
    dense_query = dense_text or query
    sparse = SparseVector.from_pairs(sparse_query_vector(query))

    def ranking(space: str) -> list[Hit]:
        if space == LEXICAL:
            vector: Sequence[float] | SparseVector = sparse
        else:
            vector = embedding_set.spaces[space].embed_query(dense_query).tolist()
        # The payload fusion reads comes with the hits: reading it for the ~120 distinct candidates of 150 hits
        # with one retrieve afterwards cost twice as much CPU (Qdrant Edge 0.9, 10,000 memories: 1.6 ms a search
        # against 0.85), and a second call to a remote Qdrant.
        return store.search(
            collection, using=space, vector=vector, limit=limit, where=where, payload_keys=FUSION_KEYS
        )

    # Each space embeds the query and searches in a thread of its own: the models and the store drop the GIL,
    # so a search waits for its slowest model instead of all of them in turn.
    names = [*(embedding_set.spaces if spaces is None else spaces), *([LEXICAL] if sparse else [])]
    rankings: dict[str, Ranking] = {}
    payloads: dict[str, dict[str, Any]] = {}
    for name, hits in zip(names, in_parallel(names, ranking), strict=True):
        rankings[name] = [(hit.id, hit.score) for hit in hits]
        for hit in hits:
            payloads.setdefault(hit.id, hit.payload)
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
    items: Sequence[tuple[str, str, dict[str, Any]]], vectors: Mapping[str, np.ndarray | Sequence[np.ndarray]]
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
                CJK: script_of(text) == CJK_SCRIPT,
            },
        )
        for index, (point_id, text, payload) in enumerate(items)
    ]


def lexical_match(signals: Signals, payload: dict[str, Any]) -> tuple[float, int]:
    """(coverage, words): the share of the query's IDF weight whose words the text contains, and how many of the
    query's words it contains."""
    held = set(payload.get(TERMS, ()))
    weights = [weight for term, weight in signals.word_weights.items() if term in held]
    return sum(weights), len(weights)


def _spread(scores: Sequence[float]) -> tuple[float, float]:
    """Mean and standard deviation of a ranking's scores."""
    mean = sum(scores) / len(scores)
    return mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))


def _z_scale(scores: Sequence[float]) -> Callable[[float], float]:
    """Maps a score to standard deviations above the mean of `scores` (0 when they do not spread)."""
    if not scores:
        return lambda score: 0.0
    mean, deviation = _spread(scores)
    if deviation <= 1e-9:
        return lambda score: 0.0
    return lambda score: (score - mean) / deviation


def fuse(runs: Sequence[Signals], config: RankingConfig = RANKING) -> Fused:
    """Fusion of one or more runs (query variants); a candidate keeps its best run."""
    fused = Fused()
    for signals in runs:
        for point_id, item in _fuse_run(signals, config).items():
            previous = fused.evidence.get(point_id)
            if previous is None or item.relevance > previous.relevance:
                fused.evidence[point_id] = item
    return fused


@dataclass(frozen=True)
class Candidate:
    """What fusion knows of one candidate before any weight applies (Scaled.candidates)."""

    z: dict[str, float]  # per dense space that reads the pair, its z-score among this query's candidates
    similarities: dict[str, float]  # the same spaces' raw cosines (a space that missed it: its last hit's)
    coverage: float  # share of the query's term weight the text holds
    lexical_base: float  # same-script share × coverage when words may count for it (script, gate), else 0
    # Words count for it and it holds every one of the query's: related whatever the models' noise floors say.
    holds_every_word: bool = False


@dataclass(frozen=True)
class Scaled:
    """One query's candidates on the fusion's scale: everything fusion computes that no weight changes."""

    candidates: dict[str, Candidate]


def scale(signals: Signals, config: RankingConfig = RANKING) -> Scaled:
    """Each candidate's z-scores, coverage and lexical base; `combine` weighs them (fuse = scale + combine, so a
    benchmark can weigh one scaling many ways). Reads config.script_share_depth, config.lexical_gate and
    config.lexical_min_terms only."""
    embedding_set = stores.embedding_set()
    query_script = script_of(signals.query)
    found = {name: dict(ranking) for name, ranking in signals.rankings.items()}
    dense_names = [name for name in found if name != LEXICAL]
    script = {
        point_id: CJK_SCRIPT if payload.get(CJK, query_script == CJK_SCRIPT) else LATIN
        for point_id, payload in signals.payloads.items()
    }
    readers = {
        text_script: [name for name in embedding_set.readers(query_script, text_script) if name in found]
        for text_script in (LATIN, CJK_SCRIPT)
    }
    # A space's scale is set by the texts it reads: MiniLM's cosines for Chinese texts are noise.
    readable = {
        name: [s for point_id, s in found[name].items() if name in readers[script[point_id]]]
        for name in dense_names
    }
    to_z = {name: _z_scale(readable[name]) for name in dense_names}
    # A space that did not return a text ranks it below its last hit: counted at its last hit's score.
    lowest = {name: min(readable[name], default=0.0) for name in dense_names}
    # How much of this query's likely answers (the cross-lingual models' first hits) the lexical signal can see.
    likely = [
        point_id
        for name in dense_names
        if embedding_set.spaces[name].cross_lingual
        for point_id, _ in signals.rankings[name][: config.script_share_depth]
    ]
    same_script = sum(script[p] == query_script for p in likely) / len(likely) if likely else 1.0
    similarities = {
        point_id: {name: found[name].get(point_id, lowest[name]) for name in readers[script[point_id]]}
        for point_id in signals.payloads
    }
    closeness = {point_id: _mean(sims.values()) for point_id, sims in similarities.items()}
    closest = max((closeness[p] for p in closeness if script[p] == query_script), default=0.0)
    candidates = {}
    for point_id, payload in signals.payloads.items():
        sims = similarities[point_id]
        held, words = lexical_match(signals, payload)
        # Words count for a text in the query's script whose meaning is close enough (config.lexical_gate) and
        # that holds config.lexical_min_terms of them (all of them, for a query of fewer).
        counts = (
            script[point_id] == query_script
            and closeness[point_id] > config.lexical_gate * closest
            and words >= min(config.lexical_min_terms, len(signals.word_weights))
        )
        candidates[point_id] = Candidate(
            {name: to_z[name](similarity) for name, similarity in sims.items()},
            sims,
            held,
            same_script * held if counts else 0.0,
            counts and 0 < words == len(signals.word_weights),
        )
    return Scaled(candidates)


def combine(scaled: Scaled, config: RankingConfig = RANKING) -> dict[str, Evidence]:
    """Each candidate's evidence under the configuration's weights, lexical weight and power, and floor."""
    evidence: dict[str, Evidence] = {}
    for point_id, item in scaled.candidates.items():
        weights = {name: config.model_weight(name) for name in item.z}
        total = sum(weights.values())
        dense = sum(weights[name] * z for name, z in item.z.items()) / total if total else 0.0
        relevance = dense + config.lexical_weight * item.lexical_base**config.lexical_power
        # A text that holds every word of the query is related even when no model finds it near: the models'
        # cosines for a short question ("What do I do for work?" and "… works as a data engineer") can sit at
        # their noise floors, which were set on questions whose answer is not stored.
        over_noise = item.holds_every_word or config.over_noise(item.similarities)
        evidence[point_id] = Evidence(
            round(relevance, 4),
            round(item.coverage, 4),
            round(dense, 4),
            {name: round(similarity, 4) for name, similarity in item.similarities.items()},
            over_noise and (config.floor is None or relevance >= config.floor),
            over_noise,
        )
    return evidence


def _fuse_run(signals: Signals, config: RankingConfig) -> dict[str, Evidence]:
    return combine(scale(signals, config), config)


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def plain_sum(
    similarities: Mapping[str, Sequence[float]], query_script: str, reads: Mapping[str, frozenset[str]]
) -> np.ndarray:
    """The baseline a fused search must not lose to: for one query, the sum over the dense models that read the
    query's script of their cosines with every text given, z-normalised over those texts (population mean and
    standard deviation). `similarities[model][i]` is the model's cosine with text i; returns one score per text.
    """
    total = np.zeros(len(next(iter(similarities.values()))), dtype=np.float64)
    for name, scores in similarities.items():
        if query_script not in reads[name]:
            continue
        values = np.asarray(scores, dtype=np.float64)
        deviation = values.std()
        if deviation > 1e-12:
            total += (values - values.mean()) / deviation
    return total


def search(
    store: VectorStore, collection: str, *, query: str, where: Where, config: RankingConfig = RANKING
) -> Fused:
    return fuse([gather(store, collection, query=query, where=where, limit=config.candidates)], config)


# --- the collection a hybrid search reads: a dense vector per embedder, the lexical sparse vector, TERMS ---

_ready_collections: dict[str, object] = {}


def collection_store(
    name: str, *, keyword_fields: tuple[str, ...] = (), float_fields: tuple[str, ...] = ()
) -> VectorStore:
    """The vector store with collection `name` created for the configured embedders (checked once per store)."""
    store = stores.vector_store()
    if _ready_collections.get(name) is not store:
        store.ensure_collection(collection_spec(name, keyword_fields, float_fields))
        _ready_collections[name] = store
    return store


def rebuild_collection(name: str) -> None:
    """Drop collection `name` so the next collection_store() creates it for the configured embedders. Dropped
    even when the store no longer lists it: the embedded store may still hold files deleted under it open, and
    would otherwise go on writing to them."""
    stores.vector_store().drop_collection(name)
    _ready_collections.pop(name, None)


def collection_spec(
    name: str, keyword_fields: tuple[str, ...], float_fields: tuple[str, ...]
) -> CollectionSpec:
    dense = dict(stores.embedding_set().dimensions)
    size = settings.QDRANT_VECTOR_SIZE
    if size and any(dimension != size for dimension in dense.values()):
        raise VectorStoreConfigError(
            f"QDRANT_VECTOR_SIZE={size} does not match the embedder's {dense} "
            f"(EMBED_MODEL_TYPE={settings.EMBED_MODEL_TYPE}); unset QDRANT_VECTOR_SIZE or change the embedder."
        )
    return CollectionSpec(
        name=name,
        dense=dense,
        sparse=(LEXICAL,),
        distance=settings.QDRANT_DISTANCE,
        keyword_fields=(*keyword_fields, TERMS),
        float_fields=float_fields,
    )
