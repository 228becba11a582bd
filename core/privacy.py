"""Secrets and personal data in text that is about to be stored: found, then masked, kept or refused.

Two categories, each with its own per-user policy (core.models.PrivacySettings; default: mask secrets, keep
personal data):
- secrets: API keys and tokens in the formats detect-secrets knows (its regex plugins: AWS, GitHub, GitLab, Slack,
  Stripe, OpenAI, JWT, private key blocks, …) and a value given as a password, token, secret or key
  ("password: hunter2", "密码是 abc123");
- personal: phone numbers (Google's libphonenumber, `phonenumbers`, valid numbers only), payment card numbers and
  national ID numbers, among them the Chinese resident ID (身份证号) and the US SSN (checksums by python-stdnum).
Each finding is checked (checksum, number validity), so ordinary numbers, dates and versions are left alone. The
finding's value is never recorded: only its kind and what was done.
"""

import re
from dataclasses import dataclass, field
from functools import cache

from core.limits import InputRejected

SECRET, PERSONAL = "secret", "personal"
MASK, KEEP, REFUSE = "mask", "keep", "refuse"

# "password: x", "api key = x", "token is x", "密码是x", "密钥：x": the value that follows.
_ASSIGNED = re.compile(
    r"(?i)\b(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[ _-]?key|access[ _-]?key|private[ _-]?key|pin)"
    r"(?:\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{4,})"
    # "my password is hunter2": after "is", only a value with a digit or symbol ("is strong" is no password)
    r"|\s+(?:is|was)\s+[\"']?(?P<said>(?=[^\s\"',;]*[\d\W_])[^\s\"',;.]{4,}))"
    r"|(?:密码|口令|密钥|令牌|验证码)(?:是|为|:|：|=)\s*(?P<zh_value>[^\s，。,;；]{4,})"
)
# Key formats detect-secrets does not know yet: current OpenAI/Anthropic keys and bearer tokens.
_KEY_FORMATS = [
    re.compile(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}"),
]
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_CN_RESIDENT_ID = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_US_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
PHONE_REGIONS = ("CN", "US", "GB")  # how a number without a country code is read

LABELS = {
    "api_key": "an API key or token",
    "password": "a password or secret value",
    "private_key": "a private key",
    "phone": "a phone number",
    "card": "a payment card number",
    "cn_resident_id": "a Chinese resident ID number (身份证号)",
    "us_ssn": "a US social security number",
}
# What a masked finding leaves in the text ("[api_key masked]"): see screen(). No entity, no fact is read in it.
MASKED = re.compile(r"\[(?:" + "|".join(LABELS) + r") masked\]")


@dataclass(frozen=True)
class Finding:
    kind: str  # a key of LABELS
    category: str  # SECRET or PERSONAL
    start: int
    end: int


@dataclass
class Screened:
    """The text to store and what was found in it; `refused` says why nothing may be stored."""

    text: str
    findings: list[Finding] = field(default_factory=list)
    refused: str = ""
    policies: dict[str, str] = field(default_factory=dict)

    def record(self) -> list[dict]:
        """What was found and done, for the stored row (never the values)."""
        return [
            {"kind": f.kind, "category": f.category, "action": self.policies[f.category]}
            for f in self.findings
        ]


@cache
def _token_patterns() -> list[tuple[str, re.Pattern]]:
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
                and value.__name__ != "IPPublicDetector"
            ):
                kind = "private_key" if value.__name__ == "PrivateKeyDetector" else "api_key"
                patterns += [(kind, pattern) for pattern in value().denylist]
    return patterns


def find(text: str) -> list[Finding]:
    """Every secret and piece of personal data in `text`, first first, overlaps merged."""
    found: list[Finding] = []
    for kind, pattern in _token_patterns():
        found += [Finding(kind, SECRET, m.start(), m.end()) for m in pattern.finditer(text)]
    for pattern in _KEY_FORMATS:
        found += [Finding("api_key", SECRET, m.start(), m.end()) for m in pattern.finditer(text)]
    for match in _ASSIGNED.finditer(text):
        group = next(name for name in ("value", "said", "zh_value") if match.group(name))
        found.append(Finding("password", SECRET, match.start(group), match.end(group)))
    found += _personal(text)
    found.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for finding in found:
        if merged and finding.start < merged[-1].end:
            continue  # inside one already found (a key inside "api_key=…")
        merged.append(finding)
    return merged


def _personal(text: str) -> list[Finding]:
    import phonenumbers
    from stdnum import luhn
    from stdnum.cn import ric
    from stdnum.us import ssn

    found = []
    for match in _CN_RESIDENT_ID.finditer(text):
        if ric.is_valid(match.group()):
            found.append(Finding("cn_resident_id", PERSONAL, match.start(), match.end()))
    for match in _US_SSN.finditer(text):
        if ssn.is_valid(match.group()):
            found.append(Finding("us_ssn", PERSONAL, match.start(), match.end()))
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn.is_valid(digits) and not ric.is_valid(match.group()):
            found.append(Finding("card", PERSONAL, match.start(), match.end()))
    for region in PHONE_REGIONS:
        for phone in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            found.append(Finding("phone", PERSONAL, phone.start, phone.end))
    return found


class Refused(InputRejected):
    """The text holds what the owner's privacy settings refuse to store; the message says what."""


def screen_for(user, text: str, what: str) -> Screened:
    """`screen` with the user's own policies; raises Refused, naming `what` ("content", "the message"…)."""
    from core.models import PrivacySettings

    screened = screen(text, PrivacySettings.policies_for(user))
    if screened.refused:
        raise Refused(f"{what} was not stored: {screened.refused}")
    return screened


def screen(text: str, policies: dict[str, str]) -> Screened:
    """Apply the policies ({SECRET: mask|keep|refuse, PERSONAL: …}) to what `find` finds in `text`."""
    findings = find(text)
    refused = sorted({LABELS[f.kind] for f in findings if policies[f.category] == REFUSE})
    if refused:
        reason = f"it contains {', '.join(refused)}, which your privacy settings refuse to store"
        return Screened(text, findings, reason, policies)
    masked = text
    for finding in reversed(findings):
        if policies[finding.category] == MASK:
            masked = masked[: finding.start] + f"[{finding.kind} masked]" + masked[finding.end :]
    return Screened(masked, findings, "", policies)
