"""Secrets already stored in a user's memories, their edit history, chat messages and search log, masked whole.

Text written before secrets were found whole may hold one, or the part an earlier mask left of one
(`[api_key masked]I1JEzO3jo…`). A memory is changed through `memory_update`, like any edit: its history records
the change, its entities are linked again (an entity named by a secret loses its last mention and goes) and its
mirrors are written again. The history keeps no secret either: each recorded value is masked in place. Chat
messages and the search log mirror nowhere and are changed in place.

Each function returns what it found, as a Counter of (where, kind) → secrets, and with `dry_run` changes nothing.
"""

import logging
from collections import Counter
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext_noop

from conversations.models import ChatMessage
from core import privacy
from core.limits import InputRejected
from core.stored_text import Text
from memories.actions.edit import memory_update
from memories.models import EditVia, Memory, MemoryAccess, MemoryEdit

MEMORIES, METADATA, HISTORY, CHAT, SEARCH_LOG = (
    "memories",
    "memory metadata",
    "edit history",
    "chat messages",
    "search log",
)
SCAN_REASON = Text(gettext_noop("secrets masked by a scan"))
logger = logging.getLogger(__name__)


def mask_json(value: Any) -> tuple[Any, list[privacy.Finding]]:
    """Every string inside a JSON value with its secrets masked (keys kept), and the secrets found."""
    if isinstance(value, str):
        masked = privacy.mask_secrets(value)
        return masked.text, masked.findings
    found: list[privacy.Finding] = []
    if isinstance(value, dict):
        result = {}
        for key, inner in value.items():
            result[key], inner_found = mask_json(inner)
            found += inner_found
        return result, found
    if isinstance(value, list):
        items = []
        for inner in value:
            masked_item, inner_found = mask_json(inner)
            items.append(masked_item)
            found += inner_found
        return items, found
    return value, found


def _tally(counts: Counter, where: str, findings: list[privacy.Finding]) -> None:
    for finding in findings:
        counts[(where, finding.kind)] += 1


def memories_mask_secrets(*, user: User, editor: User | None, dry_run: bool) -> Counter:
    """Mask the secrets in `user`'s memories (text fields and metadata) and in their edit history. A memory
    the change cannot be stored for is counted under (MEMORIES, "not changed") with the others left done."""
    counts = _history_mask_secrets(user=user, dry_run=dry_run)
    for memory in Memory.objects.filter(user=user).order_by("created_at").iterator(chunk_size=500):
        changes: dict[str, Any] = {}
        found: list[privacy.Finding] = []
        for name in ("content", "context", "outcome"):
            masked = privacy.mask_secrets(getattr(memory, name))
            if masked.findings:
                changes[name] = masked.text
                _tally(counts, MEMORIES, masked.findings)
                found += masked.findings
        metadata, in_metadata = mask_json(memory.metadata)
        if in_metadata:
            changes["metadata"] = metadata
            _tally(counts, METADATA, in_metadata)
            found += in_metadata
        if changes and not dry_run:
            metadata = changes.get("metadata", memory.metadata)
            earlier = metadata.get("privacy") if isinstance(metadata.get("privacy"), list) else []
            record = [{"kind": f.kind, "category": f.category, "action": privacy.MASK} for f in found]
            changes["metadata"] = {**metadata, "privacy": [*earlier, *record]}
            try:
                _update(memory, editor, changes)
            except InputRejected as exc:
                logger.warning("memory %s: secrets not masked: %s", memory.pk, exc)
                counts[(MEMORIES, "not changed")] += 1
    return counts


@transaction.atomic
def _update(memory: Memory, editor: User | None, changes: dict[str, Any]) -> None:
    """The edit, then its own record's old values masked: the history keeps that the memory was changed, and
    by whom, but not the secret."""
    memory_update(memory=memory, via=EditVia.SYSTEM, editor=editor, reason=SCAN_REASON, **changes)
    edit = memory.edits.order_by("-created_at", "-pk").first()
    if edit is not None:
        masked, _ = mask_json(edit.changes)
        MemoryEdit.objects.filter(pk=edit.pk).update(changes=masked)


def _history_mask_secrets(*, user: User, dry_run: bool) -> Counter:
    counts: Counter = Counter()
    edits = MemoryEdit.objects.filter(memory__user=user).order_by("pk")
    for edit in edits.iterator(chunk_size=500):
        changes, found = mask_json(edit.changes)
        if found:
            _tally(counts, HISTORY, found)
            if not dry_run:
                MemoryEdit.objects.filter(pk=edit.pk).update(changes=changes)
    return counts


def chat_mask_secrets(*, user: User, dry_run: bool) -> Counter:
    """Mask the secrets in `user`'s chat messages (their text and the tool calls they record)."""
    counts: Counter = Counter()
    messages = ChatMessage.objects.filter(session__user=user).order_by("created_at", "pk")
    for message in messages.iterator(chunk_size=500):
        masked = privacy.mask_secrets(message.content)
        tool_calls, found = mask_json(message.tool_calls)
        _tally(counts, CHAT, masked.findings + found)
        if (masked.findings or found) and not dry_run:
            ChatMessage.objects.filter(pk=message.pk).update(content=masked.text, tool_calls=tool_calls)
    return counts


def search_log_mask_secrets(*, user: User, dry_run: bool) -> Counter:
    """Mask the secrets in the queries of `user`'s search log."""
    counts: Counter = Counter()
    accesses = MemoryAccess.objects.filter(user=user).exclude(query="").order_by("pk")
    for access in accesses.only("pk", "query").iterator(chunk_size=2000):
        masked = privacy.mask_secrets(access.query)
        if masked.findings:
            _tally(counts, SEARCH_LOG, masked.findings)
            if not dry_run:
                MemoryAccess.objects.filter(pk=access.pk).update(query=masked.text)
    return counts
