"""Every constant that shapes a search, in one frozen RankingConfig: the only home of ranking numbers.

The search path (memories.retrieval, knowledge.search) passes `RANKING` into fusion (core.hybrid) and shaping
(memories.scoring); the evaluation page snapshots it whole; the score explanations shown on the pages and in the
API docs are written from it (`score_parts`). bench/retrieval_eval.py chooses each value with every evaluation
set left out in turn and reports the left-out figures (bench/results/retrieval.md); `CHOSEN_BY` names the data
that chose each one. A constant that did not improve the left-out figures was removed, not kept at a neutral value.

Units: fusion puts every dense model's cosines on one scale, standard deviations above the query's candidates in
that model (a z-score), and averages the models that read both texts; so `relevance` and every bonus below are in
standard deviations ("σ"). A relevance of 2 means: two standard deviations above this query's typical candidate.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RankingConfig:
    """The numbers of one ranking; the defaults are Mnemo's (RANKING)."""

    #: Hits each signal (each dense space, the lexical index) brings in; the fusion sees their union.
    candidates: int = 50
    #: σ added for a text holding all of the query's terms: lexical_weight × coverage ** lexical_power, where
    #: coverage is the IDF-weighted share of the query's terms the text holds (texts in the query's script
    #: only). A power over 1 keeps a partial match on one rare word from counting like a whole match.
    lexical_weight: float = 30.0
    lexical_power: float = 3.0
    #: The lexical part counts in proportion to the share of the cross-lingual models' first this-many hits that
    #: are in the query's script: in a store of two languages, words shared with same-script texts must not
    #: outweigh an answer in the other language, which no lexical match can find.
    script_share_depth: int = 10
    #: Words shared with a text count only when its meaning is more than this share as close to the query as
    #: the closest text's (mean raw cosine of the models that read it): a rare word shared with an unrelated text
    #: must not outrank a paraphrase twice as similar.
    lexical_gate: float = 0.5
    #: Words shared with a text count only when it holds at least this many of the query's words (all of them,
    #: for a query of fewer): one word in common is coincidence ("Who does Kofi report to?" and an expense report),
    #: two or more are a match.
    lexical_min_terms: int = 2
    #: Fused relevance under which a candidate is not related, only nearest: it is not returned (None: no floor in
    #: σ; the models' noise floors decide). Not set by default: the best of n candidates stands at most
    #: sqrt(n - 1) σ above them, so in a store of a few memories any floor in σ cuts the answer itself (0.5 σ,
    #: chosen on the development sets' stores of 25 texts or more, left "What is my job?" unanswered in a
    #: store of one fact). A caller may still set one.
    floor: float | None = None
    #: σ added to a memory linked to an entity the query names (times hops and how specific the entity is).
    graph_weight: float = 1.0
    #: Graph score by hops from an entity the query names: the entity itself, its neighbours, theirs.
    graph_hops: tuple[float, ...] = (1.0, 0.6, 0.3)
    #: σ added to the newest memory (recency 1/(1 + days), Hello-Agents' decay for working memory).
    recency_weight: float = 0.2
    #: σ added per unit of importance above 0.5 (importance 0..1).
    importance_weight: float = 0.0
    #: σ taken from a fact that a newer one replaced, when a search asks for those too: history ranks below.
    superseded_penalty: float = 1.0
    #: Per dense model, its weight in the average (a model not named weighs 1).
    model_weights: dict[str, float] = field(default_factory=lambda: {"use": 0.5})
    #: Per dense model, the raw cosine under which it does not call a text related (its noise floor): a text is
    #: returned only when some model that reads it finds it closer, or when it holds every word of the query
    #: (core.hybrid.combine). z-scores are relative to the query's own candidates, so in a small store, or for a
    #: query about nothing stored, the nearest text always stands out; this says whether it is near at all. Each
    #: value is a quantile of the model's best cosine for questions whose answer is not stored, in the
    #: development sets (bench/retrieval_eval.py).
    model_floors: dict[str, float] = field(
        default_factory=lambda: {"bge_zh": 0.39, "minilm": 0.1643, "use": 0.1419}
    )

    def model_weight(self, name: str) -> float:
        return self.model_weights.get(name, 1.0)

    def over_noise(self, similarities: Mapping[str, float]) -> bool:
        """Does some model with a noise floor find the text closer than it (True when no reader has one)?"""
        floored = False
        for name, similarity in similarities.items():
            floor = self.model_floors.get(name)
            if floor is not None:
                if similarity >= floor:
                    return True
                floored = True
        return not floored

    def snapshot(self) -> dict[str, Any]:
        """Every value, for the evaluation page's settings snapshot (a change shows as a settings change)."""
        values = asdict(self)
        values["graph_hops"] = list(self.graph_hops)
        values["model_weights"] = dict(sorted(self.model_weights.items()))
        values["model_floors"] = dict(sorted(self.model_floors.items()))
        return values

    def score_parts(self) -> dict[str, str]:
        """One line per score part, for the pages and the API docs, with this configuration's values."""
        hops = ", ".join(f"{value:g}" for value in self.graph_hops[1:])
        under = f"under {self.floor:g} σ, or " if self.floor is not None else ""
        return {
            "score": "The ranking score: the fused relevance with the bonuses below (standard deviations, σ).",
            "fused": "How far the text stands above this query's other candidates, averaged over the models that "
            f"read both languages, plus up to {self.lexical_weight:g} σ for the query's words (σ); {under}"
            "under every model's noise floor and missing a word of the query, it is not returned.",
            "dense": "Similarity of meaning from the embedding models that read both texts' languages, in σ above "
            "this query's candidates.",
            "lexical": "Share of the query's words found in the text; rare words count more (0..1).",
            "graph": f"Linked to an entity the query names (1) or its neighbours ({hops}), times how specific the "
            f"entity is; adds up to {self.graph_weight:g} σ.",
            "recency": f"How recent the memory is (1 = now); adds up to {self.recency_weight:g} σ.",
            "importance": f"The memory's importance (0..1); adds {self.importance_weight:g} σ per unit above 0.5.",
            "superseded": f"Present for a fact a newer one replaced (returned only when asked for): "
            f"{self.superseded_penalty:g} σ less.",
        }


RANKING = RankingConfig()

#: The data that chose each value (bench/results/retrieval.md has the figures).
CHOSEN_BY: dict[str, str] = {
    "candidates": "not tuned: LoCoMo turn recall@10 moves by under 0.01 between 30 and 200 candidates",
    "lexical_weight": "leave-one-set-out over every development set",
    "lexical_power": "leave-one-set-out over every development set",
    "script_share_depth": "not tuned: the cross-lingual models' first page of hits",
    "lexical_gate": "a rule, not tuned: a paraphrase twice as similar wins (a test pins it)",
    "lexical_min_terms": "leave-one-set-out over every development set (1 or 2)",
    "floor": "the no-answer curve, leave-one-set-out",
    "graph_weight": "leave-one-set-out over every development set",
    "graph_hops": "not tuned: Hello-Agents' hop weights",
    "recency_weight": "leave-one-set-out over every development set",
    "importance_weight": "leave-one-set-out over every development set",
    "superseded_penalty": "a behaviour, not tuned: history ranks below current facts (a test pins it)",
    "model_weights": "leave-one-set-out over every development set",
    "model_floors": "the no-answer curve, leave-one-set-out (a quantile of each model's best cosine for "
    "questions without a stored answer)",
}
