"""Train the learned re-typer of English names (memories.english_typer) and write its weights.

    .venv/bin/python bench/train_english_types.py              # train, print dev figures, write the weights
    .venv/bin/python bench/train_english_types.py --variants   # also the dev figures of the variants compared
    .venv/bin/python bench/train_english_types.py --no-write

Training data: Universal NER v1, English EWT, the train split only: `en_ewt-ud-train.iob2` of
UniversalNER/UNER_English-EWT, licence CC BY-SA 4.0 (the repository's LICENSE.txt), read from the bare snapshot
under /work/.mirror by bench/external_sets.py's own parser (labels PER → PERSON, LOC → PLACE, ORG → ORG; its
OTH and O spans are no entity). The dev and test sets come from commit 8ed072d, but the snapshot leaves out
files of 4 MiB or more, and the released train file is one: this reads the train file of the repository's first
commit, 0c7ce0debb13a7d304da656f16309397e8ff36ef (its label counts are within 0.3% of the release's
en_ewt-ud-train.stats; its sentence ids share none with dev). Every feature and setting was chosen on EWT dev
(../shared/bench/external/ner_uner/en_dev.json) and the hand-written dev sentences (bench/data/extraction); test
and PUD are only reported, by bench/extraction_eval.py.

Examples: the names memories.entities finds in each train sentence (memories.entities.english_names: spaCy's
entities and proper-noun runs, trimmed, with the rules' type), so the features are those inference sees. A name
whose merge key (memories.entities.entity_key, as bench/extraction_eval.py matches) is a gold entity's gets that
entity's type; any other gets KEEP (the rules' type stands). The model: multinomial logistic regression with an
L2 penalty, fitted by full-batch gradient descent (Adam) in numpy from zero weights, so a run is deterministic
and needs no scikit-learn. Features seen fewer than MIN_COUNT times in train are left out; weights are rounded to
four decimals and rows that are all zero dropped.

Feature groups (memories.english_typer.features), as compared on EWT dev (type accuracy without the re-typer
0.837; KEEP margin 0 unless said):
- always: spaCy's type (CONCEPT when its NER left the proper noun out), the number of words;
- rules: the type memories.entity_types gave (gazetteer, given names, designators, acronyms), and it crossed with
  spaCy's (alone with the above: 0.837, no change);
- context: the dependency relation of the name's root, with the word it hangs on and that word's part of speech,
  the previous two words and the next one (with rules: 0.842; with rules and lexicons: 0.841);
- shape: the word shape ("Xx Xx", "X.X.") and the last three letters of the first and last words (with the
  three above: 0.856);
- lexicons: the gazetteer, given-name, designator and acronym hits themselves (with rules alone: 0.839);
- words: the name's own words, lower-cased (0.857, and one more hand-written dev error: memorised names, left
  out, as they carry nothing to another domain).
Without the rules group (the model replacing the rules rather than following them): 0.856, span precision
+0.001; kept, as the rules' type is what KEEP falls back to. Also tried and dropped: the preposition a name
hangs on with its verb ("at"+"works", 0.853) and the text's case (no change). L2 1e-3: 0.843; 1e-5: 0.842.
KEEP margin (the bias taken off KEEP, so that a gold entity the rules left untyped is typed): 0.5 0.858,
1 0.866 (span precision 0.670 against 0.671), 1.5 0.867 (0.667), 2.5 0.871 (0.645): 1.
"""

import argparse
import json
import os
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.external_sets import SOURCES, external_dir, uner_sentences  # noqa: E402

SOURCE = "uner_en_train"
TRAIN_FILE = "en_ewt-ud-train.iob2"
CLASSES = ("PERSON", "PLACE", "ORG", "KEEP")
# What was compared on dev (--variants); GROUPS and PENALTY are the choice.
GROUPS = ("rules", "context", "shape", "lexicons")
PENALTY = 1e-4  # L2, per example
KEEP_MARGIN = 1.0
MIN_COUNT = 2
STEPS = 400
VARIANTS = (
    (("rules",), PENALTY),
    (("rules", "lexicons"), PENALTY),
    (("rules", "context"), PENALTY),
    (("rules", "context", "lexicons"), PENALTY),
    (("rules", "context", "shape", "lexicons"), PENALTY),
    (("context", "shape", "lexicons"), PENALTY),
    (("rules", "context", "shape", "lexicons", "words"), PENALTY),
    (GROUPS, 1e-3),
    (GROUPS, 1e-5),
)


def examples(sentences: list[dict]) -> list[tuple]:
    """(the name as memories.entities finds it, its gold class) for every name the re-typer would see."""
    from core.secrets import without_masks
    from memories import english_typer
    from memories.entities import english_names, entity_key, technical_names

    found = []
    for sentence in sentences:
        gold: dict[str, str] = {}
        for entity in sentence["entities"]:
            gold.setdefault(entity_key(entity["name"]), entity["type"])
        text = without_masks(sentence["text"])
        technical = {mention.key for mention in technical_names(text)}
        for name in english_names(text, technical):
            if name.rule_type in english_typer.RETYPED:
                found.append((name, gold.get(entity_key(name.name), "KEEP")))
    return found


def featurise(found: list[tuple], groups) -> list[list[str]]:
    from memories import english_typer

    return [
        english_typer.features(*name.span, name.name, name.spacy_type, name.rule_type, groups)
        for name, _ in found
    ]


def fit(rows: list[list[str]], labels: list[str], penalty: float) -> dict[str, list[float]]:
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


def model(weights: dict, groups, keep_margin: float = 0.0) -> dict:
    """The weights file's content. `keep_margin` lowers KEEP's bias: a name the rules left untyped (CONCEPT)
    counts as a wrong type when it is a gold entity, so a less timid model trades a little span precision for
    type accuracy."""
    weights["bias"][CLASSES.index("KEEP")] = round(weights["bias"][CLASSES.index("KEEP")] - keep_margin, 4)
    repository, commit = SOURCES[SOURCE]
    return {
        "source": f"{repository} @ {commit}, {TRAIN_FILE} (Universal NER v1, English EWT train split)",
        "licence": "CC BY-SA 4.0 (the training data's; LICENSE.txt of the source repository)",
        "trained_by": "bench/train_english_types.py",
        "classes": list(CLASSES),
        "groups": list(groups),
        "weights": weights,
    }


def as_json(trained: dict) -> str:
    """The header a line a field, then one line per feature: a retraining's diff reads feature by feature."""
    header = {key: value for key, value in trained.items() if key != "weights"}
    lines = [f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}" for key, value in header.items()]
    rows = [f"{json.dumps(f, ensure_ascii=False)}: {json.dumps(w)}" for f, w in trained["weights"].items()]
    return "{\n" + ",\n".join(lines) + ',\n"weights": {\n' + ",\n".join(rows) + "\n}}\n"


def dev_figures(trained: dict | None) -> str:
    """EWT dev and hand-written dev as bench/extraction_eval.py measures them, with this model (None: without
    the re-typer)."""
    from bench.extraction_eval import DATA, LEARNED_RETYPER, evaluate, evaluate_ner, without
    from memories import english_typer

    saved_model = english_typer._model
    english_typer._model = lambda: trained  # type: ignore[assignment]
    try:
        with without(LEARNED_RETYPER) if trained is None else nullcontext():
            dev = json.loads((external_dir() / "ner_uner" / "en_dev.json").read_text())["sentences"]
            r = evaluate_ner(dev)
            hand = evaluate(json.loads((DATA / "sentences_dev.json").read_text())["sentences"])
    finally:
        english_typer._model = saved_model
    per_type = " ".join(f"{t} {r['by_type'][t][0]:.3f}" for t in ("PERSON", "PLACE", "ORG"))
    return (
        f"EWT dev type accuracy {r['type_accuracy']:.3f} ({per_type}), found {r['found']}, "
        f"span precision {r['span_precision']:.3f}; hand-written dev entity P {hand['entity_precision']:.3f} "
        f"R {hand['entity_recall']:.3f} type ok {hand['type_accuracy']:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", action="store_true", help="also print the dev figures of VARIANTS")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from memories import english_typer

    started = time.perf_counter()
    train = examples(uner_sentences(SOURCE, TRAIN_FILE))
    labels = [label for _, label in train]
    print(f"{len(train)} train names ({dict(Counter(labels))}) in {time.perf_counter() - started:.0f} s")
    print(f"without the re-typer: {dev_figures(None)}")
    for groups, penalty in VARIANTS if args.variants else ():
        trained = model(fit(featurise(train, groups), labels, penalty), groups)
        print(f"{'+'.join(groups)}, L2 {penalty:g}: {dev_figures(trained)}")
    fitted = fit(featurise(train, GROUPS), labels, PENALTY)
    for margin in (0.0, 0.5, 1.5, 2.5) if args.variants else ():
        trained = model({feature: list(row) for feature, row in fitted.items()}, GROUPS, margin)
        print(f"KEEP margin {margin:g}: {dev_figures(trained)}")
    trained = model(fitted, GROUPS, KEEP_MARGIN)
    chosen = f"{'+'.join(GROUPS)}, L2 {PENALTY:g}, KEEP margin {KEEP_MARGIN:g}"
    print(f"chosen {chosen} ({len(trained['weights'])} features): {dev_figures(trained)}")
    if not args.no_write:
        english_typer.WEIGHTS.parent.mkdir(exist_ok=True)
        english_typer.WEIGHTS.write_text(as_json(trained))
        print(f"wrote {english_typer.WEIGHTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
