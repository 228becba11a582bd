"""The rules every write of a memory follows: its limits, the checks and privacy screening of its fields, the
error a refusal raises, and the session a key names. Each module of memories.actions builds on these.
"""

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from conversations.models import AgentSession
from core import privacy
from core.limits import (
    MAX_CONTENT_CHARS,
    MAX_NAME_CHARS,
    MAX_SHORT_TEXT_CHARS,
    InputRejected,
    check_json,
    check_names,
    check_text,
)
from memories.models import Memory
from memories.types import NAMES

# Dates a memory may carry: the edges of Python's calendar overflow when a type's TTL is added
# or the time is shown in another zone.
EARLIEST_YEAR, LATEST_YEAR = 2, 9998
# A perceptual file's modality, by the prefix of its content type; anything else is "text".
PERCEPTUAL_MODALITIES = {"image": "image/", "audio": "audio/", "video": "video/"}
MAX_SOURCES = 50  # per memory; seen_count keeps counting past it


class MemoryRequestError(InputRejected):
    """A request the memory system refuses; the message says what to change."""


def session_for_key(*, user: User, key: str) -> AgentSession:
    key = check_text(key.strip(), "session_id", MAX_NAME_CHARS)
    if not key:
        raise MemoryRequestError(_("session_id must not be empty"))
    session, _created = AgentSession.objects.get_or_create(user=user, key=key, defaults={"title": key})
    return session


def validate(content: str, memory_type: str, importance: float) -> str:
    if memory_type not in NAMES:
        raise MemoryRequestError(
            _("memory_type must be one of: %(types)s (got %(got)s)")
            % {"types": ", ".join(NAMES), "got": repr(memory_type)}
        )
    if not isinstance(content, str) or not content.strip():
        raise MemoryRequestError(_("content must not be empty"))
    check_text(content, "content", MAX_CONTENT_CHARS)
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        raise MemoryRequestError(
            _("importance must be a number between 0 and 1 (got %(got)s)") % {"got": repr(importance)}
        )
    return content.strip()


def check_detail(fields: dict[str, Any]) -> None:
    """The optional fields of a memory, checked against the same limits on every write path."""
    for name in ("context", "outcome"):
        if fields.get(name) is not None:
            check_text(fields[name], name, MAX_SHORT_TEXT_CHARS)
    for name in ("participants", "tags"):
        if fields.get(name) is not None:
            if not isinstance(fields[name], list):
                raise MemoryRequestError(_("%(name)s must be a list of names") % {"name": name})
            check_names(fields[name], name)
    if fields.get("metadata") is not None:
        if not isinstance(fields["metadata"], dict):
            raise MemoryRequestError(_("metadata must be a JSON object"))
        check_json(fields["metadata"], "metadata")


def screened(
    user: User, content: str, detail: dict[str, Any], metadata: dict[str, Any] | None
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """Secrets and personal data in the text fields and the metadata, masked, kept or refused by the owner's
    privacy settings; what was found is recorded in metadata["privacy"] (kinds and actions, never the values)."""
    fields, found = screened_fields(user, {"content": content, "metadata": metadata, **detail})
    content, metadata = fields.pop("content"), fields.pop("metadata")
    if found:
        metadata = {**(metadata or {}), "privacy": found}
    return content, fields, metadata


SCREENED_TEXT = ("content", "context", "outcome")


def screened_fields(
    user: User, fields: dict[str, Any], subject: str | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`fields` with their text (content, context, outcome) and metadata values screened, and the record of
    what was found. `subject` names what they belong to in a refusal ("the memory" unless told)."""
    subject = subject or _("the memory")
    fields, found = dict(fields), list[dict[str, Any]]()
    for name in SCREENED_TEXT:
        if fields.get(name):
            what = (
                subject
                if name == "content"
                else _("%(subject)s's %(field)s") % {"subject": subject, "field": name}
            )
            screened = privacy.screen_for(user, fields[name], what)
            fields[name], found = screened.text, found + screened.record()
    if fields.get("metadata"):
        metadata, record = privacy.screen_json_for(
            user, fields["metadata"], _("%(subject)s's %(field)s") % {"subject": subject, "field": "metadata"}
        )
        if record:
            fields["metadata"], found = metadata, found + record
    return fields, found


def check_year(moment: datetime | None, name: str) -> None:
    if moment is not None and not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        raise MemoryRequestError(
            _("%(name)s must fall between the years %(earliest)d and %(latest)d (got %(got)d)")
            % {"name": name, "earliest": EARLIEST_YEAR, "latest": LATEST_YEAR, "got": moment.year}
        )


def memory_check(memory: Memory) -> None:
    """A memory made elsewhere (a row of an imported archive) against the rules every write path applies: its
    content, type, importance, episodic detail, metadata and dates."""
    validate(memory.content, memory.memory_type, memory.importance)
    check_detail(
        {name: getattr(memory, name) for name in ("context", "outcome", "participants", "tags", "metadata")}
    )
    for name in ("created_at", "updated_at", "expires_at", "last_accessed_at", "archived_at", "last_seen_at"):
        check_year(getattr(memory, name), name)
    check_year(memory.valid_to, "valid_to")
