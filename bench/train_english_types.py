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
and needs no scikit-learn (bench/type_training.py, shared with the Chinese re-typer). Features seen fewer than
type_training.MIN_COUNT times in train are left out; weights are rounded to four decimals and rows that are all
zero dropped.

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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import type_training  # noqa: E402
from bench.extraction_eval import LEARNED_RETYPER, without  # noqa: E402
from memories import english_typer  # noqa: E402

# What was compared on dev (--variants); GROUPS and PENALTY are the choice.
GROUPS = ("rules", "context", "shape", "lexicons")
PENALTY = 1e-4  # L2, per example
KEEP_MARGIN = 1.0
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
    return [
        english_typer.features(*name.span, name.name, name.spacy_type, name.rule_type, groups)
        for name, _ in found
    ]


RECIPE = type_training.Recipe(
    typer=english_typer,
    source="uner_en_train",
    train_file="en_ewt-ud-train.iob2",
    described="Universal NER v1, English EWT train split",
    trained_by="bench/train_english_types.py",
    examples=examples,
    featurise=featurise,
    dev_file="en_dev.json",
    label="EWT",
    turned_off=lambda: without(LEARNED_RETYPER),
    groups=GROUPS,
    penalty=PENALTY,
    keep_margin=KEEP_MARGIN,
    variants=VARIANTS,
)

if __name__ == "__main__":
    type_training.main(RECIPE, __doc__)
