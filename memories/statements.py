"""Facts stated in a chat message: the lasting things a message says about its author, each rewritten as a
third-person statement of its own, for the chat to keep as semantic memories (agents.agent). Which of them are
single-valued facts (one employer, one home, ...) is memories.facts'; this module adds the other lasting
statements (what the speaker has, owns, keeps, is, can do or usually does) and the rewriting.
"""

import re

from memories.entities import english_pipeline
from memories.facts import slots

# Statements about the speaker that hold beyond the conversation, besides the single-valued facts above: what
# they have, own, keep, are, can do or usually do.
_EN_STATEMENT = re.compile(
    r"^(?:i|my)\b(?!.*\b(?:today|tonight|tomorrow|yesterday|right now|just now)\b)", re.IGNORECASE
)
_ZH_STATEMENT = re.compile(
    r"^(?:我|用户)(?!.*(?:今天|今晚|明天|昨天|刚才|现在想|想问|请问|帮我|能不能|可以吗))"
)
_EN_REQUEST = re.compile(
    r"^(?:i(?:'d| would) like|i want you|i need you|i wonder|i think|i guess|i hope|i'm not sure|i don't know)\b",
    re.IGNORECASE,
)
_LEADING_FILLER = re.compile(
    r"^(?:(?:oh|well|also|and|so|btw|by the way|anyway|hi|hello|hey|ok|okay|(?:please )?remember(?: that)?"
    r"|don't forget(?: that)?|note that|fyi)\b[,:!]?\s*"
    r"|(?:另外|还有|对了|哦|嗯|其实|顺便说一下|顺便说|你好|请记住|记住|别忘了)[，,:：！!]?\s*)+",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"(?<=[，,;；])\s*(?=(?:我|I\b|I'|My\b|my\b))|\s+and\s+(?=(?:I\b|I'|my\b))")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])\s*")


def statements(text: str) -> list[str]:
    """The lasting facts a message states about its author, each as a third-person statement of its own:
    "我叫小明，我在上海做数据分析" → ["用户名叫小明", "用户在上海做数据分析"], "I also have a cat named Mochi"
    → ["The user has a cat named Mochi"]. Questions, requests and small talk state none."""
    found = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if not sentence or sentence.rstrip().endswith(("?", "？")):
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = _LEADING_FILLER.sub("", clause.strip().rstrip("，,;；.。!！ ")).strip()
            if len(clause) < 3 or _EN_REQUEST.match(clause):
                continue
            if slots(clause) or _EN_STATEMENT.match(clause) or _ZH_STATEMENT.match(clause):
                statement = third_person(clause)
                if statement not in found:
                    found.append(statement)
    return found


_ADVERBS = "also|still|now|really|usually|often|always|never|just|currently"
# "I" and what follows it: the forms of be/have/will, or an optional adverb and a verb (not a contraction).
_EN_SUBJECT_VERB = re.compile(
    rf"\bI(?:'m| am)\b|\bI(?:'ve| have)\b|\bI(?:'ll| will)\b|\bI'd\b|\bI was\b"
    rf"|\bI (?:(?:{_ADVERBS}) )?(?!(?:{_ADVERBS})\b)([a-z]+)\b(?!')"
)
_MODALS = {"can", "could", "should", "would", "must", "may", "might", "shall", "will", "did"}


def _third_person_verb(verb: str) -> str:
    if verb in _MODALS:
        return verb
    if verb in ("have", "do"):
        return {"have": "has", "do": "does"}[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(clause: str) -> str:
    """A first-person clause about the user in the third person ("I have" → "The user has", "我的" → "用户的")."""
    if re.search(r"[\u4e00-\u9fff]", clause):
        clause = re.sub(r"^我叫", "用户名叫", clause)
        return clause.replace("我们", "\0").replace("我", "用户").replace("\0", "我们")

    def subject(match: re.Match[str]) -> str:
        said = match.group(0)
        lowered = said.lower()
        if lowered.startswith(("i'm", "i am")):
            return "the user is"
        if lowered.startswith(("i've", "i have")):
            return "the user has"
        if lowered.startswith(("i'll", "i will")):
            return "the user will"
        if lowered.startswith("i'd"):
            return "the user would"
        if lowered.startswith("i was"):
            return "the user was"
        verb = match.group(1)
        adverb = said[2 : len(said) - len(verb)] if verb else ""
        # Only a present-tense verb takes the third person's -s ("I moved" stays "moved"): spaCy's tagger says.
        inflected = _third_person_verb(verb) if match.start(1) in present else verb
        return f"the user {adverb}{inflected}"

    present = {token.idx for token in english_pipeline()(clause) if token.tag_ == "VBP"}
    clause = re.sub(r"\bI (?:do not|don't)\b", "the user doesn't", clause)
    clause = re.sub(
        r"\bI (didn't|can't|cannot|won't|couldn't|wouldn't|shouldn't|never|no longer)\b",
        r"the user \1",
        clause,
    )
    clause = _EN_SUBJECT_VERB.sub(subject, clause)
    clause = re.sub(r"\b[Mm]y\b", "the user's", clause)
    clause = re.sub(r"\bme\b", "the user", clause)
    clause = re.sub(r"\bmyself\b", "themselves", clause)
    clause = re.sub(r"^the user (?:also )?", "The user ", clause)
    return clause[0].upper() + clause[1:] if clause else clause
