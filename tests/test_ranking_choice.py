"""How bench/ranking_choice.py chooses a configuration with a set left out: by the rule the report holds Mnemo to,
then by the mean score (invented figures, no evaluation set)."""

import importlib
import sys
from pathlib import Path

import pytest


@pytest.fixture
def rc(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "bench"))
    yield importlib.import_module("ranking_choice")
    for name in ("ranking_choice", "retrieval_capture", "evalsets", "memory_bench"):
        sys.modules.pop(name, None)


def figures(hit1: float, mrr: float) -> dict:
    return {"hit@1": hit1, "mrr": mrr}


def grid(rc, needs: dict, by_config: list[dict]):
    """A grid of configurations named by their place, with each one's figures per set."""
    return rc.Grid(
        configs=list(range(len(by_config))),
        figures={(index, name): m for index, sets in enumerate(by_config) for name, m in sets.items()},
        outcomes={},
        needs=needs,
    )


def test_a_configuration_that_loses_to_a_sets_own_parts_is_not_chosen_for_a_larger_mean(rc):
    needs = {"a": figures(0.50, 0.60), "b": figures(0.70, 0.80)}
    meets_both = {"a": figures(0.55, 0.65), "b": figures(0.70, 0.80)}
    # A large gain on one set does not pay for a loss to another set's best signal.
    larger_mean = {"a": figures(0.90, 0.95), "b": figures(0.65, 0.78)}
    choice = grid(rc, needs, [meets_both, larger_mean])
    assert choice.choose(["a", "b"]) == 0
    # With b left out, its loss is not seen: the larger mean wins.
    assert choice.choose(["a"]) == 1


def test_among_configurations_that_meet_the_rule_the_larger_mean_is_chosen(rc):
    needs = {"a": figures(0.5, 0.5), "b": figures(0.5, 0.5)}
    first = {"a": figures(0.6, 0.6), "b": figures(0.6, 0.6)}
    second = {"a": figures(0.8, 0.8), "b": figures(0.6, 0.6)}
    assert grid(rc, needs, [first, second]).choose(["a", "b"]) == 1


def test_the_shortfall_sums_how_far_each_measure_falls_below_the_rule(rc):
    need = {"hit@1": 0.6, "mrr": 0.7}
    assert rc.shortfall(figures(0.7, 0.8), need) == 0.0
    assert rc.shortfall(figures(0.5, 0.8), need) == pytest.approx(0.1)
    assert rc.shortfall(figures(0.5, 0.6), need) == pytest.approx(0.2)
