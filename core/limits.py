"""How much of each input Mnemo accepts, and which characters it stores: one rule for every write path.

Every cap bounds the work one request can cause (search and entity extraction grow with their text) and is
named in the message of the error that enforces it. Text a person or an agent writes is refused rather than
silently changed: a lone surrogate cannot be encoded for the database or a JSON answer, and PostgreSQL rejects
NUL, so either would store on one backend and fail on another, or fail every later read. Other control
characters (C0 but tab, newline and return; DEL; the C1 block with U+0085 NEL) and the line and paragraph
separators U+2028/U+2029 are refused too: line-oriented readers (Python's str.splitlines among them) break a
line at them, and an export read that way once failed on every memory that held one. Text Mnemo extracts
itself (a converted document) is cleaned by the same rule instead (`clean_text`).
"""

import json
import math
import re
import unicodedata
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
# A text the RAG tool adds as a document (a JSON body's 10 MiB bounds it too).
MAX_DOCUMENT_TEXT_CHARS = 5_000_000

# The characters refused in text, as (first, last) code points: C0 controls except tab, newline and carriage
# return; DEL and the C1 controls; the line and paragraph separators. Lone UTF-16 surrogates are refused too.
REFUSED_RANGES = ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F), (0x2028, 0x2029))
_SURROGATES = (0xD800, 0xDFFF)
_UNSAFE = re.compile(
    "[" + "".join(f"\\u{first:04x}-\\u{last:04x}" for first, last in (*REFUSED_RANGES, _SURROGATES)) + "]"
)
# The same rule as an ECMA 262 pattern for the API schema. Unpaired surrogates cannot be said in a pattern (and
# JSON text in UTF-8 cannot carry them anyway).
STORABLE_PATTERN = "^[^" + "".join(f"\\u{first:04x}-\\u{last:04x}" for first, last in REFUSED_RANGES) + "]*$"
STORABLE_RULE = "No control characters but tab, newline and carriage return, and no U+2028/U+2029 separators."
# What clean_text puts in place of a refused line break; every other refused character is dropped.
_LINE_BREAKS = {"\x0b": "\n", "\x0c": "\n\n", "\x85": "\n", "\u2028": "\n", "\u2029": "\n\n"}


def _(message: str) -> str:
    """gettext, imported only when a refusal is worded: knowledge.pipeline imports this module without Django."""
    from django.utils.translation import gettext

    return gettext(message)


class InputRejected(RequestRefused):
    """Input over a cap or with characters Mnemo does not store; the message names the field and the rule."""


def check_text(value: str, name: str, max_chars: int) -> str:
    """`value` unchanged when it is within `max_chars` and holds only storable characters."""
    if len(value) > max_chars:
        raise InputRejected(
            _("%(name)s is %(length)s characters long; the limit is %(limit)s")
            % {"name": name, "length": f"{len(value):,}", "limit": f"{max_chars:,}"}
        )
    bad = _UNSAFE.search(value)
    if bad:
        char = bad.group()
        described = unicodedata.name(char, "") or _("a control character or unpaired surrogate")
        hint = _("; use \\n for a line break") if char in _LINE_BREAKS else ""
        raise InputRejected(
            _(
                "%(name)s contains the character %(code)s (%(described)s) at position %(position)d: control "
                "characters, line and paragraph separators, NUL and unpaired surrogates are not accepted"
            )
            % {"name": name, "code": f"U+{ord(char):04X}", "described": described, "position": bad.start()}
            + hint
        )
    return value


def clean_text(value: str) -> str:
    """`value` with the characters check_text refuses taken out, line and page breaks among them made newlines:
    for text Mnemo extracts itself (a converted file), where nobody is there to be told."""
    return _UNSAFE.sub(lambda match: _LINE_BREAKS.get(match.group(), ""), value)


def check_names(values: list[Any], name: str) -> list[str]:
    """A list of short names (participants, tags)."""
    if len(values) > MAX_LIST_ITEMS:
        raise InputRejected(
            _("%(name)s has %(count)d items; the limit is %(limit)d")
            % {"name": name, "count": len(values), "limit": MAX_LIST_ITEMS}
        )
    for position, value in enumerate(values):
        if not isinstance(value, str):
            raise InputRejected(_("%(name)s must be a string") % {"name": f"{name}[{position}]"})
        check_text(value, f"{name}[{position}]", MAX_NAME_CHARS)
    return values


def check_json(value: Any, name: str, max_bytes: int = MAX_METADATA_BYTES) -> Any:
    """A JSON object of bounded size and depth whose keys and strings are storable text."""
    _check_json_strings(value, name, depth=0)
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > max_bytes:
        raise InputRejected(
            _("%(name)s is %(size)s bytes as JSON; the limit is %(limit)s")
            % {"name": name, "size": f"{size:,}", "limit": f"{max_bytes:,}"}
        )
    return value


def _check_json_strings(value: Any, path: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InputRejected(
            _("%(name)s nests deeper than %(limit)d levels") % {"name": path, "limit": MAX_METADATA_DEPTH}
        )
    if isinstance(value, str):
        check_text(value, path, MAX_CONTENT_CHARS)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), _("a key of %(name)s") % {"name": path}, MAX_NAME_CHARS)
            _check_json_strings(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            _check_json_strings(item, f"{path}[{position}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputRejected(_("%(name)s is not a finite number") % {"name": path})
