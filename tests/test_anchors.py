"""The names and numbers curation compares (memories.anchors), on names written with accents: a name is the
whole word, so a place is not taken for a longer one that starts with it."""

import pytest

from memories import anchors
from memories.entities import extract_mentions

pytestmark = pytest.mark.unit


def test_accented_latin_names_are_whole_anchors_compared_without_their_accents():
    # ø is a letter of its own, not an o with a mark: it stays.
    assert anchors.anchors("Mira flew from Tromsø to Kraków with Zoë.") == ("mira", "tromsø", "krakow", "zoe")
    assert {"krakow", "tromsø"} <= set(anchors.anchors("米拉去了Kraków和Tromsø。"))
    assert anchors.says_no_more("Mira flew to Krakow with Zoe.", "Mira flew from Tromsø to Kraków with Zoë.")


def test_a_name_is_not_covered_by_a_longer_name_that_starts_with_it():
    assert not anchors.covered("tromsø", "Mira lives on Tromsøya.")
    assert not anchors.says_no_more("Mira lives in Tromsø.", "Mira lives in Tromsøya.")
    assert anchors.says_no_more("Mira lives in Tromsø.", "Mira has lived in Tromsø since May.")


def test_numbers_and_names_next_to_chinese_characters_are_still_whole_words():
    assert anchors.covered("pixel", "我的猫叫Pixel。")
    assert not anchors.covered("1", "第1001天")
    assert anchors.covered("1001", "第1001天")


def test_an_accented_latin_name_inside_chinese_text_is_one_entity():
    names = {mention.name for mention in extract_mentions("小林上个月去了São Tomé出差。")}
    assert "São Tomé" in names


def test_a_courtesy_title_is_no_part_of_a_name():
    assert anchors.anchors("Our vet is Dr. Ferreira and Mrs Lund runs the shop.") == ("ferreira", "lund")
    # A title alone is still compared: nothing else names whom it means.
    assert anchors.anchors("Ask the Prof.") == ("ask", "prof")
