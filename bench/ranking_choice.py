"""Replay captured searches under any RankingConfig and choose each number with every set left out in turn.

- replay: the product's own fusion (core.hybrid.fuse) and shaping (memories.scoring.rank) over a capture, with
  the signals the product would have had (the spaces its query's language calls on, or a subset of models);
- outcomes: per question, the rank of the first answer in the top 10 (and, on LoCoMo, all-evidence and session
  recall), as judged by the set's answers;
- leave-one-set-out: for each set, the configuration chosen on the *other* development sets by the rule the
  report holds it to (least total shortfall below each set's baselines, then the best mean of hit@1 and MRR),
  and that configuration's figures on the left-out set, with a bootstrap 95 % interval;
- the no-answer curve: over floor values, the share of no-answer questions that return nothing and the share of
  answerable questions whose answer the floor cuts from the top 10.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from evalsets import EvalSet, Question
from memory_bench import session_of
from retrieval_capture import LIMIT, Captured, CapturedUnit

BOOTSTRAP = 1000
MNEMO = "Mnemo"
# "No floor in σ" in the benchmark's configurations (RANKING says None): a floor no relevance reaches, so the
# floor curve can compare and sort it with the others.
NO_FLOOR = -1e9
PLAIN = "plain sum"


@dataclass
class Outcome:
    flags: list[bool]  # one per returned item (top 10): does it answer the question
    extra: dict[str, bool] = field(default_factory=dict)  # LoCoMo: all@10, sess@10

    @property
    def rank(self) -> int | None:
        return next((i + 1 for i, hit in enumerate(self.flags) if hit), None)


def judge(kind: str, q: Question, found: list) -> Outcome:
    """Which returned items answer q; `found` holds their labels (chunks: (document label, text))."""
    if kind == "knowledge":
        answers = [(a["document"], " ".join(a["contains"].split())) for a in q.answers]
        return Outcome([any(d == doc and phrase in t for doc, phrase in answers) for d, t in found])
    extra = {}
    if kind == "locomo":
        extra["all@10"] = all(e in found for e in q.answers)
        extra["sess@10"] = bool({session_of(r) for r in found if r} & {session_of(e) for e in q.answers})
    return Outcome([r in q.answers for r in found], extra)


def restrict(signals, spaces: Iterable[str]):
    """The signals of `spaces` (and the lexical one) only, with the payloads of what they found."""
    from core import hybrid

    keep = {*spaces, hybrid.LEXICAL}
    rankings = {name: ranking for name, ranking in signals.rankings.items() if name in keep}
    found = {point_id for ranking in rankings.values() for point_id, _ in ranking}
    payloads = {point_id: payload for point_id, payload in signals.payloads.items() if point_id in found}
    return replace(signals, rankings=rankings, payloads=payloads)


_SCALED: dict = {}  # (capture, models, the scaling's own numbers) -> core.hybrid.Scaled


def forget_scaled() -> None:
    _SCALED.clear()


def _scaled(item: Captured, config, models: Sequence[str] | None):
    """The capture's scaling (core.hybrid.scale) for the spaces its query's script calls on among `models`,
    computed once per capture, model set and the three numbers scaling reads."""
    from core import hybrid, stores
    from core.text import script_of

    key = (
        id(item),
        tuple(models or ()),
        config.script_share_depth,
        config.lexical_gate,
        config.lexical_min_terms,
    )
    if key not in _SCALED:
        reading = stores.embedding_set().spaces_reading(script_of(item.signals.query))
        spaces = [name for name in reading if models is None or name in models]
        _SCALED[key] = hybrid.scale(restrict(item.signals, spaces), config)
    return _SCALED[key]


def replay(kind: str, item: Captured, config, models: Sequence[str] | None = None) -> list[str]:
    """The point ids the product would return (best first, at most LIMIT) under `config`, with `models` (default:
    every model of the bench's set) as its embedding models. The scaling, which no weight changes, is computed
    once per capture and model set (core.hybrid.scale), then weighed by each configuration (core.hybrid.combine),
    as core.hybrid.fuse does."""
    from core import hybrid
    from memories.scoring import rank

    evidence = hybrid.combine(_scaled(item, config, models), config)
    if kind == "knowledge":
        related = [(e.relevance, pid) for pid, e in evidence.items() if e.above_floor]
        return [pid for _, pid in sorted(related, key=lambda x: (-x[0], x[1]))[:LIMIT]]
    ranked = rank(
        evidence=evidence, graph=item.graph, candidates=item.candidates, now=item.now, config=config
    )
    return [pid for _, pid, _ in ranked[:LIMIT]]


def system_outcomes(units: Sequence[CapturedUnit], system: Callable[[str, Captured], list[str]]) -> dict:
    """Per question, the outcome of `system` (a function of (kind, capture) to point ids)."""
    out = {}
    for unit in units:
        for item in unit.questions:
            ids = system(unit.kind, item)
            out[item.question] = judge(unit.kind, item.question, [unit.labels.get(i) for i in ids[:LIMIT]])
    return out


def signal_outcomes(units: Sequence[CapturedUnit], models: Sequence[str]) -> dict[str, dict]:
    """Each signal of `models` (and the lexical one) alone (its own top 10), and their plain sum, per question."""
    from core import hybrid

    systems: dict[str, Callable] = {
        name: (lambda kind, item, name=name: [pid for pid, _ in item.signals.rankings.get(name, [])])
        for name in [*models, hybrid.LEXICAL]
    }
    out = {name: system_outcomes(units, system) for name, system in systems.items()}
    plain = {}
    for unit in units:
        for item in unit.questions:
            found = [unit.labels.get(i) for i in unit.plain(item, models)]
            plain[item.question] = judge(unit.kind, item.question, found)
    out[PLAIN] = plain
    return out


def mean(values) -> float | None:
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else None


def metrics(questions: Sequence[Question], outcomes: dict, kind: str | None = None) -> dict:
    rows = [(q, outcomes.get(q, Outcome([]))) for q in questions if kind in (None, q.kind)]
    found = [o for q, o in rows if q.answerable]
    out: dict = {f"hit@{k}": mean(any(o.flags[:k]) for o in found) for k in (1, 3, 5, 10)}
    out["mrr"] = mean(1 / r if (r := o.rank) else 0.0 for o in found)
    out["empty"] = mean(not o.flags for q, o in rows if not q.answerable)
    if any(o.extra for o in found):
        out |= {key: mean(o.extra.get(key, False) for o in found) for key in ("all@10", "sess@10")}
    out["n"], out["n_none"] = len(found), len(rows) - len(found)
    return out


def interval(questions: Sequence[Question], outcomes: dict, key: str, seed: int = 1) -> tuple[float, float]:
    """Bootstrap 95 % interval of hit@1 ("hit@1") or MRR ("mrr") over the set's answerable questions."""
    values = []
    for q in questions:
        if q.answerable:
            rank = outcomes.get(q, Outcome([])).rank
            values.append((rank == 1) if key == "hit@1" else (1 / rank if rank else 0.0))
    if not values:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def score(m: dict) -> float:
    """What a configuration is chosen by, after the rule: the mean of hit@1 and MRR on answerable questions."""
    return ((m["hit@1"] or 0.0) + (m["mrr"] or 0.0)) / 2


RULE_METRICS = ("hit@1", "mrr")


def rule_need(baseline_figures: Iterable[dict]) -> dict[str, float]:
    """What the rule asks of Mnemo on a set, per metric: the larger of its best single signal's figure and the
    plain sum's (`baseline_figures`: the metrics of each of the set's signal_outcomes)."""
    figures = list(baseline_figures)
    return {key: max(f[key] or 0.0 for f in figures) for key in RULE_METRICS}


def shortfall(m: dict, need: dict[str, float]) -> float:
    """How far figures `m` fall below the rule's `need`, summed over its metrics (0 when they meet it)."""
    return sum(max(0.0, need[key] - (m[key] or 0.0)) for key in RULE_METRICS)


@dataclass
class Grid:
    """Every configuration tried, its figures on every development set, and the choice with each set left out."""

    configs: list  # RankingConfig
    figures: dict  # (config index, set name) -> metrics
    outcomes: dict  # (config index, set name) -> per-question outcomes
    needs: dict  # set name -> rule_need

    def choose(self, sets: Sequence[str]) -> int:
        """The configuration that falls least below the rule's baselines over `sets`, then the one with the best
        mean score (ties: the earlier, simpler one). The mean alone let one set's large gain pay for another's
        loss to its own parts, and which set that was flipped with each set left out; the rule is per set."""
        return max(
            range(len(self.configs)),
            key=lambda i: (
                -round(sum(shortfall(self.figures[(i, s)], self.needs[s]) for s in sets), 9),
                round(sum(score(self.figures[(i, s)]) for s in sets) / len(sets), 9),
                -i,
            ),
        )


def evaluate_grid(
    sets: Sequence[EvalSet], captured: dict, configs: Sequence, needs: dict, models=None, log=print
) -> Grid:
    grid = Grid(list(configs), {}, {}, needs)
    for index, config in enumerate(configs):
        for es in sets:
            outcomes = system_outcomes(
                captured[es.name], lambda kind, item, c=config: replay(kind, item, c, models)
            )
            grid.outcomes[(index, es.name)] = outcomes
            grid.figures[(index, es.name)] = metrics(es.questions, outcomes)
        if (index + 1) % 10 == 0 or index + 1 == len(configs):
            log(f"  {index + 1} of {len(configs)} configurations replayed")
    return grid


def configurations(base, choices: dict[str, Sequence]) -> list:
    """Every combination of `choices` (field -> values) on top of `base`, the base's own values first."""
    names = list(choices)
    ordered = [sorted(choices[n], key=lambda v: v != getattr(base, n)) for n in names]
    return [replace(base, **dict(zip(names, values, strict=True))) for values in itertools.product(*ordered)]


@dataclass(frozen=True)
class Returned:
    """One item a free replay (no floor, no noise floors) returns, with what the floors read of it."""

    point_id: str
    relevance: float  # fused relevance with the graph's bonus (what the floor compares)
    similarities: dict  # per model that read it, raw cosine
    rescued: bool  # linked to an entity the query names: returned at the floor whatever its similarity
    holds_every_word: bool = False  # over noise whatever its similarities (core.hybrid.combine)


def free_replay(kind: str, item: Captured, config, models=None) -> list[Returned]:
    """What `config` returns with no floor and no noise floors (the top LIMIT), with each item's relevance and
    similarities: a floor only removes items, so every floor's outcome is a filter of this list."""
    from core import hybrid
    from memories.scoring import rank

    free = replace(config, floor=NO_FLOOR, model_floors={})
    scaled = _scaled(item, free, models)
    evidence = hybrid.combine(scaled, free)
    every_word = {pid: candidate.holds_every_word for pid, candidate in scaled.candidates.items()}
    if kind == "knowledge":
        ordered = sorted(evidence.items(), key=lambda pair: (-pair[1].relevance, pair[0]))[:LIMIT]
        return [Returned(pid, e.relevance, e.similarities, False, every_word[pid]) for pid, e in ordered]
    ranked = rank(evidence=evidence, graph=item.graph, candidates=item.candidates, now=item.now, config=free)
    out = []
    for _, pid, parts in ranked[:LIMIT]:
        sims = {k[len("dense_") :]: v for k, v in parts.items() if k.startswith("dense_")}
        linked = parts.get("graph", 0.0) or 0.0
        out.append(
            Returned(pid, parts["fused"] + config.graph_weight * linked, sims, linked > 0, every_word[pid])
        )
    return out


def kept(returned: Returned, floor: float, model_floors: dict) -> bool:
    """Would the product return this item under `floor` and `model_floors` (core.ranking.RankingConfig)?"""
    from core.ranking import RankingConfig

    if not (
        returned.holds_every_word
        or RankingConfig(model_floors=model_floors).over_noise(returned.similarities)
    ):
        return returned.rescued  # the graph brings it back at the floor (memories.scoring.rank)
    return returned.relevance >= floor


def noise_floors(sets: Sequence[EvalSet], free: dict, quantile: float | None) -> dict:
    """Per model, the `quantile` of its best cosine over the no-answer questions of `sets` ({} for None)."""
    if quantile is None:
        return {}
    best: dict[str, list[float]] = {}
    for es in sets:
        for q in es.questions:
            if q.answerable:
                continue
            per_model: dict[str, float] = {}
            for item in free[es.name][q]:
                for name, cosine in item.similarities.items():
                    per_model[name] = max(per_model.get(name, -1.0), cosine)
            for name, cosine in per_model.items():
                best.setdefault(name, []).append(cosine)
    return {name: sorted(v)[min(len(v) - 1, int(quantile * len(v)))] for name, v in sorted(best.items()) if v}


def free_outcomes(es: EvalSet, units: Sequence[CapturedUnit], config, models=None) -> dict:
    """Per question of `es`, the free replay's items, with their labels judged (Returned, is an answer)."""
    out = {}
    for unit in units:
        for item in unit.questions:
            items = free_replay(unit.kind, item, config, models)
            flags = judge(unit.kind, item.question, [unit.labels.get(r.point_id) for r in items]).flags
            out[item.question] = [(r, flag) for r, flag in zip(items, flags, strict=True)]
    return out


def floor_curve(
    sets: Sequence[EvalSet],
    free: dict,
    floors: Sequence[float],
    quantiles: Sequence,
    tuned_on: Sequence[EvalSet],
) -> list[dict]:
    """Per (floor, noise-floor quantile): the share of no-answer questions of `sets` that return nothing, and of
    answerable ones whose answer (in the top 10 without floors) the floors cut, over all of `sets` ("cut") and in
    the set where it is largest ("worst_cut", "worst_set"). The noise floors come from the no-answer questions of
    `tuned_on` (with `free`: per set name, free_outcomes)."""
    plain_free = {name: {q: [r for r, _ in pairs] for q, pairs in per.items()} for name, per in free.items()}
    rows = []
    for quantile in quantiles:
        model_floors = noise_floors(tuned_on, plain_free, quantile)
        for floor in floors:
            empty = cut = n_none = n_found = 0
            cut_by_set: dict[str, float] = {}
            for es in sets:
                set_cut = set_found = 0
                for q in es.questions:
                    pairs = free[es.name][q]
                    if not q.answerable:
                        n_none += 1
                        empty += not any(kept(r, floor, model_floors) for r, _ in pairs)
                    elif any(flag for _, flag in pairs):
                        set_found += 1
                        set_cut += not any(flag and kept(r, floor, model_floors) for r, flag in pairs)
                cut, n_found = cut + set_cut, n_found + set_found
                if set_found:
                    cut_by_set[es.name] = set_cut / set_found
            worst_set = max(cut_by_set, key=lambda name: cut_by_set[name], default=None)
            rows.append(
                dict(floor=floor, quantile=quantile, model_floors=model_floors,
                     empty=empty / n_none if n_none else None, cut=cut / n_found if n_found else None,
                     worst_cut=cut_by_set.get(worst_set) if worst_set else None, worst_set=worst_set,
                     n_none=n_none, n_found=n_found)
            )  # fmt: skip
    return rows
