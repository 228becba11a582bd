"""Retrieval metrics over ranked ids, pure functions with no database or store.

An answerable question is scored by the rank of its first expected answer among the top results: hit@k is
whether that rank is at most k, the reciprocal rank is 1/rank (0 when missing), and MRR is its mean. A
no-answer question is right when the search returned nothing; it never counts towards hit@k or MRR.
"""

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

CUTOFFS = (1, 3, 10)
# The figures a summary holds, in the order tables show them; all are shares from 0 to 1 (or None: no question).
METRICS = ("hit_at_1", "hit_at_3", "hit_at_10", "mrr", "no_answer_empty")


def first_rank(returned: Sequence[str], expected: Collection[str]) -> int | None:
    """1-based position of the first expected id in `returned`, or None when none of them came back."""
    for position, point_id in enumerate(returned, start=1):
        if point_id in expected:
            return position
    return None


@dataclass(frozen=True)
class Outcome:
    """One question against one ranked list."""

    no_answer: bool
    rank: int | None  # of the first expected answer (None: missing, or a no-answer question)
    returned: int  # how many results came back


def summarise(outcomes: Iterable[Outcome]) -> dict:
    outcomes = list(outcomes)
    answerable = [outcome for outcome in outcomes if not outcome.no_answer]
    unanswerable = [outcome for outcome in outcomes if outcome.no_answer]
    n = len(answerable)
    summary: dict = {"answerable": n, "no_answer": len(unanswerable)}
    for k in CUTOFFS:
        hits = sum(1 for outcome in answerable if outcome.rank is not None and outcome.rank <= k)
        summary[f"hit_at_{k}"] = hits / n if n else None
    summary["mrr"] = sum(1 / outcome.rank for outcome in answerable if outcome.rank) / n if n else None
    empty = sum(1 for outcome in unanswerable if outcome.returned == 0)
    summary["no_answer_empty"] = empty / len(unanswerable) if unanswerable else None
    return summary


def deltas(current: dict, previous: dict | None) -> dict[str, float | None]:
    """Each metric's change from `previous` (None where either side has no figure)."""
    changes: dict[str, float | None] = {}
    for metric in METRICS:
        now, before = current.get(metric), (previous or {}).get(metric)
        changes[metric] = None if now is None or before is None else now - before
    return changes
