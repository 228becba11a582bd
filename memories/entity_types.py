"""What kind of thing a name is, and which spans are no names at all (memories.entities reads a text, this
module decides what it found).

In order of trust:
1. The user's own graph: a type a person set by hand on an entity (a retype in the graph's curation log) is kept
   for every later mention of that name (memories.entity_links passes them in; a spaCy EntityRuler would do the same
   per call, at the cost of building one per user).
2. The sentence's own frame: a name right after "lives in", "is based in", "住在", "位于" is a PLACE, whatever
   spaCy or jieba guessed ("The user now lives in Valencia": spaCy's small model says a person, and Valencia is
   also a given name). These verbs take a place and nothing else; "moved to" or "在…工作" do not (a job, a firm).
   Likewise a name right before "lives in", "grew up in", "studied at", "住在", "毕业于" is a PERSON, and one right
   after "works at", "works for", "employed by" that no one typed a person is an ORG.
3. For English, the learned re-typer (memories.english_typer): a logistic regression trained on Universal NER's
   English EWT train split (bench/train_english_types.py) reads the name's sentence (its dependency relation and
   head word, its neighbours, its shape) with the types of 4. and 5. as features, and says PERSON, PLACE, ORG or
   KEEP (leave the rules' type). It never types a skill, a time or a technical product, nor changes an
   organisation named by its designator ("Bluefin Labs"). On EWT dev it raises type accuracy from 0.837 to
   0.866 (bench/results/extraction.md); on short invented memories it changes little, and some towns spaCy
   calls organisations stay so ("the weather in Tobermory").
   For Chinese, its counterpart (memories.chinese_typer), trained on Universal NER's Chinese GSD Simplified train
   split (bench/train_chinese_types.py), reads jieba's tags and the words either side of the name and the name's
   first and last characters, with the types of 4. and 5. as features; it never changes an organisation found by
   its ending ("青木咨询"). On GSD dev it raises type accuracy from 0.868 to 0.887 (ORG 0.614 to 0.682), a small
   gain: it leans on a name's characters more than on its sentence, and a company jieba tags as a person mostly
   stays one ("阿里巴巴").
4. Names packages know: a country, a US state or a city of CITY_POPULATION people or more is a PLACE
   (core.gazetteer: "the Brno branch office" is no person), a name that opens with a given name (Faker's
   person providers, some 80 locales) is a PERSON where spaCy's small model saw an organisation or nothing; a
   designator ending the name ("Acme Corp") makes an ORG, and so does an acronym spaCy left untyped ("AFP").
5. The language tools: spaCy's named entities for English, jieba's part-of-speech tags for Chinese.
And never an entity: bare numbers and ordinals ("第一版", "3rd", "2021"), the placeholders core.privacy
leaves for a masked secret ("[api_key masked]"), e-mail addresses and URLs. An account handle ("@dlopez") is a
person's name of its own (memories.entities), with or without its "@" (one merge key).

Spans are trimmed with spaCy's own analysis: a leading determiner ("the Department of Defense"), a courtesy
title ("Dr Smith") and a capitalised verb opening the sentence ("Met Marco at …": the sentence is read again with
that word in lower case, and if spaCy then calls it a verb it is no part of a name).
"""

import re
from functools import cache

from core import gazetteer
from core.secrets import PLACEHOLDER

# Chosen on the UNER English dev set (bench/extraction_eval.py, results/extraction.md): a city this large that
# spaCy calls a person or an organisation is far more often the city.
CITY_POPULATION = 100_000
# Courtesy titles: a closed class of English, never part of the name they precede. Not "St": it opens places and
# organisations ("St Albans", "St Mary's Hospital") far more than it titles a saint (EWT dev: 3 more names found,
# span precision 0.669 -> 0.673).
_TITLES = frozenset("mr mrs ms miss mx dr prof sir dame lord lady rev fr sr".split())
_NUMERALS = "0-9０-９〇零一二三四五六七八九十百千万亿两壹贰叁肆伍陆柒捌玖拾"
# A number or an ordinal, in digits or Chinese numerals, with at most one measure word after it ("第一版",
# "三楼", "2021年", "3rd", "1,000").
_NUMBER = re.compile(
    rf"^(?:第\s*)?[{_NUMERALS}][{_NUMERALS},.\s]*(?:st|nd|rd|th|[\u4e00-\u9fff])?$", re.IGNORECASE
)


def is_courtesy_title(word: str) -> bool:
    """A word that precedes a name and is no part of it: "Dr", "Mrs.", "Prof"."""
    return word.casefold().rstrip(".") in _TITLES


def is_name(name: str) -> bool:
    """False for what is never an entity: no letter at all, a number or ordinal, or a masked secret."""
    name = name.strip()
    if not any(char.isalpha() for char in name) or _NUMBER.match(name):
        return False
    return not PLACEHOLDER.search(name) and "masked]" not in name


# The verbs (with their prepositions) whose complement is a place and only a place, in English and Chinese: a
# closed class of the two languages, as the role nouns and organisation designators below.
_PLACE_FRAME = re.compile(
    r"(?:\b(?:lives?|living|lived|resides?|residing|resided|settled|grew up|is based|are based|was based|"
    r"headquartered|located) in(?: the)?|住在|居住在|居住于|定居在|定居于|生活在|位于|坐落在|坐落于|总部设在|总部在)\s*$",
    re.IGNORECASE,
)
# The verbs whose subject is a person: one lives, grows up, is born, studies or works somewhere ("Nadia lives in
# Salvador": spaCy's small model calls Nadia a place). A firm is based or located somewhere, and does none of these.
_PERSON_FRAME = re.compile(
    r"(?:\s+(?:now|still|also)?\s*(?:lives|lived|grew up|was born|resides|resided|works|worked|studied|studies) "
    r"(?:in|at|as)\b|(?:现在|目前|一直|也)?(?:住在|居住在|生活在|毕业于|就读于|出生于|出生在))",
    re.IGNORECASE,
)
# The verbs of employment, whose complement is an organisation (or the person one works for: "works for Tom"
# stays a person). Web text puts shops and restaurants after "at" as places, so a model learned from it (memories
# .english_typer) reads "works at Initech" as a place; this frame is what the sentence itself says. So does a
# role held "at" a name ("is a data engineer at X", "as a nurse at X"): a copula or "as", an article, at most three
# words, "at" (EWT dev and the hand-written dev sentences unchanged; it fires on neither).
_ORG_FRAME = re.compile(
    r"\b(?:(?:works?|working|worked|employed|interns?|interning|interned) (?:at|for|by)(?: the)?"
    r"|(?:is|was|am|are|were|as) an? (?:[a-z-]+ ){0,2}[a-z-]+ at)\s*$",
    re.IGNORECASE,
)
# Where one works in Chinese: 在 X 工作 / 上班 / 任职 / 实习. X may be a city (在杭州工作) but never a person, so this
# frame turns a person (jieba's nr: "我在阿里巴巴工作") or an untyped name into an organisation, and a place stays.
_ZH_WORKPLACE = "(?:在|于){}(?:工作|上班|任职|实习|打工)"
# The text before a name that a place frame is looked for in: the frame must end right before the name ("lives in
# the city of Valencia" is no frame, by design), so this only has to hold the frame itself.
_FRAME_REACH = 40


def _framed(text: str, name: str, frame: re.Pattern, before: bool) -> bool:
    """True when some mention of `name` in `text` directly follows (before=True) or precedes `frame`."""
    start = text.find(name)
    while start >= 0:
        if before and frame.search(text[max(0, start - _FRAME_REACH) : start]):
            return True
        if not before and frame.match(text, start + len(name)):
            return True
        start = text.find(name, start + 1)
    return False


def framed_type(text: str, name: str, entity_type: str) -> str:
    """A name's type with its sentence's frame applied (see the module docstring): a PLACE after a verb that
    takes one, a PERSON before a verb only a person is the subject of; a product, skill or time stays what it
    is."""
    if entity_type in ("PERSON", "ORG", "CONCEPT", "OTHER") and _framed(text, name, _PLACE_FRAME, True):
        return "PLACE"
    if entity_type in ("PLACE", "ORG", "CONCEPT", "OTHER") and _framed(text, name, _PERSON_FRAME, False):
        return "PERSON"
    if entity_type in ("PLACE", "CONCEPT", "OTHER") and _framed(text, name, _ORG_FRAME, True):
        return "ORG"
    if entity_type in ("PERSON", "CONCEPT", "OTHER") and re.search(
        _ZH_WORKPLACE.format(re.escape(name)), text
    ):
        return "ORG"
    return entity_type


def english_type(name: str, entity_type: str) -> str:
    """The type of an English name spaCy typed `entity_type` (CONCEPT: a proper noun its NER left out), by the
    packages' gazetteers: a country, US state or large city is a PLACE (unless spaCy saw a person with a given
    name: "Milan"); a name of one or two words opening with a given name is a PERSON where spaCy said
    organisation or nothing ("Traci", "Ask Priya"); an acronym it left untyped is an organisation ("AFP")."""
    if entity_type in ("SKILL", "TIME"):
        return entity_type
    words = name.split()
    given = opens_with_given_name(name)
    if (
        entity_type != "PLACE"
        and not (entity_type == "PERSON" and given)
        and gazetteer.is_place(name, CITY_POPULATION)
    ):
        return "PLACE"
    if ends_with_org_designator(name) and entity_type != "PLACE":
        return "ORG"
    if (
        entity_type in ("ORG", "CONCEPT", "PRODUCT", "EVENT")
        and given
        and len(words) <= 2
        and not gazetteer.is_place(name)
    ):
        return "PERSON"
    if entity_type == "CONCEPT" and is_acronym(name):
        return "ORG"
    return entity_type


def opens_with_given_name(name: str) -> bool:
    """True when the name's first word is a given name in some locale ("Priya Raman", "Traci")."""
    words = name.split()
    return bool(words) and words[0].casefold() in _given_names()


def ends_with_org_designator(name: str) -> bool:
    """True for a name of two words or more ending as organisation names do ("Acme Corp", "Tate Foundation")."""
    words = name.split()
    return len(words) > 1 and words[-1].casefold().rstrip(".") in _ORG_DESIGNATORS


def is_acronym(name: str) -> bool:
    return bool(_ACRONYM.match(name))


# What memories.entities gives an account handle ("@dlopez") in place of spaCy's type: a name of its own, typed
# a person by the rules, never by the learned re-typer.
HANDLE = "HANDLE"
_ACRONYM = re.compile(r"^[A-Z]{2,6}$")
# The words English organisation names end with ("Acme Corp", "Ashdown Horse Transport"): a closed class of
# company forms and institution heads, the counterpart of memories.entities' Chinese endings.
_ORG_DESIGNATORS = frozenset(
    "inc corp corporation co company ltd llc plc gmbh group bank university college institute foundation "
    "association agency ministry department council committee commission authority society union club party "
    "airlines airways motors insurance labs laboratories technologies systems services partners holdings".split()
)


def chinese_type(word: str, entity_type: str) -> str:
    """The type of a word jieba tagged as a name: a place the gazetteer knows is a PLACE (jieba tags many
    transliterated places as people: "乌克兰", "多伦多")."""
    if entity_type != "PLACE" and (gazetteer.is_place(word, CITY_POPULATION) or has_place_ending(word)):
        return "PLACE"
    return entity_type


def has_place_ending(word: str) -> bool:
    """True for a Chinese word ending as place names do and given names do not ("双吉寺", "玄武湖")."""
    return bool(_PLACE_ENDING.search(word))


# The characters Chinese place names end with and given names do not: temples, palaces, lakes, counties, cities,
# provinces, districts, towns, villages, roads, streets, bridges, islands, ports, bays, stations ("双吉寺",
# "玄武湖"); jieba tags many such names as people.
_PLACE_ENDING = re.compile(r"[\u4e00-\u9fff][寺宫湖县市省区镇乡村路街桥岛港湾站塔]$")


def latin_in_chinese_type(name: str, entity_type: str) -> str:
    """A Latin-script name inside Chinese text is a product ("用React写") unless a gazetteer knows it: a place
    ("Lisbon"), or a person's given name opening it ("Lucy", "Randy Quaid")."""
    words = name.split()
    if gazetteer.is_place(name, CITY_POPULATION):
        return "PLACE"
    if words and words[0].casefold() in _given_names() and len(words) <= 3:
        return "PERSON"
    return entity_type


@cache
def _given_names() -> frozenset[str]:
    """Given names in Latin script from every locale of Faker's person providers, case-folded."""
    import importlib
    import pkgutil

    import faker.providers.person as people

    names: set[str] = set()
    for module_info in pkgutil.iter_modules(people.__path__):
        provider = getattr(importlib.import_module(f"{people.__name__}.{module_info.name}"), "Provider", None)
        for attribute in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary"):
            value = vars(provider).get(attribute) if provider is not None else None
            if isinstance(value, (list, tuple, dict)):
                names.update(n.casefold() for n in value if n[:1].isupper() and n.replace("-", "").isalpha())
    return frozenset(name for name in names if not any("\u3400" <= char <= "\u9fff" for char in name))


def trimmed(tokens: list) -> list:
    """A name's spaCy tokens without what precedes the name: determiners, possessives, courtesy titles,
    punctuation."""
    start = 0
    while start < len(tokens) - 1 and (
        tokens[start].pos_ in ("DET", "PRON", "PUNCT", "ADP", "CCONJ")
        or is_courtesy_title(tokens[start].lower_)
    ):
        start += 1
    end = len(tokens)
    while end > start + 1 and tokens[end - 1].pos_ in ("PUNCT", "PART") and tokens[end - 1].text != ".":
        end -= 1
    return tokens[start:end]


def is_title(tokens: list) -> bool:
    """A courtesy title or a role in capitals before a name ("Dr", "CEO"), not part of it."""
    return all(is_courtesy_title(t.lower_) or (t.is_upper and len(t.text) > 1) for t in tokens)


def colon_openers(doc) -> list:
    """The tokens that open what follows a colon within a sentence ("Gina: Yep Jon, …", a chat turn after its
    speaker's name)."""
    return [
        doc[t.i + 1] for t in doc if t.text == ":" and t.i + 1 < len(doc) and not doc[t.i + 1].is_sent_start
    ]


def clause_openers(doc) -> list:
    """The tokens that open a sentence or what follows a colon within it: capitalised there by convention, not
    because they are names."""
    return [sentence[0] for sentence in doc.sents] + colon_openers(doc)


def greets_before_name(token, opener_ids: set[int]) -> bool:
    """Whether `token` is the capitalised word opening an utterance after a speaker's name, before the name it
    addresses ("Gina: Yep Jon, …", "Max: Congrats Sam!"): no given name nor title, followed by a given name.
    Only after a colon: at a sentence's start the given names (every locale's) are too many to tell "Hey Sam" from
    "Burger King" or "Sand Hill" (EWT dev span precision 0.670 → 0.664)."""
    doc = token.doc
    return (
        token.i in opener_ids
        and token.i + 1 < len(doc)
        and not opens_with_given_name(token.text)
        and not is_courtesy_title(token.lower_)
        and opens_with_given_name(doc[token.i + 1].text)
    )


def recased(text: str, doc) -> str | None:
    """`text` with each clause's opening word (clause_openers) in lower case, when spaCy took that word for part
    of a name (a proper noun, or a word of what it took for a person's name) only because of its capital: None
    when no clause opens so. A person's name opening the clause is read again only when its first word is no
    given name ("Email Tom about …", not "Ana lives …")."""
    chars = list(text)
    changed = False
    for first in clause_openers(doc):
        if (
            (first.pos_ == "PROPN" or first.ent_type_ == "PERSON")
            and first.is_title
            and first.i + 1 < first.sent.end  # the clause's only word is no name run on from its capital
            and (first.ent_type_ != "PERSON" or not opens_with_given_name(first.text))
        ):
            chars[first.idx] = first.text[0].lower()
            changed = True
    return "".join(chars) if changed else None


def opens_with_non_name(token, recased_doc) -> bool:
    """True when this clause-opening token, read again in lower case, is a verb or an interjection ("Met",
    "Visited", "Yep", "Congrats") and no given name or place a gazetteer knows ("Ana", "Lyon" stay names)."""
    if recased_doc is None:
        return False
    other = recased_doc[token.i] if token.i < len(recased_doc) else None
    return (
        other is not None
        and other.idx == token.idx
        and other.pos_ in ("VERB", "AUX", "INTJ")
        and token.text.casefold() not in _given_names()
        and not gazetteer.places(token.text)
    )
