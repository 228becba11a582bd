"""Secrets in free text, each found whole: where it starts and where it ends, so a mask leaves none of it visible.

A secret shows itself in four ways, each read by a general mechanism:
- a known key format: detect-secrets' regex plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, JWT, …) and the
  few forms it lacks (newer OpenAI keys, bearer tokens);
- a value given to a secret's name, in code or config (`db_password=…`, `export PGPASSWORD='…'`,
  `"api_key": "…"`, `if (secret == "…")`) or in prose, in several languages ("the password for X is V",
  "X的密码是V", "das Passwort für X ist V");
- the password of a URL's credentials (`scheme://user:password@host`, where the password may hold '@' or ':');
- a long random-looking token (mixed letters and digits of high Shannon entropy), named or not.
A match is then widened to what it is part of: a key format knows a key's prefix and usual length, but the key
goes on to the next separator; a named value runs to its closing quote, for a config line (`KEY: value`) to the
end of the line, in prose to the end of its word. A mask left by an earlier, partial masking (text glued to a
`[kind masked]` placeholder) is found too, so a scan can finish the job; a whole placeholder is never a secret.

Nothing here was fitted to one evaluation set's text: bench/secrets_eval.py measures it on secret scanners'
fixtures and on ordinary text (the entropy thresholds in core.secret_text were chosen on its dev half).
"""

import re
import string
from dataclasses import dataclass
from functools import cache

from core.secret_text import API_KEY, ENTROPY_MIN_LENGTH, PASSWORD, PRIVATE_KEY, is_cjk, is_random, widen_key
from core.secret_values import named_values

_PRIORITY = {PRIVATE_KEY: 0, API_KEY: 1, PASSWORD: 2}  # which kind names a span two findings share

# What a mask leaves in stored text: "[password masked]", "[phone masked]" (core.privacy masks with it).
PLACEHOLDER = re.compile(r"\[(?:api_key|password|private_key|phone|card|cn_resident_id|us_ssn) masked\]")


def placeholder(kind: str) -> str:
    """What a masked finding of `kind` reads as in stored text."""
    return f"[{kind} masked]"


def without_masks(text: str) -> str:
    """`text` with its mask placeholders blanked: a mask names no entity and is no search term."""
    return PLACEHOLDER.sub(" ", text) if "masked]" in text else text


@dataclass(frozen=True)
class SecretSpan:
    kind: str  # API_KEY, PASSWORD or PRIVATE_KEY
    start: int
    end: int


def find_secrets(text: str) -> list[SecretSpan]:
    """Every secret in `text`, first first, overlapping and touching findings joined into one span."""
    placeholders = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)]
    found = [
        span
        for span in [*_private_keys(text), *_formats(text), *_named_values(text), *_url_credentials(text)]
        + _random_tokens(text)
        if span.end > span.start and not any(s < span.end and span.start < e for s, e in placeholders)
    ]
    found += _residue(text, placeholders)
    found.sort(key=lambda s: (s.start, -s.end))
    merged: list[SecretSpan] = []
    for span in found:
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, span.kind, key=_PRIORITY.__getitem__)
            merged[-1] = SecretSpan(kind, last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged


# --- key formats ---------------------------------------------------------------------------------------------


@cache
def _format_patterns() -> list[tuple[str, re.Pattern]]:
    """detect-secrets' format detectors (its regex plugins), public IP addresses left out: not a secret."""
    import importlib
    import inspect
    import pkgutil

    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    patterns = []
    for module_info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, RegexBasedDetector)
                and value.__module__ == module.__name__
                and not inspect.isabstract(value)
                and value.__name__ not in ("IPPublicDetector", "PrivateKeyDetector")
            ):
                kind = PASSWORD if value.__name__ == "BasicAuthDetector" else API_KEY
                patterns += [(kind, pattern) for pattern in value().denylist]
    # Forms detect-secrets does not know yet: current OpenAI/Anthropic keys, and a token after its scheme.
    patterns += [
        (API_KEY, re.compile(r"(?<![A-Za-z0-9_-])sk-(?:[a-z]+-)?[A-Za-z0-9_-]{20,}")),
        (API_KEY, re.compile(r"(?<![A-Za-z0-9_-])(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/=-]{16,})")),
    ]
    return patterns


# Format patterns read a long text in overlapping windows: some are quadratic on a long line (detect-secrets'
# npm pattern, `//.+/:_authToken`, took 14 s on 100,000 characters of "x://"). A key cut at a window's edge is
# found whole all the same: every match is widened to its whole key in the full text.
_WINDOW, _OVERLAP = 2048, 256


def _formats(text: str) -> list[SecretSpan]:
    spans = []
    for offset in range(0, max(len(text) - _OVERLAP, 1), _WINDOW - _OVERLAP):
        window = text[offset : offset + _WINDOW]
        for kind, pattern in _format_patterns():
            for match in pattern.finditer(window):
                start, end = _matched_value(match)
                spans.append(SecretSpan(kind, *widen_key(text, offset + start, offset + end)))
    return spans


def _matched_value(match: re.Match) -> tuple[int, int]:
    """The secret inside a detector's match: its longest group when the pattern names the value after a key
    (`cloudant_pw='…'`, a URL's password), else the match without the delimiters some patterns take in."""
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    longest = max(groups, key=lambda i: len(match.group(i)), default=None)
    if longest is not None and match.start(longest) > match.start(0):
        start, end = match.span(longest)
    else:
        start, end = match.span()
    value = match.string[start:end]
    stripped = value.strip(" \t\r\n=:\"'`")
    start += len(value) - len(value.lstrip(" \t\r\n=:\"'`"))
    return start, start + len(stripped)


_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*?(?:Private-MAC:\s*\S+|\Z)",
    re.DOTALL,
)


def _private_keys(text: str) -> list[SecretSpan]:
    return [SecretSpan(PRIVATE_KEY, m.start(), m.end()) for m in _PRIVATE_KEY.finditer(text)]


# --- URL credentials ---------------------------------------------------------------------------------------

# The password of scheme://user:password@host: it runs to the '@' that starts the host, so a password holding
# '@' or ':' ("S3cr3tP@ssw0rd") is taken whole; the host ends the URL's authority. The scheme may follow CJK text
# directly ("连接串是postgres://…"), where `\b` sees no word boundary.
_URL_CREDENTIALS = re.compile(
    r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@?#\"'<>]*):(?P<password>[^\s\"'<>]+?)"
    r"@(?=[a-z0-9\[][a-z0-9.\-\[\]:]*(?:[/?#\s\"'<>),;]|$))"
)
# A token as the user of a URL (https://TOKEN@host), and curl's `-u user:password`.
_URL_TOKEN = re.compile(r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<token>[A-Za-z0-9_\-.~]{16,})@")
_CLI_USER = re.compile(r"(?:^|\s)(?:-u|--user)[\s=]+(?P<credentials>[\"']?[^\s:\"']*:[^\s]+)")


def _url_credentials(text: str) -> list[SecretSpan]:
    spans = []
    for match in _URL_CREDENTIALS.finditer(text):
        user = match.group("user")
        # A generated user name is a key half ("cafeb4b3:…"); a person's or a role's ("admin") stays readable.
        generated = len(user) >= 8 and (
            any(c.isdigit() for c in user)
            and any(c.isalpha() for c in user)
            or all(c in string.hexdigits for c in user)
        )
        spans.append(
            SecretSpan(PASSWORD, match.start("user" if generated else "password"), match.end("password"))
        )
    # curl's -u takes user and password as one credential, as gitleaks reads it.
    spans += [SecretSpan(PASSWORD, *_unquoted(match, "credentials")) for match in _CLI_USER.finditer(text)]
    spans += [
        SecretSpan(API_KEY, *m.span("token"))
        for m in _URL_TOKEN.finditer(text)
        if is_random(m.group("token"))
    ]
    return spans


def _unquoted(match: re.Match, group: str) -> tuple[int, int]:
    start, end = match.span(group)
    value = match.group(group)
    return start + len(value) - len(value.lstrip("\"'")), end - len(value) + len(value.rstrip("\"'"))


# --- random-looking tokens -----------------------------------------------------------------------------------

# A run of key characters; '=' only as padding at its end, so `NAME=value` is two runs.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-+/.~%|]+={0,3}")
_PATH_LIKE = re.compile(r"/|[\w-]+(?:\.[\w-]+)+/")
_SCHEME_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,20}:$")


def _random_tokens(text: str) -> list[SecretSpan]:
    """Long random-looking tokens: keys whose format no detector knows. A path or an address (a run opening with
    '/' or a domain) is judged part by part, and a link holding a key is a key as a whole (a webhook's URL); a
    part made of words joined by '-' is a link's readable name, not a key."""
    spans = []
    for match in _TOKEN_RUN.finditer(text):
        token = match.group()
        if len(token) < ENTROPY_MIN_LENGTH:
            continue
        if not _PATH_LIKE.match(token):
            if is_random(token.strip(".")):
                spans.append(SecretSpan(API_KEY, *widen_key(text, *match.span())))
            continue
        parts = [p for p in re.split(r"[/.?&=#]", token) if len(p) >= ENTROPY_MIN_LENGTH]
        if any(is_random(part) and not _slug(part) for part in parts):
            scheme = _SCHEME_BEFORE.search(text, max(0, match.start() - 22), match.start())
            start = scheme.start() if scheme else match.start()
            spans.append(SecretSpan(API_KEY, start, match.end() - len(token) + len(token.rstrip("."))))
    return spans


def _slug(part: str) -> bool:
    """Words joined by '-' or '_' ("70-historique-de-la-bcrg"): a page's readable name in a link."""
    words = re.split(r"[-_]", part)
    return len(words) >= 3 and sum(w.isalpha() and w.islower() for w in words) >= len(words) - 1


# --- what an earlier partial mask left --------------------------------------------------------------------------

_RESIDUE_STOP = frozenset(" \t\r\n\"'`=:@,;()[]{}<>")


def _residue(text: str, placeholders: list[tuple[int, int]]) -> list[SecretSpan]:
    """A secret placeholder with text glued to it (`[api_key masked]I1JEzO3jo`, `postgres[api_key masked]ssw0rd`):
    what an earlier masking left of a secret it took only part of. The glued characters are masked with it."""
    spans = []
    for start, end in placeholders:
        kind = text[start + 1 : end].split()[0]
        if kind not in _PRIORITY:
            continue
        left, right = start, end
        while left > 0 and text[left - 1] not in _RESIDUE_STOP and not is_cjk(text[left - 1]):
            left -= 1
        while right < len(text) and text[right] not in _RESIDUE_STOP and not is_cjk(text[right]):
            right += 1
        while right > end and text[right - 1] in ".!?" and (right == len(text) or text[right].isspace()):
            right -= 1  # the sentence's own end, after a whole mask
        if (left, right) != (start, end):
            spans.append(SecretSpan(kind, left, right))
    return spans


def _named_values(text: str) -> list[SecretSpan]:
    return [SecretSpan(PASSWORD, start, end) for start, end in named_values(text)]
