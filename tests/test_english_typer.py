"""The learned re-typer of English names (memories.english_typer), on invented sentences: where spaCy's small model
types a name against what its sentence says, and what the re-typer must leave alone."""

import json

import pytest

from memories import english_typer, entity_types
from memories.entities import extract


def types(text: str) -> set[tuple[str, str]]:
    return {(mention.name, mention.entity_type) for mention in extract(text).mentions}


@pytest.fixture
def rules_only(monkeypatch):
    """The extraction as it was before the re-typer: the rules' type stands."""
    monkeypatch.setattr(
        english_typer, "retyped", lambda doc, start, end, name, spacy_type, rule_type: rule_type
    )


@pytest.mark.parametrize(
    ("text", "expected", "without_it"),
    [
        # A town no gazetteer lists (under CITY_POPULATION) that spaCy calls a person; one stays *in* it.
        ("We stayed two nights in Hvar before the ferry.", ("Hvar", "PLACE"), ("Hvar", "PERSON")),
        # The one who says or calls is a person, where spaCy saw an organisation.
        ('"We are ready," Thelwell said.', ("Thelwell", "PERSON"), ("Thelwell", "ORG")),
        ("Fenwick called about the roof repairs.", ("Fenwick", "PERSON"), ("Fenwick", "ORG")),
    ],
)
def test_a_name_is_typed_by_the_sentence_around_it(text, expected, without_it, request):
    assert expected in types(text)
    request.getfixturevalue("rules_only")
    assert without_it in types(text)


def test_what_the_rules_are_sure_of_stays():
    # An organisation designator outranks the model (web text puts shops "at" a place); a language is a skill and
    # a technical name a product, whatever surrounds them.
    assert types("Noor is a data analyst at Harwick Labs.") == {("Noor", "PERSON"), ("Harwick Labs", "ORG")}
    assert ("French", "SKILL") in types("She speaks French with her clients.")
    assert ("Node.js", "PRODUCT") in types("We moved the billing service to Node.js last week.")


def test_a_frame_outranks_the_re_typer(monkeypatch):
    # "worked at" takes an organisation: the sentence's own words beat a model that learned from web text, where
    # what one is "at" is mostly a shop or a town.
    assert ("Pellham", "ORG") in types("My brother worked at Pellham before the merger.")
    # spaCy calls Zentrix a person, the re-typer a place, the frame an organisation.
    assert ("Zentrix", "ORG") in types("Priya works at Zentrix now.")
    monkeypatch.setattr(entity_types, "framed_type", lambda text, name, entity_type: entity_type)
    assert ("Pellham", "PLACE") in types("My brother worked at Pellham before the merger.")
    assert ("Zentrix", "PLACE") in types("Priya works at Zentrix now.")


def test_the_weights_say_where_they_come_from():
    model = json.loads(english_typer.WEIGHTS.read_text())
    assert model["source"].startswith("UniversalNER/UNER_English-EWT @ ")
    assert "en_ewt-ud-train.iob2" in model["source"]
    assert model["licence"].startswith("CC BY-SA 4.0")
    assert model["trained_by"] == "bench/train_english_types.py"
    assert model["classes"] == ["PERSON", "PLACE", "ORG", "KEEP"]
    assert all(len(row) == 4 for row in model["weights"].values())
