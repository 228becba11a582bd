"""Reads about a memory's life, for its detail page and the dashboard: where it came from (provenance), every
time a search returned it (retrievals), which versions its edit history can restore and how an edit reads, and
the memories retrieved most and least. Writes (restoring a version) are in memories.actions.edit."""

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.utils.dateparse import parse_datetime

from conversations.models import ChatMessage
from core.models import ApiKey
from knowledge.models import Document
from memories.actions.edit import RESTORABLE_FIELDS
from memories.models import Memory, MemoryAccess, MemoryEdit

RETRIEVALS_PER_PAGE = 25
DASHBOARD_RETRIEVED = 5


@dataclass(frozen=True)
class Source:
    """One write of a memory: when, through which route, and the key, chat message or document it came from.
    An id whose row is gone (a deleted key or document) is kept as `*_id` with the object left None."""

    at: datetime | None
    via: str
    api_key_id: int | None = None
    api_key: ApiKey | None = None
    message_id: str | None = None
    message: ChatMessage | None = None
    document_id: str | None = None
    document: Document | None = None
    editor: User | None = None  # who wrote it on a page: a staff member, when it is another user's memory


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def provenance(memory: Memory) -> list[Source]:
    """The memory's sources, oldest first, with their keys, messages, documents and the staff member who wrote
    one on the owner's pages (core.acting), in four queries at most; only the owner's keys, messages and
    documents are looked up, so a forged id in `sources` names nothing of another user's."""
    entries = [entry for entry in memory.sources if isinstance(entry, dict)]
    if not entries and (memory.source_message_id or memory.source_document_id):
        # Written before sources were recorded: the foreign keys still say where it came from.
        entries = [
            {
                "via": "",
                "at": memory.created_at.isoformat(),
                "message": str(memory.source_message_id or ""),
                "document": str(memory.source_document_id or ""),
            }
        ]
    key_ids = {entry["api_key"] for entry in entries if isinstance(entry.get("api_key"), int)}
    message_ids = {_uuid(entry["message"]) for entry in entries if entry.get("message")} - {None}
    document_ids = {_uuid(entry["document"]) for entry in entries if entry.get("document")} - {None}
    keys = ApiKey.objects.filter(user_id=memory.user_id).in_bulk(key_ids) if key_ids else {}
    messages = (
        ChatMessage.objects.filter(session__user_id=memory.user_id)
        .select_related("session")
        .in_bulk(message_ids)
        if message_ids
        else {}
    )
    documents = Document.objects.filter(user_id=memory.user_id).in_bulk(document_ids) if document_ids else {}
    editor_ids = {entry["editor"] for entry in entries if isinstance(entry.get("editor"), int)}
    editors = User.objects.in_bulk(editor_ids) if editor_ids else {}
    sources = []
    for entry in entries:
        key_id = entry.get("api_key") if isinstance(entry.get("api_key"), int) else None
        message_id, document_id = _uuid(entry.get("message") or ""), _uuid(entry.get("document") or "")
        at = entry.get("at")
        sources.append(
            Source(
                at=parse_datetime(at) if isinstance(at, str) else None,
                via=str(entry.get("via") or ""),
                api_key_id=key_id,
                api_key=keys.get(key_id),
                message_id=str(message_id) if message_id else None,
                message=messages.get(message_id),
                document_id=str(document_id) if document_id else None,
                document=documents.get(document_id),
                editor=editors.get(entry.get("editor")),
            )
        )
    return sources


def retrievals(memory: Memory, page_number: str | None) -> Page:
    """Every search that returned the memory, newest first, a page at a time: who, which key or session,
    the query, the rank and the score."""
    accesses = (
        MemoryAccess.objects.filter(memory=memory, user_id=memory.user_id)
        .select_related("user", "api_key", "session")
        .order_by("-created_at", "-id")
    )
    return Paginator(accesses, RETRIEVALS_PER_PAGE).get_page(page_number)


def restorable(edit: MemoryEdit) -> bool:
    """True when the edit changed a field a restore can set back (not only archiving or a repeat count)."""
    return isinstance(edit.changes, dict) and any(name in RESTORABLE_FIELDS for name in edit.changes)


def most_and_least_retrieved(
    user: User, limit: int = DASHBOARD_RETRIEVED
) -> tuple[list[Memory], list[Memory]]:
    """The current memories searches returned most often, and those returned least (never, first; the oldest
    of equals first, as they have had the longest to be found). Each list is one walk of the
    (user, access_count, created_at) index, in one direction or the other, that stops at `limit` rows."""
    memories = Memory.objects.for_user(user).current()
    most = list(memories.filter(access_count__gt=0).order_by("-access_count", "-created_at")[:limit])
    least = list(memories.exclude(pk__in=[m.pk for m in most]).order_by("access_count", "created_at")[:limit])
    return most, least


def change_rows(changes: object) -> list[tuple[str, str, str]]:
    """(field, old, new) rows of an edit record, which stores {"field": [old, new]}."""
    if not isinstance(changes, dict):
        return [("?", "—", _shown(changes))]
    rows = []
    for field, pair in sorted(changes.items()):
        old, new = pair if isinstance(pair, list) and len(pair) == 2 else (None, pair)
        rows.append((str(field), _shown(old), _shown(new)))
    return rows


def _shown(value: object) -> str:
    """An edit record's value as text: strings as they are, lists and dicts as JSON, nothing as a dash."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
