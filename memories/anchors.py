"""The names and numbers a statement turns on, and whether two statements agree on them (memories.curation).

Dense similarity says two texts are about the same thing; it does not see that "Tabaci is a tributary of the
Leurda" and "Leurda is a tributary of the Tabaci" swap their names, nor that "Tom lives in Boston" and "汤姆住在
芝加哥" name two cities. The anchors do: the numbers (in digits, or small ones spelled out in English or Chinese),
the Latin-script names (any Latin word inside Chinese text; in English text capitalised words that are no stop
word) and jieba's person, place and organisation names in Chinese text, all normalised (core.text.normalise),
case-folded and without accents (core.text.without_accents: "Malmö" and "Malmo" are one name).

Across scripts an anchor is matched without transliteration: the same Latin word or number on both sides
("我的狗叫Pixel", "a dog called Pixel"), or two names of one place (core.gazetteer: "里斯本", "Lisbon").
"""

import re
from functools import lru_cache

from core import gazetteer
from core.text import CJK_RUN, LATIN_LETTERS, normalise, without_accents
from memories.entity_types import is_courtesy_title

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LATIN_WORD = re.compile(rf"[{LATIN_LETTERS}][{LATIN_LETTERS}0-9'.+#-]*")
_ZH_NAME_TAGS = ("nr", "nrfg", "nrt", "ns", "nt", "nz")
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'll", "i'd"})


# Small numbers written out, so "three dogs" and "两只狗" disagree and "二十七岁" and "27" agree.
_EN_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_NUMBER = re.compile(r"[零〇一二两三四五六七八九十]+(?![百千万亿])")
_EN_NUMBER = re.compile(
    r"\b(?:" + "|".join(_EN_NUMBERS) + r")(?:-(?:one|two|three|four|five|six|seven|eight|nine))?\b",
    re.IGNORECASE,
)


def _zh_value(numeral: str) -> int | None:
    """一 … 九十九 as an integer (None past that: "一百" and up, and runs like "一二" that count nothing)."""
    if "十" not in numeral:
        return _ZH_DIGITS[numeral] if len(numeral) == 1 else None
    tens, _, ones = numeral.partition("十")
    if len(tens) > 1 or len(ones) > 1 or "十" in ones:
        return None
    return _ZH_DIGITS.get(tens, 1 if not tens else -100) * 10 + (_ZH_DIGITS.get(ones, -100) if ones else 0)


def _spelled_numbers(text: str) -> list[tuple[int, str]]:
    found = []
    for match in _EN_NUMBER.finditer(text):
        tens, _, ones = match.group().lower().partition("-")
        value = _EN_NUMBERS[tens] + (_EN_NUMBERS[ones] if ones else 0)
        if value >= 2:
            found.append((match.start(), str(value)))
    for match in _ZH_NUMBER.finditer(text):
        zh_value = _zh_value(match.group())
        if zh_value is not None and zh_value >= 2:  # "一只猫", "one of them": an article as often as a number
            found.append((match.start(), str(zh_value)))
    return found


def with_digits(text: str) -> str:
    """`text` with its small spelled-out numbers in digits ("二十七岁" → "27岁", "twenty-seven" → "27")."""
    for start, digits in sorted(_spelled_numbers(text), reverse=True):
        match = (_ZH_NUMBER if has_cjk(text[start]) else _EN_NUMBER).match(text, start)
        if match is not None:
            text = text[:start] + digits + text[match.end() :]
    return text


def has_cjk(text: str) -> bool:
    return bool(CJK_RUN.search(text))


@lru_cache(maxsize=4096)
def anchors(text: str) -> tuple[str, ...]:
    """The text's anchors in the order they first appear (case-folded, once each)."""
    text = normalise(text)
    found: list[tuple[int, str]] = [(m.start(), m.group().replace(",", "")) for m in _NUMBER.finditer(text)]
    found += _spelled_numbers(text)
    if has_cjk(text):
        found += [(m.start(), m.group()) for m in _LATIN_WORD.finditer(text)]
        found += _chinese_names(text)
    else:
        stop = _stop_words()
        run: list = []
        for m in [*_LATIN_WORD.finditer(text), None]:
            # A capital that opens a sentence marks a name only on a word of meaning ("Elif", not "The").
            if m is not None and m.group()[0].isupper() and m.group().casefold().rstrip(".'") not in stop:
                if run and text[run[-1].end() : m.start()] != " ":
                    found.append(_name(run))
                    run = []
                run.append(m)  # "United Kingdom", "Gerry Kiely": one name
            elif run:
                found.append(_name(run))
                run = []
    ordered = [without_accents(word.casefold()) for _, word in sorted(found)]
    return tuple(dict.fromkeys(word for word in ordered if word))


def _name(run: list[re.Match]) -> tuple[int, str]:
    """A run of capitalised words as one anchor, without a courtesy title before it: "Dr. Alvarez" is the
    "Alvarez医生" of a Chinese restatement (memories.entity_types.is_courtesy_title)."""
    words = [w.group().rstrip(".'") for w in run]
    start = 0
    while start < len(words) - 1 and is_courtesy_title(words[start]):
        start += 1
    return run[start].start(), " ".join(words[start:])


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS) | _NOT_NAMES


def _chinese_names(text: str) -> list[tuple[int, str]]:
    from memories.entities import _posseg

    names, position = [], 0
    for pair in _posseg().cut(text):
        if pair.flag in _ZH_NAME_TAGS and len(pair.word) > 1 and CJK_RUN.fullmatch(pair.word):
            names.append((position, pair.word))
        position += len(pair.word)
    return names


def covered(anchor: str, text: str) -> bool:
    """Whether `text` states `anchor`: the same word or number, or a name of the same place."""
    folded = without_accents(normalise(text).casefold())
    if not has_cjk(anchor):
        # A whole word or number: "1" is not in "1001", nor "tromsø" in "tromsøya"; a CJK neighbour is a boundary
        if re.search(rf"(?<![{LATIN_LETTERS}0-9]){re.escape(anchor)}(?![{LATIN_LETTERS}0-9])", folded):
            return True
    elif anchor in folded:
        return True
    return any(
        gazetteer.same_place(anchor, other) for other in anchors(text) if has_cjk(other) != has_cjk(anchor)
    )


def says_no_more(new: str, existing: str) -> bool:
    """Every anchor of `new` is in `existing`, and those of one script come in the same order in both (a swap
    of two names changes who did what to whom). Anchors matched across scripts have no order to compare; a
    Chinese name no gazetteer knows cannot be looked for in English text, so across languages only its Latin
    names, numbers and places count (jieba also takes some common nouns for names: "乌龟")."""
    own = anchors(new)
    across = has_cjk(new) != has_cjk(existing)
    needed = [a for a in own if not (across and has_cjk(a) and not gazetteer.places(a))]
    if not all(covered(anchor, existing) for anchor in needed):
        return False
    theirs = anchors(existing)
    shared = [anchor for anchor in own if anchor in theirs]
    return shared == [anchor for anchor in theirs if anchor in shared]


def same_value(one: str, other: str) -> bool | None:
    """Whether two values of one attribute of one subject are the same, across languages too: True (the same
    words, or one says no more than the other; the same Latin name or number; one place), False (different),
    None (in two scripts with nothing to compare them by: "阿克米" and "Acme")."""
    from memories.facts import same_value as same_words

    if same_words(with_digits(one), with_digits(other)):
        return True  # "七月二十号" and "7月20日" too
    if has_cjk(one) == has_cjk(other):
        return False
    place = gazetteer.same_place(one, other)
    if place is not None:
        return place
    first = {a for a in anchors(one) if a.isascii()}
    second = {a for a in anchors(other) if a.isascii()}
    if first and second:
        return first == second
    return None
