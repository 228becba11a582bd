"""The learned re-typer of Chinese names (memories.chinese_typer), on invented sentences: where jieba's tag types a
name against what its sentence says, and what the re-typer must leave alone."""

import json

import pytest

from memories import chinese_typer, entity_types
from memories.entities import extract


def types(text: str) -> set[tuple[str, str]]:
    return {(mention.name, mention.entity_type) for mention in extract(text).mentions}


@pytest.fixture
def rules_only(monkeypatch):
    """The extraction as it was before the re-typer: jieba's tag and the rules' type stand."""
    monkeypatch.setattr(chinese_typer, "retyped", lambda tokens, start, end, name, rule_type: rule_type)


@pytest.mark.parametrize(
    ("text", "expected", "without_it"),
    [
        # Invented transliterated names jieba tags as people; one is born or stays *in* them.
        ("他出生在瑞恩达。", ("瑞恩达", "PLACE"), ("瑞恩达", "PERSON")),
        ("我们在布里亚住了三天。", ("布里亚", "PLACE"), ("布里亚", "PERSON")),
        # jieba's "other proper noun": a firm has a chairman and a share price.
        ("诺基亚董事长宣布了新计划。", ("诺基亚", "ORG"), ("诺基亚", "OTHER")),
    ],
)
def test_a_name_is_typed_by_the_words_around_it(text, expected, without_it, request):
    assert expected in types(text)
    request.getfixturevalue("rules_only")
    assert without_it in types(text)


def test_what_the_rules_are_sure_of_stays():
    # An organisation ending outranks the model (it reads "青木" as a place's name); a Latin-script name in Chinese
    # text is a product, whatever surrounds it.
    assert types("王明和李娜在青木咨询上班。") == {
        ("青木咨询", "ORG"),
        ("王明", "PERSON"),
        ("李娜", "PERSON"),
    }
    assert ("React", "PRODUCT") in types("她用React写了一个新页面。")


def test_a_frame_outranks_the_re_typer(monkeypatch):
    # "住在" takes a place, whatever the model says of the name.
    assert ("沃尔德", "PLACE") in types("陈刚住在沃尔德。")
    assert ("恒泰", "PLACE") in types("陈刚住在恒泰。")
    monkeypatch.setattr(entity_types, "framed_type", lambda text, name, entity_type: entity_type)
    assert ("恒泰", "PERSON") in types("陈刚住在恒泰。")


def test_the_weights_say_where_they_come_from():
    model = json.loads(chinese_typer.WEIGHTS.read_text())
    assert model["source"].startswith("UniversalNER/UNER_Chinese-GSDSIMP @ ")
    assert "zh_gsdsimp-ud-train.iob2" in model["source"]
    assert model["licence"].startswith("CC BY-SA 4.0")
    assert model["trained_by"] == "bench/train_chinese_types.py"
    assert model["classes"] == ["PERSON", "PLACE", "ORG", "KEEP"]
    assert all(len(row) == 4 for row in model["weights"].values())
