"""A simple offline entity extractor and the normalisation that merges entities per user.

Chinese: jieba part-of-speech tags (nr person, ns place, nt/nz organisation or other proper noun). Latin-script
names anywhere (React, Vue.js, Node.js, C++): kept as products or skills in Chinese text, and as capitalised
names in English text. Deliberately conservative: a few precise entities beat a node per token.
"""

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

from core.text import cjk_ratio

_LATIN_NAME = re.compile(r"(?<![A-Za-z0-9.])[A-Za-z][A-Za-z0-9]*(?:[.\-][A-Za-z0-9]+)*(?:\+\+|#)?")
# Technical names in English text: dotted or symbol-suffixed (Vue.js, C++, C#) or inner capitals (JavaScript).
_TECHNICAL_NAME = re.compile(r"[.+#]|[a-z][A-Z]")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of|de|van|von)?\s*[A-Z][\w'’-]*)*")
_POS_TYPES = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "ORG", "ns": "PLACE", "nt": "ORG", "nz": "OTHER"}
_ENGLISH_NOT_NAMES = frozenset(
    "I The A An This That These Those It He She We They You My Our Your His Her Their What When Where Why How "
    "Who Which Yes No Hi Hello Thanks Thank Today Yesterday Tomorrow Monday Tuesday Wednesday Thursday Friday "
    "Saturday Sunday Also But And Or So If Then".split()
)


@dataclass(frozen=True)
class Mention:
    name: str
    entity_type: str

    @property
    def key(self) -> str:
        return entity_key(self.name)


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


def extract_mentions(text: str) -> list[Mention]:
    """Entities named in `text`, first mention first, one per merge key."""
    mentions: list[Mention] = []
    if cjk_ratio(text) > 0:
        for word, flag in _posseg().cut(text):
            entity_type = _POS_TYPES.get(flag)
            if entity_type and len(word) > 1:
                mentions.append(Mention(word, entity_type))
        mentions.extend(Mention(match.group(), "PRODUCT") for match in _LATIN_NAME.finditer(text))
    else:
        for match in _CAPITALISED_RUN.finditer(text):
            if re.match(r"[.+#]\S", text[match.end() : match.end() + 2]):
                continue  # the head of a technical name (Vue.js, C++), taken whole below
            words = [w for w in match.group().split() if w not in _ENGLISH_NOT_NAMES]
            if words:
                mentions.append(Mention(" ".join(words), "CONCEPT"))
        mentions.extend(
            Mention(match.group(), "PRODUCT")
            for match in _LATIN_NAME.finditer(text)
            if _TECHNICAL_NAME.search(match.group())
        )
    seen: set[str] = set()
    unique = []
    for mention in mentions:
        if mention.key and mention.key not in seen:
            seen.add(mention.key)
            unique.append(mention)
    return unique
