"""How much of each input Mnemo accepts, and which characters it stores: one rule for every write path.

Every cap bounds the work one request can cause (search and entity extraction grow with their text) and is
named in the message of the error that enforces it. Text is refused rather than silently changed: a lone
surrogate cannot be encoded for the database or a JSON answer, and PostgreSQL rejects NUL, so either would
store on one backend and fail on another, or fail every later read.
"""

import json
import math
import re
from typing import Any

from core.errors import RequestRefused

MAX_CONTENT_CHARS = 100_000
MAX_QUERY_CHARS = 2_000
MAX_SHORT_TEXT_CHARS = 2_000  # episodic context and outcome, titles, descriptions
MAX_NAME_CHARS = 200  # a participant, a tag, a session id
MAX_LIST_ITEMS = 100
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 5
MAX_CHAT_MESSAGE_CHARS = 8_000
MAX_CHAT_MESSAGES = 200
MAX_CHAT_TOTAL_CHARS = 100_000

# C0 controls except tab, newline and carriage return; DEL; lone UTF-16 surrogates.
_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class InputRejected(RequestRefused):
    """Input over a cap or with characters Mnemo does not store; the message names the field and the rule."""


def check_text(value: str, name: str, max_chars: int) -> str:
    """`value` unchanged when it is within `max_chars` and holds only storable characters."""
    if len(value) > max_chars:
        raise InputRejected(f"{name} is {len(value):,} characters long; the limit is {max_chars:,}")
    bad = _UNSAFE.search(value)
    if bad:
        raise InputRejected(
            f"{name} contains the character U+{ord(bad.group()):04X} at position {bad.start()}: "
            "control characters, NUL and unpaired surrogates are not accepted"
        )
    return value


def check_names(values: list[Any], name: str) -> list[str]:
    """A list of short names (participants, tags)."""
    if len(values) > MAX_LIST_ITEMS:
        raise InputRejected(f"{name} has {len(values)} items; the limit is {MAX_LIST_ITEMS}")
    for position, value in enumerate(values):
        if not isinstance(value, str):
            raise InputRejected(f"{name}[{position}] must be a string")
        check_text(value, f"{name}[{position}]", MAX_NAME_CHARS)
    return values


def check_json(value: Any, name: str, max_bytes: int = MAX_METADATA_BYTES) -> Any:
    """A JSON object of bounded size and depth whose keys and strings are storable text."""
    _check_json_strings(value, name, depth=0)
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > max_bytes:
        raise InputRejected(f"{name} is {size:,} bytes as JSON; the limit is {max_bytes:,}")
    return value


def _check_json_strings(value: Any, path: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InputRejected(f"{path} nests deeper than {MAX_METADATA_DEPTH} levels")
    if isinstance(value, str):
        check_text(value, path, MAX_CONTENT_CHARS)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), f"a key of {path}", MAX_NAME_CHARS)
            _check_json_strings(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            _check_json_strings(item, f"{path}[{position}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputRejected(f"{path} is not a finite number")
