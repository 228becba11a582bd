"""Single-valued facts in a memory, offline: who (subject), what about them (attribute), and the value.

A person has one name, one employer, one home, one role, one age, one manager and one partner at a time, one
favourite of each kind, and either likes a thing or not. Two memories with the same subject and attribute and
different values contradict each other, and the newer one supersedes the older (memories.curation). Facts that
can hold together ("I have a cat", "I speak French") have no slot here and are never superseded.

The patterns are the plain grammar of such statements in English and Chinese, first person ("I", "我"), third
person ("the user", "用户") and named people ("Ana's manager is Kofi"). They are deliberately narrow: a missed
slot leaves two facts side by side, a wrong one would hide a true fact.

Languages are one slot each, as likes are ("speaks:portuguese" yes or no): a person speaks several at once.
"""

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from core.text import normalise
from memories.entities import chinese_words, english_lemmas, parse_english

SELF = "user"


@dataclass(frozen=True)
class Slot:
    subject: str  # "user" for the memory's owner, else the person's name, case-folded
    attribute: str  # "employer", "home", "manager", "favourite:colour", "likes:tea", …
    value: str  # normalised; "yes"/"no" for likes

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.attribute}"


# --- English -----------------------------------------------------------------------------------------------

_NAME = r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+)?"
_WHO = rf"(?P<who>I|[Tt]he user|{_NAME})"
_WHOSE = rf"(?P<whose>[Mm]y|[Tt]he user's|{_NAME}'s)"
_ADVERB = r"(?:(?:now|currently|still|also|recently|actually|already|really|truly|just|usually) )?"
_VALUE = r"(?P<value>[^,.;!?\n]{1,60}?)"
_END = r"(?=\s*(?:[,.;!?\n]|$| and | but | now\b| these days| since | from | because ))"
_RELATIONS = {
    "manager": "manager",
    "boss": "manager",
    "supervisor": "manager",
    "line manager": "manager",
    "team lead": "manager",
    "wife": "partner",
    "husband": "partner",
    "spouse": "partner",
    "partner": "partner",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "fiancé": "partner",
    "fiancée": "partner",
    "fiance": "partner",
    "fiancee": "partner",
}
_RELATION_WORDS = "|".join(sorted(_RELATIONS, key=len, reverse=True))

_ENGLISH = [
    ("name", re.compile(rf"\b{_WHOSE} (?:full )?name is {_VALUE}{_END}")),
    ("name", re.compile(rf"\b(?P<who>I)(?: am|'m) called {_VALUE}{_END}")),
    ("name", re.compile(rf"\b[Cc]all me {_VALUE}{_END}")),
    ("name", re.compile(rf"\b(?P<who>[Tt]he user) is (?:called|named) {_VALUE}{_END}")),
    (
        "name",
        re.compile(rf"\b{_WHO} (?:wants?|likes?|prefers?) to be called {_VALUE}{_END}"),
    ),
    ("name", re.compile(rf"\b{_WHO} {_ADVERB}(?:go|goes) by {_VALUE}{_END}")),
    (
        "employer",
        re.compile(
            rf"\b{_WHO}(?: am|'m| is|'s| have been| has been)? {_ADVERB}"
            rf"(?:work|works|working|worked|employed|started working) (?:at|for|by) {_VALUE}{_END}"
        ),
    ),
    (
        "employer",
        re.compile(
            rf"\b{_WHO} (?:(?:left|quit|has left|have left) [^,.;]{{1,60}}? and )?{_ADVERB}"
            rf"(?:joined|have joined|has joined) {_VALUE}{_END}"
        ),
    ),
    ("employer", re.compile(rf"\b{_WHOSE} (?:employer|company) is {_VALUE}{_END}")),
    (
        "home",
        re.compile(
            rf"\b{_WHO}(?: am|'m| is|'s| have| has)? {_ADVERB}"
            rf"(?:live|lives|living|based|moved|relocated|settled) (?:in|to) {_VALUE}{_END}"
        ),
    ),
    ("home", re.compile(rf"\b{_WHOSE} (?:home|hometown|home town) is (?:in )?{_VALUE}{_END}")),
    ("role", re.compile(rf"\b{_WHO} {_ADVERB}(?:work|works|working) as (?:an? |the )?{_VALUE}{_END}")),
    (
        "role",
        re.compile(
            rf"\b{_WHOSE} (?:job|role|job title|title|position|occupation) is (?:an? )?{_VALUE}{_END}"
        ),
    ),
    ("age", re.compile(rf"\b{_WHO}(?: am|'m| is|'s) (?P<value>\d{{1,3}}) (?:years old|years of age)")),
    # "The user is Lena", "I'm Kwame Mensah": a name only when the words are a proper noun and not a
    # nationality or a place (_is_personal_name: "I am Portuguese" is no name).
    (
        "proper_name",
        re.compile(rf"\b(?P<who>I|[Tt]he user)(?: am|'m| is) (?P<value>{_NAME}(?: {_NAME})?){_END}"),
    ),
    (
        "speaks",
        re.compile(
            rf"\b{_WHO}(?:(?: am|'m| is|'s) {_ADVERB}fluent in| {_ADVERB}(?:(?P<negation>don't|do not|doesn't"
            rf"|does not|can't|cannot|no longer) )?(?:speak|speaks|can speak)(?: fluent| some| a little| basic)?)"
            rf" (?P<value>[A-Z][a-z]+(?:(?:,? and |, | & )[A-Z][a-z]+)*)"
        ),
    ),
    ("age", re.compile(rf"\b{_WHOSE} age is (?P<value>\d{{1,3}})")),
    (
        "relation",
        re.compile(rf"\b{_WHOSE} (?:new |current )?(?P<relation>{_RELATION_WORDS}) is {_VALUE}{_END}"),
    ),
    (
        "relation",
        re.compile(rf"\b(?P<value>{_NAME}) is {_WHOSE} (?:new |current )?(?P<relation>{_RELATION_WORDS})\b"),
    ),
    (
        "manager",
        re.compile(rf"\b{_WHO} {_ADVERB}(?:report|reports|reporting) (?:directly )?to {_VALUE}{_END}"),
    ),
    ("partner", re.compile(rf"\b{_WHO}(?: am|'m| is|'s) {_ADVERB}(?:married|engaged) to {_VALUE}{_END}")),
    (
        "partner",
        re.compile(rf"\b{_WHO}(?: am|'m| is|'s) {_ADVERB}(?:dating|seeing|going out with) {_VALUE}{_END}"),
    ),
    ("car", re.compile(rf"\b{_WHO} {_ADVERB}(?:drive|drives) (?:an? |the )?{_VALUE}{_END}")),
    ("school", re.compile(rf"\b{_WHO} {_ADVERB}(?:study|studies|is studying|am studying) at {_VALUE}{_END}")),
    (
        "role",
        re.compile(
            rf"\b{_WHO}(?: am|'m| is|'s) {_ADVERB}(?:an? |the )(?P<value>[\w -]{{2,40}}?) (?:at|for|in) [A-Z]"
        ),
    ),
    (
        "favourite",
        re.compile(
            rf"\b{_WHOSE} (?:favou?rite|preferred|go-to) (?P<kind>[a-z]+(?: [a-z]+){{0,3}}) is {_ADVERB}{_VALUE}{_END}"
        ),
    ),
    # Any other "X's <attribute> is <value>": a definite statement of one value ("the user's best friend is Wes").
    (
        "attribute",
        re.compile(rf"\b{_WHOSE} (?P<kind>[a-z]+(?: [a-z]+){{0,3}}) is {_ADVERB}{_VALUE}{_END}"),
    ),
    (
        "likes",
        re.compile(
            rf"\b{_WHO} {_ADVERB}(?:(?P<negation>don't|do not|doesn't|does not|no longer|never|hate|hates|dislike"
            rf"|dislikes)(?: (?:like|likes|love|loves|enjoy|enjoys))?|like|likes|love|loves|enjoy|enjoys|prefer"
            rf"|prefers) {_VALUE}(?= any ?more|\s*(?:[,.;!?\n]|$| and | but | over | to ))"
        ),
    ),
]

# --- Chinese -----------------------------------------------------------------------------------------------

_ZH_WHO = r"(?P<who>我|用户|他|她|[\u4e00-\u9fff]{2,3}(?=的))"
_ZH_SELF = r"(?P<who>我|用户(?:[\u4e00-\u9fff]{2,3}(?=[现目已在住是叫今]))?)"
# A sentence's subject: the user, or a name of two or three characters opening the clause.
_ZH_SUBJECT = r"(?:(?<=^)|(?<=[，。；！？,.;!?\s]))(?P<who>我|用户|[\u4e00-\u9fff]{2,3}?(?=[现目已如刚最今也还一在于住家搬的从向是叫])|[A-Z][a-z]+(?: [A-Z][a-z]+)?)\s*"
_ZH_ADVERB = r"(?:现在|目前|如今|已经|刚刚|最近|今年|也|还|一直)*"
_ZH_VALUE = r"\s*(?P<value>[^，。；！？、,.;!?]{1,30}?)"
_ZH_END = r"(?=\s*了?\s*(?:[，。；！？、,.;!?]|$))"
_ZH_RELATIONS = {
    "经理": "manager",
    "老板": "manager",
    "领导": "manager",
    "上司": "manager",
    "主管": "manager",
    "直属领导": "manager",
    "妻子": "partner",
    "老婆": "partner",
    "太太": "partner",
    "丈夫": "partner",
    "老公": "partner",
    "先生": "partner",
    "爱人": "partner",
    "女朋友": "partner",
    "男朋友": "partner",
    "女友": "partner",
    "男友": "partner",
    "对象": "partner",
    "伴侣": "partner",
    "未婚妻": "partner",
    "未婚夫": "partner",
}
_ZH_RELATION_WORDS = "|".join(sorted(_ZH_RELATIONS, key=len, reverse=True))

_CHINESE = [
    (
        "name",
        re.compile(
            rf"{_ZH_SELF}{_ZH_ADVERB}(?:的名字是|的名字叫|名叫|叫做|改名叫|改名为|叫){_ZH_VALUE}{_ZH_END}"
        ),
    ),
    ("employer", re.compile(rf"{_ZH_SUBJECT}{_ZH_ADVERB}(?:在|于){_ZH_VALUE}(?:工作|上班|任职|就职)(?!的)")),
    (
        "employer",
        re.compile(
            rf"{_ZH_SUBJECT}.{{0,20}}?(?:离职|辞职)[，,]?(?:去了|加入了?|跳槽到了?){_ZH_VALUE}{_ZH_END}"
        ),
    ),
    (
        "role",
        re.compile(rf"{_ZH_SUBJECT}{_ZH_ADVERB}在[^，。；！？\s]{{2,20}}?(?:做|当){_ZH_VALUE}{_ZH_END}"),
    ),
    ("school", re.compile(rf"{_ZH_SUBJECT}{_ZH_ADVERB}在{_ZH_VALUE}(?:读|念|上学)")),
    (
        "employer",
        re.compile(
            rf"{_ZH_SELF}{_ZH_ADVERB}(?:就职于|任职于|供职于|入职了?|加入了?|跳槽到了?){_ZH_VALUE}{_ZH_END}"
        ),
    ),
    (
        "home",
        re.compile(
            rf"{_ZH_SUBJECT}{_ZH_ADVERB}(?:家住在|住在|住|居住在|定居在|定居|搬到了?|搬去了?|搬家到了?){_ZH_VALUE}"
            rf"(?=\s*住?{_ZH_END[3:]}"
        ),
    ),
    ("home", re.compile(rf"{_ZH_SELF}(?:的)?家{_ZH_ADVERB}在{_ZH_VALUE}{_ZH_END}")),
    (
        "role",
        re.compile(
            rf"{_ZH_SELF}{_ZH_ADVERB}(?:是一名|是一位|是个|是一个|担任|当上了?|成为了?一名|的职位是|的工作是|的职业是){_ZH_VALUE}{_ZH_END}"
        ),
    ),
    ("age", re.compile(rf"{_ZH_SELF}{_ZH_ADVERB}(?P<value>\d{{1,3}})岁")),
    (
        "proper_name",
        re.compile(
            rf"(?:(?<=^)|(?<=[，。；！？,.;!?\s]))(?P<who>我|用户){_ZH_ADVERB}(?:就)?是(?P<value>[\u4e00-\u9fff]{{2,4}}){_ZH_END}"
        ),
    ),
    (
        "speaks",
        re.compile(
            rf"{_ZH_SELF}{_ZH_ADVERB}(?P<negation>不)?(?:会说|会讲|能说|说|讲)(?:流利的|一点|一些)?"
            rf"(?P<value>[\u4e00-\u9fff]{{1,4}}?[语文话](?:[和、跟与][\u4e00-\u9fff]{{1,4}}?[语文话])*)"
        ),
    ),
    (
        "relation",
        re.compile(
            rf"{_ZH_WHO}的(?:新)?(?P<relation>{_ZH_RELATION_WORDS})(?:是|叫|名叫){_ZH_VALUE}{_ZH_END}"
        ),
    ),
    (
        "relation",
        re.compile(
            rf"(?P<value>[\u4e00-\u9fff]{{2,3}}|{_NAME})(?:现在)?是{_ZH_SELF}的(?:新)?(?P<relation>{_ZH_RELATION_WORDS})"
        ),
    ),
    ("manager", re.compile(rf"{_ZH_SELF}{_ZH_ADVERB}(?:直接)?向{_ZH_VALUE}汇报")),
    ("favourite", re.compile(rf"{_ZH_SELF}最喜欢的(?P<kind>[\u4e00-\u9fff]{{1,4}})是{_ZH_VALUE}{_ZH_END}")),
    (
        "favourite",
        re.compile(rf"{_ZH_SELF}{_ZH_ADVERB}最(?:喜欢|爱)(?P<kind>吃|喝|玩|看|听|用|去){_ZH_VALUE}{_ZH_END}"),
    ),
    # Any other "X的<attribute>是/叫/换成了<value>".
    (
        "attribute",
        re.compile(
            rf"{_ZH_SUBJECT}的(?P<kind>[\u4e00-\u9fffA-Za-z ]{{1,8}}?)(?:现在)?(?:是|叫|换成了?|变成了?|改成了?){_ZH_VALUE}"
            rf"的?{_ZH_END}"
        ),
    ),
    (
        "likes",
        re.compile(
            rf"{_ZH_SELF}{_ZH_ADVERB}(?:(?P<negation>不再|不太|不|没那么|讨厌){_ZH_ADVERB}(?:喜欢|爱|偏爱|热爱)?"
            rf"|喜欢|爱|偏爱|热爱)(?:喝|吃|玩|看|听|用)?{_ZH_VALUE}{_ZH_END}"
        ),
    ),
]

# Attributes the generic "X's <attribute> is" patterns leave to the named ones (which normalise them).
_KNOWN_ATTRIBUTES = frozenset(
    {
        "name",
        "full name",
        "employer",
        "company",
        "home",
        "hometown",
        "home town",
        "job",
        "role",
        "job title",
        "title",
        "position",
        "occupation",
        "age",
        *_RELATIONS,
        *_ZH_RELATIONS,
        "名字",
    }
)

_FILLER = re.compile(r"^(?:the|a|an|my|our)\s+|\s+(?:now|currently|today|these days|again|too|as well)$")


def _clean(value: str) -> str:
    value = unicodedata.normalize("NFKC", value).strip().strip("\"'“”‘’「」")
    value = value.rstrip("了呢啦吧")
    previous = None
    while previous != value:
        previous, value = value, _FILLER.sub("", value.casefold()).strip()
    return value


def _subject(who: str | None) -> str:
    if who is None:
        return SELF
    who = who.strip()
    if who.casefold() in {
        "i",
        "my",
        "me",
        "the user",
        "the user's",
        "我",
        "用户",
        "他",
        "她",
    } or who.startswith("用户"):
        return SELF if who.casefold() not in {"他", "她"} else "third person"
    return who.removesuffix("'s").casefold()


_CJK_TEXT = re.compile(r"[\u4e00-\u9fff]")


def _names_a_person(words: str) -> bool:
    """Whether a Chinese subject holds a person's name by jieba's tags (nr…), as "潘越", "谢明哲" (谢 + 明哲) and
    "小周" do and "年代", "然后" do not."""
    return any(flag.startswith("nr") for _, flag in chinese_words(words))


def same_attribute(one: str, other: str) -> bool:
    """Two attributes are one when equal, or when one kind of favourite or other attribute names the other more
    closely: "favourite:programming language" and "favourite:language" (the same head noun, one's words among the
    other's); "favourite:spoken language" and "favourite:programming language" are two."""
    if one == other:
        return True
    family, _, kind = one.partition(":")
    other_family, _, other_kind = other.partition(":")
    if not kind or family != other_family or family not in ("favourite", "attribute"):
        return False
    words, other_words = kind.split(), other_kind.split()
    return words[-1] == other_words[-1] and (set(words) <= set(other_words) or set(other_words) <= set(words))


_LANGUAGE_LIST = re.compile(r",? and |, | & |[和、跟与]")


def is_chinese_name(word: str) -> bool:
    """jieba's tagger reads the word as one person's name ("nr"): 陈静 and 马可 are, 很好 and 今天 are not."""
    words = chinese_words(word)
    return len(words) == 1 and words[0][1].startswith("nr")


def _is_personal_name(value: str, text: str) -> bool:
    """Whether `value`, said as "I am <value>" in `text`, is a person's name: a proper noun by spaCy's tags (a
    nationality or a religion is an adjective: "I am Portuguese"; its entity labels are no help, "Henrik" is a
    PRODUCT to it); in Chinese, a person's name by jieba's part of speech."""
    if re.search(r"[\u4e00-\u9fff]", value):
        return is_chinese_name(value)
    [doc] = parse_english([text])
    start = text.find(value)
    tokens = [token for token in doc if start <= token.idx < start + len(value)]
    return bool(tokens) and all(token.tag_ == "NNP" for token in tokens)


def same_value(one: str, other: str) -> bool:
    """Two values of one attribute agree when one says no more than the other ("march 14" / "on 14 march",
    "subaru outback" / "2019 subaru outback"), accents aside ("Malmö" / "Malmo")."""
    from core.text import content_words, without_accents

    one, other = without_accents(one), without_accents(other)
    if one == other:
        return True
    a, b = content_words(one), content_words(other)
    return bool(a and b) and (a <= b or b <= a)


def slots(text: str) -> list[Slot]:
    """The single-valued facts a memory states, at most one per subject and attribute (the last one wins:
    "I used to live in Paris but now I live in Lyon")."""
    found: dict[str, Slot] = {}
    text = normalise(text)  # "Lena’s" as "Lena's", full-width forms as plain ones
    if text.rstrip().endswith("?"):
        return []  # a question states nothing
    for kind, pattern in [*_ENGLISH, *_CHINESE]:
        for match in pattern.finditer(text):
            attribute = kind
            groups = match.groupdict()
            who = groups.get("who") or groups.get("whose")
            value = _clean(groups["value"])
            if not value or (attribute == "name" and len(value.split()) > 3):
                continue
            if attribute == "proper_name":
                if not _is_personal_name(groups["value"], text):
                    continue
                attribute = "name"
            if attribute == "speaks":
                spoken = "no" if groups.get("negation") else "yes"
                subject = _subject(who)
                for language in _LANGUAGE_LIST.split(groups["value"]):
                    if language and subject != "third person":
                        slot = Slot(subject, f"speaks:{_clean(language)}", spoken)
                        found[slot.key] = slot
                continue
            if attribute == "relation":
                relation = groups["relation"].casefold()
                attribute = _RELATIONS.get(relation) or _ZH_RELATIONS.get(relation, "relation")
            elif attribute == "favourite":
                attribute = f"favourite:{_clean(groups['kind'])}"
            elif attribute == "attribute":
                kind = _clean(groups["kind"])
                if kind in _KNOWN_ATTRIBUTES or kind.split()[0] in (
                    "favourite",
                    "favorite",
                    "preferred",
                    "go-to",
                ):
                    continue  # a named pattern above reads it
                attribute = f"attribute:{kind}"
            elif attribute == "likes":
                attribute, value = f"likes:{value}", "no" if groups.get("negation") else "yes"
            subject = _subject(who)
            if subject == "third person":
                continue  # "he"/"she" names nobody this memory identifies
            if subject != SELF and _CJK_TEXT.search(subject) and not _names_a_person(subject):
                continue  # "年代搬到盐湖城", "美洲原住民": a clause, not a person's fact
            slot = Slot(subject, attribute, value)
            found[slot.key] = slot
    return list(found.values())


# --- values restated as changed ----------------------------------------------------------------------------

# The words that say a statement replaces an earlier one ("I study English now", "现在我学英语"): adverbs of the
# present set against the past, English and Chinese. A closed class of each language, not a list of values.
CHANGE_MARKERS = frozenset({"now", "nowadays", "currently", "现在", "目前", "如今"})
# The same words found without parsing: whole words in English, substrings in Chinese (no word boundaries).
_SAYS_CHANGED = re.compile(
    "|".join(
        rf"\b{re.escape(word)}\b" if word.isascii() else re.escape(word) for word in sorted(CHANGE_MARKERS)
    ),
    re.IGNORECASE,
)
# The most of a statement a changed value may take, in words: "the Lisbon office" → "the Berlin office" is one
# value; a longer span is another statement, not another value of the same one.
_MAX_VALUE_WORDS = 3
# Negations are no value: "I do not study Korean now" denies a fact, which the slots above read as likes/speaks.
_NEGATIONS = frozenset({"not", "n't", "never", "no", "不", "没", "没有", "别"})


@dataclass(frozen=True)
class _Word:
    text: str  # case-folded
    verb: bool


def says_changed(text: str) -> bool:
    """Whether `text` holds a word of CHANGE_MARKERS: the cheap test before changed_value parses anything."""
    return bool(_SAYS_CHANGED.search(normalise(text)))


@lru_cache(maxsize=1024)
def _words(text: str) -> tuple[_Word, ...]:
    """The words of `text` for comparing two statements' frames: case-folded, punctuation left out, each with
    whether it is a verb (spaCy's tags in English, jieba's in Chinese). Cached: a new fact is compared with each
    of its nearest facts in turn."""
    text = normalise(text)
    if _CJK_TEXT.search(text):
        return tuple(
            _Word(word.casefold(), flag.startswith("v"))
            for word, flag in chinese_words(text)
            if word.strip() and flag != "x"
        )
    [doc] = parse_english([text])
    return tuple(
        _Word(token.lower_, token.pos_ in ("VERB", "AUX"))
        for token in doc
        if not token.is_punct and not token.is_space
    )


# The words that say a statement has stopped holding ("I no longer drive the Honda", "我不再开本田了"): a closed
# class of each language. "anymore" ends a fact only beside a negation ("I don't drive it anymore").
_ENDED = re.compile(
    r"\bno longer\b|(?:\bnot\b|n't\b|\bnever\b).*\bany ?more\b|不再|再也不|已经不", re.IGNORECASE
)
_ENDING_WORDS = frozenset(
    {"no", "longer", "not", "n't", "never", "anymore", "any", "more", "不再", "再也不", "已经不"}
)
# Words that carry no meaning of the fact: English auxiliaries and determiners ("I am no longer a vegetarian"
# after "I am a vegetarian"; "the Honda" after "a Honda"), Chinese numerals, measure words and particles
# ("一辆", "了"), punctuation.
_FRAME_POS = frozenset({"AUX", "DET", "PUNCT", "SPACE", "PART"})
_FRAME_FLAGS = ("m", "q", "u", "y", "x")


def says_ended(text: str) -> bool:
    """Whether `text` says something no longer holds: the cheap test before ended_fact parses anything."""
    return bool(_ENDED.search(normalise(text)))


@lru_cache(maxsize=1024)
def _meaning_words(text: str) -> tuple[str, ...]:
    """The words of `text` that carry its meaning, lemmatised in English ("drives" as "drive"), without the words
    that say a fact ended. Cached, as _words: a new fact is compared with each of its nearest facts in turn."""
    text = normalise(text)
    if _CJK_TEXT.search(text):
        tokens = [
            (w, w) for w, flag in chinese_words(text) if w.strip() and not flag.startswith(_FRAME_FLAGS)
        ]
    else:
        tokens = [(word, lemma) for word, lemma, pos in english_lemmas(text) if pos not in _FRAME_POS]
    return tuple(meaning for word, meaning in tokens if word not in _ENDING_WORDS)


def ended_fact(existing: str, new: str) -> bool:
    """Whether `new` says that `existing` no longer holds: "I no longer drive the Honda" after "I drive a Honda
    Civic", "我不再吃肉了" after "我吃肉". `new`, its words of ending left out, says `existing` again word for
    word in order (lemmas; determiners, auxiliaries and measure words aside), at least two words of it, and
    `existing` has at most _MAX_VALUE_WORDS words more (what the ended fact named in full); `existing` says
    nothing ended itself nor denies anything. Both in one language, as changed_value."""
    if bool(_CJK_TEXT.search(existing)) != bool(_CJK_TEXT.search(new)) or new.rstrip().endswith(("?", "？")):
        return False
    if not says_ended(new) or says_ended(existing) or any(w.text in _NEGATIONS for w in _words(existing)):
        return False  # "I no longer eat meat" ends no "I don't eat meat": it says it again
    old_words, new_words = _meaning_words(existing), _meaning_words(new)
    if len(new_words) < 2 or len(old_words) - len(new_words) > _MAX_VALUE_WORDS:
        return False
    remaining = iter(old_words)
    return all(word in remaining for word in new_words)  # a subsequence of the existing fact's words


def changed_value(existing: str, new: str) -> tuple[str, str] | None:
    """(old value, new value) when `new` restates `existing` with one value replaced and says it is a change:
    "I study Korean." then "I study English now." gives ("korean", "english"); "我学韩语。" then "现在我学英语。"
    gives ("韩语", "英语"). None otherwise.

    The general form of the single-valued slots above, for facts no pattern names: the two statements share their
    frame word for word (at least two words and half of each) except for one span of at most _MAX_VALUE_WORDS
    words, which comes after the sentence's first verb or, in Chinese, ends it (so it is what the statement says of
    its subject, not who it is about: "Ana lives in Rome" is no older value of "Tom lives in Rome now"); and `new`
    says it is a change (CHANGE_MARKERS), which `existing` does not. Without the marker two such statements may
    both hold ("I study Korean", "I study English"). Both must be in one language: across languages the words
    cannot be compared."""
    if bool(_CJK_TEXT.search(existing)) != bool(_CJK_TEXT.search(new)) or new.rstrip().endswith(("?", "？")):
        return None
    old_words, new_words = _words(existing), _words(new)
    if not any(w.text in CHANGE_MARKERS for w in new_words) or any(
        w.text in CHANGE_MARKERS for w in old_words
    ):
        return None
    new_words = tuple(w for w in new_words if w.text not in CHANGE_MARKERS)
    matcher = SequenceMatcher(None, [w.text for w in old_words], [w.text for w in new_words], autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(changes) != 1 or changes[0][0] != "replace":
        return None
    _, old_start, old_end, new_start, new_end = changes[0]
    shared = len(old_words) - (old_end - old_start)
    if (
        max(old_end - old_start, new_end - new_start) > _MAX_VALUE_WORDS
        or shared < 2
        or 2 * shared < max(len(old_words), len(new_words))
    ):
        return None
    first_verb = next((i for i, w in enumerate(new_words) if w.verb), len(new_words))
    # jieba tags some verbs as nouns (学 "study"); a Chinese statement (subject, verb, object) that ends on the
    # changed span has it in the object's place all the same.
    in_object_place = bool(_CJK_TEXT.search(new)) and new_end == len(new_words) and new_start > 0
    if new_start <= first_verb and not in_object_place:
        return None
    old_value, new_value = old_words[old_start:old_end], new_words[new_start:new_end]
    if any(w.text in _NEGATIONS or w.verb for w in (*old_value, *new_value)):
        return None
    joiner = "" if _CJK_TEXT.search(new) else " "
    return joiner.join(w.text for w in old_value), joiner.join(w.text for w in new_value)
