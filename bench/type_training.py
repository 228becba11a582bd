"""Training a learned re-typer (memories.learned_types scores it): what bench/train_english_types.py and
bench/train_chinese_types.py share.

The model: multinomial logistic regression with an L2 penalty over sparse string features, fitted by full-batch
gradient descent (Adam) in numpy from zero weights, so a run is deterministic and needs no scikit-learn. Features
seen fewer than MIN_COUNT times in train are left out; weights are rounded to four decimals and rows that are all
zero dropped. The weights file has a header (source, licence, script) a line a field and one line per feature, so
a retraining's diff reads feature by feature.
"""

import argparse
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from bench.external_sets import SOURCES, external_dir, uner_sentences

CLASSES = ("PERSON", "PLACE", "ORG", "KEEP")
MIN_COUNT = 2
STEPS = 400


def fit(rows: list[list[str]], labels: list[str], penalty: float) -> dict[str, list[float]]:
    """Each kept feature's weights, one per class of CLASSES, fitted to the examples' features and gold classes."""
    counts = Counter(feature for row in rows for feature in set(row))
    vocabulary = sorted(feature for feature, n in counts.items() if n >= MIN_COUNT)
    index = {feature: i for i, feature in enumerate(vocabulary)}
    kept = [[index[f] for f in row if f in index] for row in rows]
    flat = np.array([i for row in kept for i in row])
    offsets = np.cumsum([0] + [len(row) for row in kept[:-1]])
    owner = np.repeat(np.arange(len(kept)), [len(row) for row in kept])
    target = np.zeros((len(rows), len(CLASSES)))
    target[np.arange(len(rows)), [CLASSES.index(label) for label in labels]] = 1
    weights = np.zeros((len(vocabulary), len(CLASSES)))
    moment, second = np.zeros_like(weights), np.zeros_like(weights)
    rate, beta1, beta2 = 0.05, 0.9, 0.999
    for step in range(1, STEPS + 1):
        scores = np.add.reduceat(weights[flat], offsets)
        scores -= scores.max(axis=1, keepdims=True)
        probabilities = np.exp(scores)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        residual = (probabilities - target)[owner] / len(rows)
        gradient = np.stack(
            [np.bincount(flat, residual[:, k], len(vocabulary)) for k in range(len(CLASSES))], axis=1
        )
        gradient += penalty * weights
        moment = beta1 * moment + (1 - beta1) * gradient
        second = beta2 * second + (1 - beta2) * gradient**2
        weights -= rate * (moment / (1 - beta1**step)) / (np.sqrt(second / (1 - beta2**step)) + 1e-8)
    rounded = np.round(weights, 4)
    return {f: [float(w) for w in rounded[i]] for f, i in index.items() if np.any(rounded[i])}


@dataclass(frozen=True)
class TrainSet:
    """A train file of a source and the reader of bench/external_sets.py that parses it."""

    source: str  # a key of bench.external_sets.SOURCES
    file: str
    described: str  # the train file in words, for the weights' header
    read: Callable[[str, str], list[dict]] = uner_sentences
    repeats: int = 1  # how many times each of its names counts in the fit, beside another set's

    def header(self) -> str:
        repository, commit = SOURCES[self.source]
        counted = f", each name counted {self.repeats} times" if self.repeats > 1 else ""
        return f"{repository} @ {commit}, {self.file} ({self.described}{counted})"


@dataclass(frozen=True)
class Recipe:
    """What a training script gives: where its examples come from, how it measures dev, and what it chose."""

    typer: ModuleType  # the re-typer module: its WEIGHTS path and _model(), replaced while measuring
    train: tuple[TrainSet, ...]
    trained_by: str
    examples: Callable[[list[dict]], list[tuple]]  # (name, gold class) from tagged sentences
    featurise: Callable[[list[tuple], tuple], list[list[str]]]
    dev: tuple[tuple[str, str], ...]  # (file under the external folder, its name in what is printed)
    turned_off: Callable[[], AbstractContextManager]  # the extraction without the re-typer
    groups: tuple[str, ...]
    penalty: float  # L2, per example
    keep_margin: float
    variants: tuple = ()  # (groups, penalty) compared on dev with --variants
    margins: tuple = (0.0, 0.5, 1.5, 2.5)
    trains: tuple[tuple[TrainSet, ...], ...] = ()  # other train data compared on dev with --variants
    licence: str = "CC BY-SA 4.0 (the training data's; LICENSE.txt of the source repository)"


def labelled_names(
    sentences: list[dict], names_in: Callable[[str], list], retypes: Callable[[Any], bool]
) -> list[tuple]:
    """(name, gold class) for every name `names_in(text)` finds (as memories.entities finds it, so the features
    are those inference sees) that the re-typer may change (`retypes`): a name whose merge key is a gold entity's
    gets that entity's type, any other KEEP (the rules' type stands)."""
    from core.secrets import without_masks
    from memories.entities import entity_key

    found = []
    for sentence in sentences:
        gold: dict[str, str] = {}
        for entity in sentence["entities"]:
            gold.setdefault(entity_key(entity["name"]), entity["type"])
        for name in names_in(without_masks(sentence["text"])):
            if retypes(name):
                found.append((name, gold.get(entity_key(name.name), "KEEP")))
    return found


def model(
    weights: dict, groups, recipe: Recipe, keep_margin: float = 0.0, train: tuple[TrainSet, ...] | None = None
) -> dict:
    """The weights file's content. `keep_margin` lowers KEEP's bias: a gold entity the rules left untyped
    (CONCEPT, OTHER) counts as a wrong type, so a less timid model trades a little span precision for type
    accuracy."""
    weights["bias"][CLASSES.index("KEEP")] = round(weights["bias"][CLASSES.index("KEEP")] - keep_margin, 4)
    return {
        "source": "; ".join(train_set.header() for train_set in train or recipe.train),
        "licence": recipe.licence,
        "trained_by": recipe.trained_by,
        "classes": list(CLASSES),
        "groups": list(groups),
        "weights": weights,
    }


def as_json(trained: dict) -> str:
    """The header a line a field, then one line per feature."""
    header = {key: value for key, value in trained.items() if key != "weights"}
    lines = [f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}" for key, value in header.items()]
    rows = [f"{json.dumps(f, ensure_ascii=False)}: {json.dumps(w)}" for f, w in trained["weights"].items()]
    return "{\n" + ",\n".join(lines) + ',\n"weights": {\n' + ",\n".join(rows) + "\n}}\n"


def dev_figures(recipe: Recipe, trained: dict | None) -> str:
    """The recipe's dev sets and the hand-written dev sentences as bench/extraction_eval.py measures them, with
    the model `trained` in place of the re-typer's (None: without the re-typer)."""
    from bench.extraction_eval import DATA, evaluate, evaluate_ner

    saved_model = recipe.typer._model
    recipe.typer._model = lambda: trained
    figures, accuracies = [], []
    try:
        with recipe.turned_off() if trained is None else nullcontext():
            for file, label in recipe.dev:
                r = evaluate_ner(json.loads((external_dir() / file).read_text())["sentences"])
                per_type = " ".join(f"{t} {r['by_type'][t][0]:.3f}" for t in ("PERSON", "PLACE", "ORG"))
                figures.append(
                    f"{label} dev type accuracy {r['type_accuracy']:.3f} ({per_type}), found {r['found']}, "
                    f"span precision {r['span_precision']:.3f}"
                )
                accuracies.append(r["type_accuracy"])
            hand = evaluate(json.loads((DATA / "sentences_dev.json").read_text())["sentences"])
    finally:
        recipe.typer._model = saved_model
    if len(accuracies) > 1:
        figures.append(f"mean type accuracy {sum(accuracies) / len(accuracies):.3f}")
    return "; ".join(
        figures
        + [
            f"hand-written dev entity P {hand['entity_precision']:.3f} R {hand['entity_recall']:.3f} "
            f"type ok {hand['type_accuracy']:.3f}"
        ]
    )


def main(recipe: Recipe, description: str) -> None:
    """Train on the recipe's train file, print the dev figures (of the variants too, with --variants) and write
    the chosen model's weights (unless --no-write)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", action="store_true", help="also print the dev figures of the variants")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    started = time.perf_counter()
    found = {}  # the names of each train file, read once
    for train_set in recipe.train + sum(recipe.trains if args.variants else (), ()):
        if (train_set.source, train_set.file) not in found:
            names = recipe.examples(train_set.read(train_set.source, train_set.file))
            found[train_set.source, train_set.file] = names
            print(
                f"{train_set.file}: {len(names)} train names ({dict(Counter(label for _, label in names))})"
            )
    print(f"read in {time.perf_counter() - started:.0f} s")

    def names_of(train_sets: tuple[TrainSet, ...]) -> list[tuple]:
        """The labelled names of `train_sets`, each set's as many times as it counts."""
        return [
            name
            for train_set in train_sets
            for name in found[train_set.source, train_set.file] * train_set.repeats
        ]

    train = names_of(recipe.train)
    labels = [label for _, label in train]
    print(f"without the re-typer: {dev_figures(recipe, None)}")
    for groups, penalty in recipe.variants if args.variants else ():
        trained = model(
            fit(recipe.featurise(train, groups), labels, penalty), groups, recipe
        )  # KEEP margin 0
        print(f"{'+'.join(groups)}, L2 {penalty:g}: {dev_figures(recipe, trained)}")
    fitted = fit(recipe.featurise(train, recipe.groups), labels, recipe.penalty)
    for margin in recipe.margins if args.variants else ():
        trained = model(
            {feature: list(row) for feature, row in fitted.items()}, recipe.groups, recipe, margin
        )
        print(f"KEEP margin {margin:g}: {dev_figures(recipe, trained)}")
    for other in recipe.trains if args.variants else ():
        names = names_of(other)
        other_labels = [label for _, label in names]
        fitted_other = fit(recipe.featurise(names, recipe.groups), other_labels, recipe.penalty)
        for margin in (recipe.keep_margin, *recipe.margins):
            trained = model(
                {feature: list(row) for feature, row in fitted_other.items()},
                recipe.groups,
                recipe,
                margin,
                other,
            )
            print(
                f"trained on {' + '.join(t.file for t in other)}, KEEP margin {margin:g}: "
                f"{dev_figures(recipe, trained)}"
            )
    trained = model(fitted, recipe.groups, recipe, recipe.keep_margin)
    chosen = f"{'+'.join(recipe.groups)}, L2 {recipe.penalty:g}, KEEP margin {recipe.keep_margin:g}"
    print(f"chosen {chosen} ({len(trained['weights'])} features): {dev_figures(recipe, trained)}")
    if not args.no_write:
        recipe.typer.WEIGHTS.parent.mkdir(exist_ok=True)
        recipe.typer.WEIGHTS.write_text(as_json(trained))
        print(f"wrote {recipe.typer.WEIGHTS}")
