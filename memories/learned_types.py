"""Scoring a learned re-typer (memories.english_typer, memories.chinese_typer): a multinomial logistic regression
whose weights are a committed JSON file (one row of per-class weights a feature, written by bench/type_training.py),
read once per process and summed in plain Python, a few microseconds a name.

The file's classes are PERSON, PLACE, ORG and KEEP: KEEP says the name is no person, place or organisation in the
training data (a product, an event), and the rules' type stands.
"""

import json
from functools import cache
from pathlib import Path

KEEP = "KEEP"


@cache
def load(path: Path) -> dict:
    """A weights file's content: its header (source, licence, classes, feature groups) and "weights"."""
    return json.loads(path.read_text())


def predicted(model: dict, features: list[str], rule_type: str) -> str:
    """The class whose weights over `features` sum highest (the first on a tie), or `rule_type` when it is KEEP.
    Features the model never saw weigh nothing."""
    weights = model["weights"]
    scores = [0.0] * len(model["classes"])
    for feature in features:
        row = weights.get(feature)
        if row is not None:
            scores = [score + weight for score, weight in zip(scores, row, strict=True)]
    best = model["classes"][scores.index(max(scores))]
    return rule_type if best == KEEP else best
