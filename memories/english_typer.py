"""The learned re-typer of English names: PERSON, PLACE or ORG from what surrounds a name, where spaCy's small
model and the rules of memories.entity_types guess wrong ("Valencia" after "flew into" is no person).

A multinomial logistic regression over sparse features of a mention (its spaCy type and rule type, the
dependency relation and head word of its root, its neighbours, word shape and suffixes, the gazetteer and
given-name hits), trained by bench/train_english_types.py on the mentions memories.entities finds in Universal
NER's English EWT train split. Its fourth class, KEEP, is a mention that is no person, place or organisation there
(a product, an event): the rule type stands. The weights are a committed data file
(memories/data/english_types.json, with its source and licence); scoring is a sum of a few dozen weight rows in
plain Python (memories.learned_types), a few microseconds a name.
"""

import re
from pathlib import Path

from core import gazetteer
from memories import entity_types, learned_types

WEIGHTS = Path(__file__).resolve().parent / "data" / "english_types.json"
# Only what a person, place or organisation may have been mistaken for is retyped: a skill ("French") or a time
# stays what the rules said, and the regex-found technical products never reach this module.
RETYPED = frozenset(("PERSON", "PLACE", "ORG", "CONCEPT", "PRODUCT", "EVENT"))


def retypes(spacy_type: str, rule_type: str) -> bool:
    """Whether the model may type a name found so, in training as at run time: never an account handle (the
    rules type it, and its shape is none the model learned from)."""
    return rule_type in RETYPED and spacy_type != entity_types.HANDLE


_SHAPE_RUNS = re.compile(r"(.)\1+")


def features(doc, start: int, end: int, name: str, spacy_type: str, rule_type: str, groups) -> list[str]:
    """The features of the name `name` at tokens [start, end) of spaCy's `doc`, of the groups a model was
    trained with (see bench/train_english_types.py for what each group holds and why)."""
    words = name.split()
    found = ["bias", f"spacy={spacy_type}", f"words={min(len(words), 4)}"]
    if "rules" in groups:
        found += [f"rule={rule_type}", f"spacy+rule={spacy_type}+{rule_type}"]
    if "context" in groups:
        root = doc[start:end].root
        head = root.head if not start <= root.head.i < end else root
        found += [f"dep={root.dep_}", f"dep+head={root.dep_}+{head.lower_}", f"headpos={head.pos_}"]
        before = doc[start - 1] if start > 0 else None
        after = doc[end] if end < len(doc) else None
        found.append(f"prev={before.lower_}" if before is not None else "prev=<s>")
        found.append(f"next={after.lower_}" if after is not None else "next=</s>")
        if start > 1:
            found.append(f"prev2={doc[start - 2].lower_}+{doc[start - 1].lower_}")
    if "shape" in groups:
        found.append(f"shape={_shape(name)}")
        found += [f"suffix={words[-1][-3:].casefold()}", f"first_suffix={words[0][-3:].casefold()}"]
    if "lexicons" in groups:
        hits = {
            "city": gazetteer.is_place(name, entity_types.CITY_POPULATION),
            "place": gazetteer.is_place(name),
            "given": entity_types.opens_with_given_name(name),
            "designator": entity_types.ends_with_org_designator(name),
            "acronym": entity_types.is_acronym(name),
        }
        found += [f"is_{hit}" for hit, value in hits.items() if value]
    if "words" in groups:
        found += [f"word={word.casefold()}" for word in words]
    return found


def _shape(name: str) -> str:
    """The word shape, each run of one kind of character written once: "Xx Xx" for "New York", "X.X." for
    "U.N."."""
    shape = "".join("X" if c.isupper() else "x" if c.isalpha() else "d" if c.isdigit() else c for c in name)
    return _SHAPE_RUNS.sub(r"\1", shape)


def retyped(doc, start: int, end: int, name: str, spacy_type: str, rule_type: str) -> str:
    """The type the model gives the name, or `rule_type` when it says KEEP, when the rules gave a type it never
    changes, or an organisation by its designator."""
    if not retypes(spacy_type, rule_type):
        return rule_type
    if rule_type == "ORG" and entity_types.ends_with_org_designator(name):
        # "a developer at Bluefin Labs": web text puts shops after "at" as places, and outweighs the designator;
        # trusting it changes nothing on EWT dev and keeps the hand-written dev sentences' organisations.
        return rule_type
    model = _model()
    return learned_types.predicted(
        model, features(doc, start, end, name, spacy_type, rule_type, model["groups"]), rule_type
    )


def _model() -> dict:
    return learned_types.load(WEIGHTS)
