"""Train the learned re-typer of Chinese names (memories.chinese_typer) and write its weights.

    .venv/bin/python bench/train_chinese_types.py              # train, print dev figures, write the weights
    .venv/bin/python bench/train_chinese_types.py --variants   # also the dev figures of the variants compared
    .venv/bin/python bench/train_chinese_types.py --no-write

Training data: Universal NER v1, Chinese GSD Simplified (Wikipedia), the train split only:
`zh_gsdsimp-ud-train.iob2` of UniversalNER/UNER_Chinese-GSDSIMP @ 1f03075 (the commit dev and test come from),
licence CC BY-SA 4.0 (the repository's LICENSE.txt), read from the bare snapshot under /work/.mirror by
bench/external_sets.py's own parser, as dev and test are (each sentence's `# text` line is the text; labels
PER → PERSON, LOC → PLACE, ORG → ORG). Every feature and setting was chosen on GSD dev
(../shared/bench/external/ner_uner/zh_dev.json) and the hand-written dev sentences (bench/data/extraction); test
is only reported, by bench/extraction_eval.py.

Examples: the names memories.entities finds in each train sentence (memories.entities.chinese_names: jieba's
words tagged as names and the names an organisation ending finds, with the rules' type), so the features are
those inference sees. A name whose merge key is a gold entity's gets that entity's type; any other gets KEEP (the
rules' type stands). The model and its fitting are bench/type_training.py's, shared with the English re-typer.

Feature groups (memories.chinese_typer.features), as compared on GSD dev (type accuracy without the re-typer
0.868: PERSON 0.881, PLACE 0.911, ORG 0.614; span precision 0.424 throughout; KEEP margin 0 unless said):
- always: jieba's tag (of each word, for a name an organisation ending found, which is flagged too), the rule type
  (memories.entity_types.chinese_type: gazetteer, place endings), the length in characters (0.868, no change);
- context: the word before and the word after, and their tags (0.870);
- characters: the name's first and last characters, where Chinese place and organisation names show their kind
  ("…市", "…湖", "…社") and a person's name its family name (alone 0.870; with context 0.877);
- lexicons: the gazetteer's and the place-ending rule's hits themselves (with the two above: 0.882);
- words: the name itself (0.880: memorised names, left out).
L2 1e-3: 0.868; 1e-4: 0.870; 1e-5: 0.882; 1e-6: 0.870 (hand-written dev type ok 0.888). KEEP margin 0.5: 0.882,
1: 0.887, 1.5: 0.887, 2.5: 0.885: 1, as for English. Also tried (KEEP margin 1, L2 1e-5) and dropped: the last two
characters (0.877), a family-name hit from Faker's zh_CN surnames (0.882), the second word either side (0.880), the
gazetteer's large-city hit (0.880), and training without the names that are no gold entity unless the rules left
them untyped (0.877). Chosen: PERSON 0.894, PLACE 0.925, ORG 0.682, type accuracy 0.887; hand-written dev unchanged
(type ok 0.899) once an organisation found by its ending keeps its type (memories.chinese_typer.retyped): the model
had called "青木咨询" a place, and "南洋大学" on GSD dev.
What it cannot do: it leans on a name's characters more than on its sentence (an invented "沃尔德" is a place and
"恒泰" a person whatever follows), and GSD's organisations are few (324 of 8,383 train names), so a company jieba
tags as a person mostly stays one ("阿里巴巴").
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import type_training  # noqa: E402
from bench.extraction_eval import CHINESE_RETYPER, without  # noqa: E402
from memories import chinese_typer  # noqa: E402

# What was compared on dev (--variants); GROUPS and PENALTY are the choice.
GROUPS = ("context", "characters", "lexicons")
PENALTY = 1e-5  # L2, per example
KEEP_MARGIN = 1.0
VARIANTS = (
    ((), PENALTY),
    (("context",), PENALTY),
    (("characters",), PENALTY),
    (("context", "characters"), PENALTY),
    (("context", "characters", "lexicons"), PENALTY),
    (("context", "characters", "lexicons", "words"), PENALTY),
    (GROUPS, 1e-3),
    (GROUPS, 1e-4),
    (GROUPS, 1e-6),
)


def examples(sentences: list[dict]) -> list[tuple]:
    """(the name as memories.entities finds it, its gold class) for every name the re-typer would see."""
    from memories.entities import chinese_names

    return type_training.labelled_names(
        sentences, chinese_names, lambda name: name.rule_type in chinese_typer.RETYPED
    )


def featurise(found: list[tuple], groups) -> list[list[str]]:
    return [chinese_typer.features(*name.span, name.name, name.rule_type, groups) for name, _ in found]


RECIPE = type_training.Recipe(
    typer=chinese_typer,
    train=(
        type_training.TrainSet(
            "uner_zh", "zh_gsdsimp-ud-train.iob2", "Universal NER v1, Chinese GSD Simplified train split"
        ),
    ),
    trained_by="bench/train_chinese_types.py",
    examples=examples,
    featurise=featurise,
    dev=(("ner_uner/zh_dev.json", "GSD"),),
    turned_off=lambda: without(CHINESE_RETYPER),
    groups=GROUPS,
    penalty=PENALTY,
    keep_margin=KEEP_MARGIN,
    variants=VARIANTS,
)

if __name__ == "__main__":
    type_training.main(RECIPE, __doc__)
