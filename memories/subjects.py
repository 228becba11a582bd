"""Who a memory or a question is about, and how a fact is said back to the user it is about.

- subject(text): SELF for the user ("I …", "My …", "The user …", "我…", "用户…"), a named person (case-folded, as
  memories.facts.Slot.subject), or None when the text names nobody as its subject ("Weekly sync with the team").
- self_name(text): the name a memory gives the user in passing ("用户张三是一名开发者" → 张三).
- acquaintances(text): the people the user names with their relation to the user ("Marco is my colleague",
  "我的姐姐陈静住在成都" → ("Marco", "colleague"), ("陈静", "姐姐")).
- asked_slot(question): the slot a question asks for ("Where do I work?" → ("user", "employer")).
- second_person(fact): a fact about the user said back to them ("The user works at Acme" → "You work at Acme.").

The grammar is the plain grammar of such sentences in English and Chinese, like memories.facts: narrow on
purpose, since a person read where there is none would put a stranger into the user's profile.
"""

import re
from collections.abc import Sequence

from core.text import is_vocabulary_word
from memories.entities import parse_english
from memories.facts import _NAME, _RELATIONS, _ZH_RELATIONS, SELF, _subject, is_chinese_name, slots

# --- names -----------------------------------------------------------------------------------------------------

_ZH_NAME = r"[\u4e00-\u9fff]{2,3}?"
# What follows a Chinese name opening a clause: an adverb, a preposition, a verb of being, or the clause's end.
_ZH_AFTER_NAME = (
    r"(?=[现目已如刚最今昨明前每常也还一在于住家搬的从向是叫去和说做很会正将要]|[，。；！？,.;!?\s]|$)"
)


# --- the subject of a memory -----------------------------------------------------------------------------------

_EN_SELF = re.compile(r"^(?:I|I'm|I've|I'd|I'll|[Mm]y|[Mm]e|[Tt]he user(?:'s)?)\b")
_EN_NAMED = re.compile(rf"^(?P<name>{_NAME})(?:'s)?\s+[a-z]")
_ZH_SELF_START = re.compile(r"^(?:我(?!们)|用户)")
_ZH_NAMED = re.compile(rf"^(?P<name>{_ZH_NAME}){_ZH_AFTER_NAME}|^(?P<latin>{_NAME})(?=\s*[\u4e00-\u9fff])")
_CLAUSE_FILLER = re.compile(
    r"^(?:(?:oh|well|also|so|btw|today|yesterday)\b[,:]?\s*|(?:另外|还有|对了|其实|今天|昨天)[，,]?)+", re.I
)


# Subjects already read, by text: the profile asks for the subject of every fact it shows, on every page view.
_READ: dict[str, str | None] = {}
_READ_LIMIT = 8192


def subject(text: str) -> str | None:
    """Who the text's first sentence is about."""
    return subjects([text])[0]


def subjects(texts: Sequence[str]) -> list[str | None]:
    """subject() of each text; the sentences only spaCy can decide are parsed in one batch."""
    found: dict[str, str | None] = {}
    pending: dict[str, tuple[str, str]] = {}  # text → (its sentence, the name opening it)
    for text in texts:
        if text in found or text in pending:
            continue
        if text in _READ:
            found[text] = _READ.get(text)
            continue
        who, named = _without_parse(text)
        if named is None:
            found[text] = who
        else:
            pending[text] = named
    if pending:
        docs = parse_english([sentence[:300] for sentence, _ in pending.values()])
        for (text, (_, name)), doc in zip(pending.items(), docs, strict=True):
            found[text] = name.casefold() if _is_english_subject(doc, name) else None
    if len(_READ) + len(found) > _READ_LIMIT:
        _READ.clear()
    _READ.update(found)
    return [found[text] for text in texts]


def _without_parse(text: str) -> tuple[str | None, tuple[str, str] | None]:
    """The subject when the grammar alone tells it; else the sentence and the name spaCy must look at."""
    found = slots(text)
    if found:
        return found[0].subject, None
    sentence = _CLAUSE_FILLER.sub("", text.strip())
    if _EN_SELF.match(sentence) or _ZH_SELF_START.match(sentence):
        return SELF, None
    zh = _ZH_NAMED.match(sentence)
    if zh and zh.group("name") and is_chinese_name(zh.group("name")):
        return zh.group("name"), None
    if zh and zh.group("latin"):
        return zh.group("latin").casefold(), None
    en = _EN_NAMED.match(sentence)
    return None, ((sentence, en.group("name")) if en else None)


def _is_english_subject(doc, name: str) -> bool:
    """spaCy's parse: the name's words are the sentence's subject and proper nouns ("Marco presented the
    roadmap", not "Weekly sync with the team"). The small model tags a name it has not seen at a sentence's start
    as a common noun ("Tomasz repaired …"): such a word counts when no common word is spelt so ("Breakfast was
    late" names no one). Its entity labels are no help ("Sigrid" is an ORG to it): whether a name is a company
    is the profile's to tell, from the facts."""
    tokens = [token for token in doc if token.idx < len(name)]
    return (
        bool(tokens)
        and tokens[-1].dep_ in ("nsubj", "nsubjpass")
        and all(
            token.tag_ == "NNP" or (token.tag_ == "NN" and not is_vocabulary_word(token.text))
            for token in tokens
        )
    )


# As memories.facts reads "用户张三是…": the user, named.
_ZH_SELF_NAMED = re.compile(
    r"(?:^|(?<=[，。；！？,.;!?\s]))用户(?P<name>[\u4e00-\u9fff]{2,3})(?=[现目已在住是叫今])"
)
_EN_SELF_NAMED = re.compile(
    rf"\b[Tt]he user(?:,| named| called)? (?P<name>{_NAME}),?\s+(?:is|was|has|works|lives|likes|prefers|speaks)\b"
)


def self_name(text: str) -> str | None:
    """The name a memory calls the user by while stating something else: "用户张三是一名Python开发者"."""
    for named in _ZH_SELF_NAMED.finditer(text):
        if is_chinese_name(named.group("name")):
            return named.group("name")
    match = _EN_SELF_NAMED.search(text)
    return match.group("name") if match else None


# --- the people the user knows ---------------------------------------------------------------------------------

_EN_PEOPLE = {
    *_RELATIONS,
    *"""colleague coworker co-worker teammate friend neighbour neighbor roommate flatmate housemate classmate
    sister brother sibling twin mother mom mum father dad parent son daughter child kid cousin aunt uncle
    grandmother grandma grandfather grandpa niece nephew mentor mentee client tutor teacher doctor dentist
    therapist coach landlord landlady cofounder co-founder assistant""".split(),
    "best friend",
    "close friend",
    "old friend",
    "business partner",
    "direct report",
}
_ZH_PEOPLE = {
    *_ZH_RELATIONS,
    *"""同事 朋友 好朋友 好友 老朋友 闺蜜 邻居 室友 同学 姐姐 妹妹 哥哥 弟弟 妈妈 母亲 爸爸 父亲 儿子 女儿 孩子
    表哥 表姐 表妹 表弟 堂哥 堂姐 叔叔 阿姨 舅舅 姑姑 爷爷 奶奶 外公 外婆 导师 老师 客户 合伙人 医生 教练 房东 下属
    助理""".split(),
}
_EN_PEOPLE_WORDS = "|".join(sorted(map(re.escape, _EN_PEOPLE), key=len, reverse=True))
_ZH_PEOPLE_WORDS = "|".join(sorted(_ZH_PEOPLE, key=len, reverse=True))
_EN_MINE = r"(?:[Mm]y|[Tt]he user's|[Oo]ur)"
_EN_KIND = r"(?:new |current |former |old |younger |older |little |big )?"
_ACQUAINTANCES = [
    # "Marco is my colleague", "Kofi Mensah is the user's manager"
    re.compile(rf"\b(?P<name>{_NAME}) (?:is|was) {_EN_MINE} {_EN_KIND}(?P<relation>{_EN_PEOPLE_WORDS})\b"),
    # "my colleague Marco", "My manager is Kofi", "the user's sister, Ana"
    re.compile(
        rf"\b{_EN_MINE} {_EN_KIND}(?P<relation>{_EN_PEOPLE_WORDS}),? (?:is |was |named |called )?(?P<name>{_NAME})\b"
    ),
    # "Ana, my sister, …"
    re.compile(rf"\b(?P<name>{_NAME}), {_EN_MINE} {_EN_KIND}(?P<relation>{_EN_PEOPLE_WORDS})\b"),
    # "马可是我的同事"
    re.compile(
        rf"(?:^|(?<=[，。；！？,.;!?\s]))(?P<name>[\u4e00-\u9fff]{{2,3}}|{_NAME})(?:现在|也)?是(?:我|用户)的(?:新)?"
        rf"(?P<relation>{_ZH_PEOPLE_WORDS})"
    ),
    # "我的同事马可在谷歌工作", "我的好朋友是刘洋", "用户的妈妈叫王芳"
    re.compile(
        rf"(?:我|用户)的(?:新)?(?P<relation>{_ZH_PEOPLE_WORDS})(?:是|叫|名叫)?\s*(?P<name>{_ZH_NAME}{_ZH_AFTER_NAME}|{_NAME}\b)"
    ),
]


def acquaintances(text: str) -> list[tuple[str, str]]:
    """(name as written, relation) for each person the text relates to the user, in order, once each."""
    found: dict[str, tuple[str, str]] = {}
    for pattern in _ACQUAINTANCES:
        for match in pattern.finditer(text):
            name, relation = match.group("name").strip(), match.group("relation")
            if re.fullmatch(r"[\u4e00-\u9fff]+", name) and not is_chinese_name(name):
                continue
            if name.casefold() in ("i", "the", "my"):
                continue
            found.setdefault(name.casefold(), (name, relation.casefold()))
    return sorted(found.values(), key=lambda item: text.find(item[0]))


# --- what a question asks ------------------------------------------------------------------------------------

_Q_WHO = rf"(?P<who>I|the user|{_NAME})"
_Q_WHOSE = rf"(?P<whose>my|the user's|{_NAME}'s)"
_Q_ZH_WHO = r"(?P<who>我|用户|[\u4e00-\u9fff]{2,3}?|[A-Z][a-z]+)"
_ROLE_WORDS = "job|role|job title|title|position|occupation|profession"
_QUESTIONS = [
    ("employer", rf"\bwhere (?:do|does|did) {_Q_WHO} (?:currently |still |now )?work\b"),
    ("employer", rf"\bwho (?:do|does) {_Q_WHO} (?:currently |now )?work for\b"),
    ("employer", rf"\bwhere (?:am|is) {_Q_WHO} (?:currently |now )?(?:working|employed)\b"),
    ("employer", rf"\bwhat (?:company|firm|organi[sz]ation) (?:do|does) {_Q_WHO} work (?:at|for)\b"),
    ("employer", rf"\b(?:what|who|which)(?:'s| is) {_Q_WHOSE} (?:employer|company)\b"),
    ("home", rf"\bwhere (?:do|does) {_Q_WHO} (?:currently |now )?live\b"),
    ("home", rf"\bwhere (?:am|is) {_Q_WHO} (?:living|based)\b"),
    ("home", rf"\bwhat (?:city|town|country) (?:do|does) {_Q_WHO} live in\b"),
    ("home", rf"\bwhere(?:'s| is) {_Q_WHOSE} home\b"),
    ("name", rf"\bwhat(?:'s| is) {_Q_WHOSE} (?:full )?name\b"),
    ("name", r"\bwhat (?:am (?P<who>I)|is (?P<who2>the user)) called\b"),
    ("age", rf"\bhow old (?:am|is) {_Q_WHO}\b"),
    ("age", rf"\bwhat(?:'s| is) {_Q_WHOSE} age\b"),
    ("role", rf"\bwhat (?:do|does) {_Q_WHO} do(?: for (?:a living|work))?\b"),
    ("role", rf"\bwhat (?:do|does) {_Q_WHO} work as\b"),
    ("role", rf"\bwhat(?:'s| is) {_Q_WHOSE} (?:{_ROLE_WORDS})\b"),
    ("manager", rf"\bwho (?:do|does) {_Q_WHO} report to\b"),
    ("school", rf"\bwhere (?:do|does) {_Q_WHO} study\b"),
    ("speaks:", rf"\bwhat languages? (?:do|does|can) {_Q_WHO} speak\b"),
    ("favourite", rf"\bwhat(?:'s| is) {_Q_WHOSE} fav(?:ou)?rite (?P<kind>[a-z]+(?: [a-z]+)?)\b"),
    ("attribute", rf"\b(?:what|who)(?:'s| is) {_Q_WHOSE} (?P<kind>[a-z]+(?: [a-z]+)?)\s*\?*$"),
    (
        "employer",
        rf"^{_Q_ZH_WHO}(?:现在|目前)?在(?:哪|哪里|哪儿|什么地方|哪家公司|什么公司)(?:工作|上班|任职|就职)",
    ),
    ("employer", rf"^{_Q_ZH_WHO}(?:现在|目前)?(?:就职于|任职于|供职于)(?:哪|什么)"),
    ("employer", rf"^{_Q_ZH_WHO}的(?:公司|雇主|单位)是(?:哪|什么)"),
    ("home", rf"^{_Q_ZH_WHO}(?:现在|目前)?住(?:在)?(?:哪|哪里|哪儿|什么地方)"),
    ("home", rf"^{_Q_ZH_WHO}的?家(?:住)?在(?:哪|哪里|哪儿)"),
    ("name", r"^(?P<who>我|用户)叫什么"),
    ("name", rf"^{_Q_ZH_WHO}的名字(?:是|叫)什么"),
    ("age", rf"^{_Q_ZH_WHO}(?:今年)?(?:多大|几岁|多少岁)"),
    ("role", rf"^{_Q_ZH_WHO}(?:现在|目前)?(?:是)?(?:做什么|干什么)(?:工作|的)"),
    ("role", rf"^{_Q_ZH_WHO}的(?:工作|职业|职位|岗位)是什么"),
    ("manager", rf"^{_Q_ZH_WHO}(?:直接)?向谁汇报"),
    ("speaks:", rf"^{_Q_ZH_WHO}会(?:说|讲)(?:哪些|什么|几种)语言"),
    ("favourite", rf"^{_Q_ZH_WHO}最喜欢的(?P<kind>[\u4e00-\u9fff]{{1,4}})是什么"),
    ("attribute", rf"^{_Q_ZH_WHO}的(?P<kind>[\u4e00-\u9fff]{{1,4}})是(?:谁|什么|哪)"),
]
_QUESTION_PATTERNS = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _QUESTIONS]
_QUESTION_FILLER = re.compile(
    r"^(?:(?:hey|hi|so|and|ok|okay|remind me|tell me|do you know|do you remember)\b[,:]?\s*"
    r"|(?:请问|你知道|你还记得|告诉我|那|那么)[，,]?\s*)+",
    re.IGNORECASE,
)
# "Who is my X?", "我的X是谁": X names an attribute the facts read under another name.
_ATTRIBUTE_NAMES = {
    **_RELATIONS,
    **_ZH_RELATIONS,
    "employer": "employer",
    "company": "employer",
    "home": "home",
    "hometown": "home",
    "name": "name",
    "full name": "name",
    "age": "age",
    **dict.fromkeys(_ROLE_WORDS.split("|"), "role"),
    "名字": "name",
    "公司": "employer",
    "工作": "role",
    "职业": "role",
    "年龄": "age",
}


def asked_slot(question: str) -> tuple[str, str] | None:
    """(subject, attribute) that a question asks for; an attribute ending in ":" names a family of slots
    ("speaks:" for every language). None when the question asks for no single fact."""
    text = _QUESTION_FILLER.sub("", question.strip())
    for kind, pattern in _QUESTION_PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        groups = match.groupdict()
        who = groups.get("who") or groups.get("who2") or groups.get("whose")
        if who and re.fullmatch(r"[\u4e00-\u9fff]+", who) and who not in ("我", "用户"):
            if not is_chinese_name(who):
                continue
        attribute = kind
        if kind == "favourite":
            attribute = f"favourite:{groups['kind'].casefold()}"
        elif kind == "attribute":
            named = groups["kind"].casefold()
            attribute = _ATTRIBUTE_NAMES.get(named) or f"attribute:{named}"
        subject = _subject(who)
        if subject == "third person":
            return None
        return subject, attribute
    return None


# --- saying a fact back ------------------------------------------------------------------------------------------

_EN_SECOND_PERSON = [
    (re.compile(r"\b(?:[Tt]he user|I)(?: is|'m| am)\b"), "you are"),
    (re.compile(r"\b(?:[Tt]he user|I) was\b"), "you were"),
    (re.compile(r"\b(?:[Tt]he user has|I have|I've)\b"), "you have"),
    (re.compile(r"\b(?:[Tt]he user does|I do)\b"), "you do"),
    (re.compile(r"\b[Tt]he user (?:doesn't|does not)\b"), "you don't"),
    (re.compile(r"\b[Tt]he user (?:isn't|is not)\b"), "you aren't"),
    (re.compile(r"\b[Tt]he user (?:hasn't|has not)\b"), "you haven't"),
    (re.compile(r"\b[Tt]he user's\b|\b[Mm]y\b"), "your"),
    (re.compile(r"\bmyself\b"), "yourself"),
]
_EN_USER_VERB = re.compile(
    r"\b(?:[Tt]he user|I) ((?:also |still |now |really |usually |often |always |never )?)([a-z]+)\b"
)


def _base_form(verb: str) -> str:
    """The verb after "you" for one said of "the user": works → work, studies → study, watches → watch."""
    if re.search(r"[^aeiou]ies$", verb):
        return verb[:-3] + "y"
    if re.search(r"(?:ss|sh|ch|x|z|o)es$", verb):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb[:-1]
    return verb


def second_person(fact: str) -> str:
    """A fact about the user as a sentence to them: "The user works at Acme" → "You work at Acme.",
    "用户在上海做数据分析" → "你在上海做数据分析。"."""
    text = fact.strip()
    if re.search(r"[\u4e00-\u9fff]", text):
        text = re.sub(r"^用户名叫", "你叫", text)
        text = re.sub(r"用户(?:[\u4e00-\u9fff]{2,3}(?=[现目已在住是叫今]))?", "你", text)
        text = text.replace("我们", "你们").replace("我", "你")
        return text if text.endswith(("。", "！", "？", ".", "!", "?")) else text + "。"
    for pattern, replacement in _EN_SECOND_PERSON:
        text = pattern.sub(replacement, text)

    def verb(match: re.Match) -> str:
        adverb, word = match.group(1), match.group(2)
        said = match.group(0)
        return f"you {adverb}{_base_form(word) if said[0] in 'Tt' else word}"

    text = _EN_USER_VERB.sub(verb, text)
    text = re.sub(r"\b[Tt]he user\b", "you", text)
    text = re.sub(r"(?<![\w'])me\b", "you", text)
    text = text[0].upper() + text[1:] if text else text
    return text if text.endswith((".", "!", "?")) else text + "."
