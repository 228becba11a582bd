"""What secrets are made of, shared by core.secrets and core.secret_values: the kinds of secret, where a token
or a value written as one word ends, and whether a token looks random."""

import re
from functools import cache

API_KEY, PASSWORD, PRIVATE_KEY = "api_key", "password", "private_key"

# A random-looking token: at least this long, a digit among letters, and this many bits per character
# (chosen on the dev half of bench/secrets_eval.py: gitleaks' fixtures and the dev ordinary texts).
ENTROPY_MIN_LENGTH = 20
ENTROPY_BITS = 4.0
# Without a digit, only a longer token of more entropy whose letters change case often.
MIXED_CASE_MIN_LENGTH = 24
MIXED_CASE_BITS = 4.3

# What a key (base64, url-safe base64, hex, prefixes with _ or -) is made of.
KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~%|")
QUOTES = "\"'`"
_HEX = re.compile(r"[0-9a-f\-]+|[0-9A-F\-]+")
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def is_cjk(char: str) -> bool:
    """Ideographs, kana, hangul and the CJK and full-width punctuation: none is part of a Latin token."""
    code = ord(char)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFE30 <= code <= 0xFE4F
        or 0xFF00 <= code <= 0xFFEF
        or code >= 0x20000
        or char in "…—“”‘’"
    )


def word_end(text: str, start: int) -> int:
    """Where a value written as one word ends: at a space, a quote, or CJK text after a Latin value ("密码是abc，");
    a trailing comma or semicolon, and brackets closed but not opened inside the value, are not part of it."""
    end = start
    while end < len(text) and not text[end].isspace() and text[end] not in QUOTES and not is_cjk(text[end]):
        end += 1
    while end > start and (text[end - 1] in ",;" or _unbalanced_closer(text[start:end])):
        end -= 1
    return end


def _unbalanced_closer(value: str) -> bool:
    last = value[-1]
    return last in _CLOSERS and value.count(last) > value.count(_CLOSERS[last])


def widen_key(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole key a match sits in: a detector's pattern knows a key's prefix and usual length, but a longer key
    (Stripe's run to 107 characters) goes on to the next separator; '=' only pads a key's end."""
    while start > 0 and text[start - 1] in KEY_CHARS and text[start - 1] != "=":
        start -= 1
    while end < len(text) and text[end] in KEY_CHARS:
        end += 1
    while end > start + 1 and text[end - 1] in ".|" and (end == len(text) or text[end].isspace()):
        end -= 1  # the full stop of the sentence the key ends
    return start, end


def is_random(token: str, min_length: int = ENTROPY_MIN_LENGTH) -> bool:
    """How a generated key looks: long, of high entropy, with a digit among its letters, or without one when
    lower and upper case are mixed throughout ("hf_jCBaQngSHiHDRYOcsMcif…"). Hexadecimal in one case is not
    (commit ids, checksums and UUIDs are everyday text)."""
    if len(token) < min_length or "://" in token or _HEX.fullmatch(token):
        return False
    if not any(c.isalpha() for c in token):
        return False
    bits = entropy(token)
    if any(c.isdigit() for c in token):
        return bits >= ENTROPY_BITS
    return (
        len(token) >= MIXED_CASE_MIN_LENGTH
        and bits >= MIXED_CASE_BITS
        and _case_changes(token) >= len(token) / 4
    )


def _case_changes(token: str) -> int:
    """How often a letter's case differs from the letter before it: words in CamelCase change at their starts
    only; random letters about every other letter."""
    letters = [c.isupper() for c in token if c.isalpha()]
    return sum(a != b for a, b in zip(letters, letters[1:], strict=False))


def entropy(token: str) -> float:
    """Shannon entropy in bits per character, as detect-secrets' high-entropy plugin computes it."""
    return _entropy_plugin().calculate_shannon_entropy(token) if token else 0.0


@cache
def _entropy_plugin():
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    plugin = Base64HighEntropyString()
    # Its charset is base64's; a token's url-safe characters ('-', '_', '.', '~') count as well.
    plugin.charset = "".join(sorted(KEY_CHARS))
    return plugin
