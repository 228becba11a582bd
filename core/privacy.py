"""Secrets and personal data in text that is about to be stored: found, then masked, kept or refused.

Two categories, each with its own per-user policy (core.models.PrivacySettings; default: mask secrets, keep
personal data):
- secrets (core.secrets): API keys and tokens (detect-secrets' formats, random-looking tokens), private key
  blocks, URL credentials and a value given to a password's, token's or secret's name, in code, config or prose
  ("db_password=…", "the password for X is …", "X的密码是…"), each found and masked whole;
- personal: phone numbers (Google's libphonenumber, `phonenumbers`, valid numbers only), payment card numbers and
  national ID numbers, among them the Chinese resident ID (身份证号) and the US SSN (checksums by python-stdnum).
Each finding is checked (checksum, number validity), so ordinary numbers, dates and versions are left alone. The
finding's value is never recorded: only its kind and what was done.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_noop

from core.limits import InputRejected
from core.secrets import find_secrets, placeholder
from core.stored_text import Text, joined

SECRET, PERSONAL = "secret", "personal"
MASK, KEEP, REFUSE = "mask", "keep", "refuse"

_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_CN_RESIDENT_ID = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_US_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
PHONE_REGIONS = ("CN", "US", "GB")  # how a number without a country code is read

# English msgids: a refusal names them in a core.stored_text.Text, translated where it is shown.
LABELS = {
    "api_key": gettext_noop("an API key or token"),
    "password": gettext_noop("a password or secret value"),
    "private_key": gettext_noop("a private key"),
    "phone": gettext_noop("a phone number"),
    "card": gettext_noop("a payment card number"),
    "cn_resident_id": gettext_noop("a Chinese resident ID number (身份证号)"),
    "us_ssn": gettext_noop("a US social security number"),
}
NOT_STORED = gettext_noop("%(what)s was not stored: %(reason)s")
REFUSED = gettext_noop("it contains %(kinds)s, which your privacy settings refuse to store")


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


def find(text: str) -> list[Finding]:
    """Every secret and piece of personal data in `text`, first first. A secret is found whole (core.secrets);
    personal data inside a secret is part of the secret."""
    secrets = [Finding(s.kind, SECRET, s.start, s.end) for s in find_secrets(text)]
    personal = [p for p in _personal(text) if not any(s.start < p.end and p.start < s.end for s in secrets)]
    found = sorted(secrets + personal, key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for finding in found:
        if merged and finding.start < merged[-1].end:
            continue  # two readings of one number (a card that is also a phone number)
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
        raise Refused(Text(NOT_STORED, what=what, reason=screened.refused))
    return screened


def screen(text: str, policies: dict[str, str]) -> Screened:
    """Apply the policies ({SECRET: mask|keep|refuse, PERSONAL: …}) to what `find` finds in `text`."""
    findings = find(text)
    refused = sorted(
        {f.kind for f in findings if policies[f.category] == REFUSE}, key=lambda kind: LABELS[kind]
    )
    if refused:
        # English with its message key (core.stored_text): the chat stores it in its "[Not stored: …]" note, a
        # document in its error, and a refusal (core.errors) reads in the request's language.
        reason = Text(REFUSED, kinds=joined(", ", [Text(LABELS[kind]) for kind in refused]))
        return Screened(text, findings, reason, policies)
    masked = text
    for finding in reversed(findings):
        if policies[finding.category] == MASK:
            masked = masked[: finding.start] + placeholder(finding.kind) + masked[finding.end :]
    return Screened(masked, findings, "", policies)


def screen_json_for(user, value: Any, what: str) -> tuple[Any, list[dict]]:
    """Every string inside a JSON value (metadata) screened by the user's policies, its keys kept; returns the
    value to store and the record of what was found. Raises Refused as `screen_for` does."""
    from core.models import PrivacySettings

    policies = PrivacySettings.policies_for(user)
    record: list[dict] = []

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            screened = screen(item, policies)
            if screened.refused:
                raise Refused(Text(NOT_STORED, what=what, reason=screened.refused))
            record.extend(screened.record())
            return screened.text
        if isinstance(item, dict):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        return item

    return walk(value), record


def mask_secrets(text: str) -> Screened:
    """`text` with its secrets masked and nothing else looked for: what a scan of stored text does, and what a
    search's query is logged as."""
    findings = [Finding(s.kind, SECRET, s.start, s.end) for s in find_secrets(text)]
    masked = text
    for finding in reversed(findings):
        masked = masked[: finding.start] + placeholder(finding.kind) + masked[finding.end :]
    return Screened(masked, findings, "", {SECRET: MASK, PERSONAL: KEEP})
