"""The learned re-typer of Chinese names: PERSON, PLACE or ORG from the words around a name and its own first and
last characters, where jieba's part-of-speech tags and the rules of memories.entity_types guess wrong. It learns
little about organisations (324 of the 8,383 names in its training data): a company jieba tags as a person's name
("阿里巴巴") mostly stays one.

A multinomial logistic regression over sparse features of a mention (jieba's tag and the rule type, the words
and tags either side, the name's first and last characters and length, whether an organisation ending found it),
trained by bench/train_chinese_types.py on the names memories.entities finds in Universal NER's Chinese GSD
(Simplified) train split. Its fourth class, KEEP, is a name that is no person, place or organisation there: the
rule type stands. The weights are a committed data file (memories/data/chinese_types.json, with its source and
licence); scoring is memories.learned_types', a sum of a dozen weight rows in plain Python.
"""

from pathlib import Path

from core import gazetteer
from memories import entity_types, learned_types

WEIGHTS = Path(__file__).resolve().parent / "data" / "chinese_types.json"
# jieba's "other proper noun" (nz, typed OTHER) may be any of the three; a time or a skill is left as it is, and
# Latin-script names in Chinese text (products, by memories.entities) never reach this module.
RETYPED = frozenset(("PERSON", "PLACE", "ORG", "OTHER"))


def features(
    tokens: list[tuple[str, str]], start: int, end: int, name: str, rule_type: str, groups
) -> list[str]:
    """The features of the name `name`, jieba's words [start, end) of `tokens`, of the groups a model was trained
    with (see bench/train_chinese_types.py for what each group holds and why). A name of more than one word is
    one an organisation ending found ("星辰" + "科技")."""
    tags = "+".join(flag for _, flag in tokens[start:end])
    found = ["bias", f"tag={tags}", f"rule={rule_type}", f"chars={min(len(name), 6)}"]
    if end - start > 1:
        found.append("org_ending")
    if "context" in groups:
        before = tokens[start - 1] if start > 0 else ("<s>", "<s>")
        after = tokens[end] if end < len(tokens) else ("</s>", "</s>")
        found += [f"prev={before[0]}", f"next={after[0]}", f"prev_tag={before[1]}", f"next_tag={after[1]}"]
    if "characters" in groups:
        found += [f"first={name[0]}", f"last={name[-1]}"]
    if "lexicons" in groups:
        hits = {
            "place": gazetteer.is_place(name),
            "place_ending": entity_types.has_place_ending(name),
        }
        found += [f"is_{hit}" for hit, value in hits.items() if value]
    if "words" in groups:
        found.append(f"word={name}")
    return found


def retyped(tokens: list[tuple[str, str]], start: int, end: int, name: str, rule_type: str) -> str:
    """The type the model gives the name, or `rule_type` when it says KEEP, when the rules gave a type it never
    changes, or an organisation by its ending."""
    if rule_type not in RETYPED:
        return rule_type
    if end - start > 1:
        # "青木咨询", "南洋大学": the model weighs the ending's first character against a place-like name before
        # it and says PLACE; trusting the ending keeps the hand-written dev sentences' organisations and fixes
        # one GSD dev organisation.
        return rule_type
    model = _model()
    return learned_types.predicted(
        model, features(tokens, start, end, name, rule_type, model["groups"]), rule_type
    )


def _model() -> dict:
    return learned_types.load(WEIGHTS)
