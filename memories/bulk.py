"""Bulk curation from the memory browser: one action over many memories of one user, and its undo.

Each action is a service: atomic, keyword-only, scoped to `user` (another user's ids change nothing), recording a
MemoryEdit per changed memory and mirroring the vectors once for the whole batch after the commit — one embedding
call for a thousand rows instead of a thousand calls. Each returns an `Undo`: what the action changed, as JSON the
browser's session can hold, which `bulk_undo` puts back through the same services.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core import serializers
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from conversations.models import AgentSession, ChatMessage
from core.files import files_kept
from core.limits import InputRejected
from core.models import MirrorState
from core.stored_text import Text, joined, key_of, shown, stored
from knowledge.models import Document
from memories import curation, mirror
from memories.actions.edit import index_facts, memory_update
from memories.actions.forgetting import memories_delete
from memories.entity_links import link_entities
from memories.models import EditVia, Memory, MemoryEdit
from memories.types import NAMES

MAX_BULK = 1000  # memories one action may change: past this the request would hold the database for seconds
MAX_TAGS = 20
MAX_TAG_LENGTH = 50
ACTIONS = {
    "archive": gettext_lazy("Archive"),
    "restore": gettext_lazy("Restore"),
    "delete": gettext_lazy("Delete"),
    "set_type": gettext_lazy("Change type to…"),
    "set_importance": gettext_lazy("Set importance to…"),
    "add_tags": gettext_lazy("Add tags…"),
    "remove_tags": gettext_lazy("Remove tags…"),
}
FIELD_ACTIONS = ("archive", "restore", "set_importance", "add_tags", "remove_tags")


class BulkError(InputRejected):
    """Input a bulk action cannot take; the message is shown to the user as it is."""


@dataclass
class Undo:
    """What one bulk action changed: `kind` says how to put it back, `data` is JSON."""

    kind: str  # "fields" ({pk: {field: old}}), "types" ({pk: old type}) or "delete" (a serialized snapshot)
    # "Archived 12 memories", shown beside the Undo button: a core.stored_text.Text, kept in the session with its
    # key, and shown in the page's language (shown_label).
    label: str
    data: Any = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"kind": self.kind, "label": self.label, "label_key": key_of(self.label), "data": self.data}

    @classmethod
    def from_json(cls, value: object) -> Undo | None:
        if not isinstance(value, dict) or value.get("kind") not in ("fields", "types", "delete"):
            return None
        label = stored(str(value.get("label", "")), value.get("label_key"))
        return cls(value["kind"], label, value.get("data"))


def shown_label(record: dict) -> str:
    """A session's undo record's label in the active language."""
    return shown(str(record.get("label", "")), record.get("label_key"))


def _plural(count: int) -> Text:
    words = gettext_noop("%(count)s memory") if count == 1 else gettext_noop("%(count)s memories")
    return Text(words, count=f"{count:,}")


def parse_value(action: str, raw: str) -> Any:
    """The action's argument from the form, checked; raises BulkError with a readable message."""
    raw = (raw or "").strip()
    if action not in ACTIONS:
        raise BulkError(_("Choose an action for the selected memories."))
    if action == "set_type":
        if raw not in NAMES:
            raise BulkError(_("Choose a memory type: %(items)s.") % {"items": ", ".join(NAMES)})
        return raw
    if action == "set_importance":
        try:
            value = float(raw)
        except ValueError:
            raise BulkError(_("Importance must be a number between 0 and 1.")) from None
        if not 0 <= value <= 1:
            raise BulkError(_("Importance must be between 0 and 1 (got %(raw)s).") % {"raw": raw})
        return value
    if action in ("add_tags", "remove_tags"):
        tags = list(dict.fromkeys(tag.strip() for tag in raw.split(",") if tag.strip()))
        if not tags:
            raise BulkError(_("Give one or more tags, separated by commas."))
        if len(tags) > MAX_TAGS or any(len(tag) > MAX_TAG_LENGTH for tag in tags):
            raise BulkError(
                _("At most %(max_tags)s tags of at most %(max_tag_length)s characters each.")
                % {"max_tags": MAX_TAGS, "max_tag_length": MAX_TAG_LENGTH}
            )
        return tags
    return None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _new_values(memory: Memory, action: str, value: Any, now: datetime) -> dict[str, Any]:
    if action == "archive":
        return {} if memory.archived_at else {"archived_at": now}
    if action == "restore":
        return {"archived_at": None} if memory.archived_at else {}
    if action == "set_importance":
        return {} if memory.importance == value else {"importance": value}
    tags = list(memory.tags) if isinstance(memory.tags, list) else []
    if action == "add_tags":
        new = tags + [tag for tag in value if tag not in tags]
    else:
        new = [tag for tag in tags if tag not in value]
    return {} if new == tags else {"tags": new}


def _stored(name: str, value: Any) -> Any:
    """A field's value as JSON (datetimes as ISO text), for the edit record and the undo."""
    return _iso(value) if name == "archived_at" else value


def _loaded(name: str, value: Any) -> Any:
    return parse_datetime(value) if name == "archived_at" and value else value


@transaction.atomic
def memories_set_fields(
    *, user: User, values: dict[Any, dict[str, Any]], editor: User | None, via: str
) -> dict[str, dict[str, Any]]:
    """Set archived_at, importance or tags per memory ({pk: {field: value}}) of `user`'s memories; record an
    edit for each changed memory; mirror them once. Returns the old values of what changed, as JSON."""
    memories = Memory.objects.select_for_update().filter(user=user, pk__in=list(values))
    now = timezone.now()
    changed, edits, before = [], [], {}
    for memory in memories:
        diff = {}
        for name, new in values[memory.pk if memory.pk in values else str(memory.pk)].items():
            if name not in ("archived_at", "importance", "tags"):
                raise BulkError(_("A bulk action cannot change %(name)s.") % {"name": name})
            old = getattr(memory, name)
            if old != new:
                diff[name] = [_stored(name, old), _stored(name, new)]
                setattr(memory, name, new)
        if not diff:
            continue
        memory.mirror_state = MirrorState.PENDING
        memory.updated_at = now
        changed.append(memory)
        edits.append(MemoryEdit(memory=memory, editor=editor, via=via, changes=diff, created_at=now))
        before[str(memory.pk)] = {name: pair[0] for name, pair in diff.items()}
    fields = sorted({name for pks in before.values() for name in pks})
    # bulk_update sends no save signal; the explicit mirror below is the one that syncs these rows.
    Memory.objects.bulk_update(changed, [*fields, "mirror_state", "updated_at"], batch_size=500)
    MemoryEdit.objects.bulk_create(edits)
    mirror.enqueue(before)
    return before


def memories_set_type(
    *, user: User, memory_types: dict[Any, str], editor: User | None, via: str
) -> dict[str, str]:
    """Change each memory's type through memory_update, which also resets the working-memory TTL, re-indexes
    facts and re-links entities. Returns the old type of each changed memory."""
    before = {}
    with transaction.atomic():
        for memory in Memory.objects.filter(user=user, pk__in=list(memory_types)):
            new = memory_types.get(memory.pk) or memory_types.get(str(memory.pk))
            if new and new != memory.memory_type:
                before[str(memory.pk)] = memory.memory_type
                memory_update(memory=memory, via=via, editor=editor, memory_type=new)
    return before


def _snapshot(user: User, ids: list[Any]) -> list[dict]:
    """The rows as JSON-ready dicts. Not the "json" serializer: it cuts datetimes to milliseconds, and the
    browser's keyset pages order by created_at to the microsecond."""
    memories = list(Memory.objects.filter(user=user, pk__in=ids))
    edits = list(MemoryEdit.objects.filter(memory__in=memories))
    rows = serializers.serialize("python", [*memories, *edits])
    return json.loads(
        json.dumps(rows, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))
    )


@transaction.atomic
def memories_undelete(*, user: User, snapshot: list[dict], editor: User | None) -> int:
    """Put deleted memories back from a `_snapshot` with their ids, content and edit history; entities are
    linked again by extraction, facts re-indexed, and the vectors mirrored. Rows whose id exists again are left
    alone; links to sessions, messages, documents or memories deleted since are dropped."""
    objects = list(serializers.deserialize("python", snapshot))
    memories = [o.object for o in objects if isinstance(o.object, Memory) and o.object.user_id == user.pk]
    existing = set(Memory.objects.filter(pk__in=[m.pk for m in memories]).values_list("pk", flat=True))
    memories = [m for m in memories if m.pk not in existing]
    restored = {m.pk for m in memories}
    alive = {
        "session_id": set(
            AgentSession.objects.filter(pk__in=[m.session_id for m in memories]).values_list("pk", flat=True)
        ),
        "source_message_id": set(
            ChatMessage.objects.filter(pk__in=[m.source_message_id for m in memories]).values_list(
                "pk", flat=True
            )
        ),
        "source_document_id": set(
            Document.objects.filter(pk__in=[m.source_document_id for m in memories]).values_list(
                "pk", flat=True
            )
        ),
        "superseded_by_id": restored
        | set(
            Memory.objects.filter(pk__in=[m.superseded_by_id for m in memories]).values_list("pk", flat=True)
        ),
    }
    for memory in memories:
        for name, ids in alive.items():
            if getattr(memory, name) is not None and getattr(memory, name) not in ids:
                setattr(memory, name, None)
        if memory.file.name and not memory.file.storage.exists(memory.file.name):
            memory.file = (
                ""  # kept for the undo, then swept as an orphan (core.files): the row comes back alone
            )
        memory.mirror_state = MirrorState.PENDING
    # Rows that name each other (superseded_by) go in first without the link, then get it back.
    links = {m.pk: m.superseded_by_id for m in memories}
    for memory in memories:
        memory.superseded_by_id = None
    Memory.objects.bulk_create(memories)
    for memory in memories:
        memory.superseded_by_id = links[memory.pk]
    Memory.objects.bulk_update([m for m in memories if m.superseded_by_id], ["superseded_by"])
    edits = [o.object for o in objects if isinstance(o.object, MemoryEdit) and o.object.memory_id in restored]
    for edit in edits:
        edit.pk = None
    now = timezone.now()
    edits += [
        MemoryEdit(
            memory=m,
            editor=editor,
            via=EditVia.PAGE,
            changes={"deleted": [True, False]},
            reason=Text(gettext_noop("Undo of a bulk delete.")),
            created_at=now,
        )
        for m in memories
    ]
    MemoryEdit.objects.bulk_create(edits)
    index_facts(curation.Curator(user), memories)
    for memory in memories:
        if memory.policy.links_entities:
            link_entities(memory)
    mirror.enqueue([m.pk for m in memories])
    return len(memories)


def _done(action: str, value: Any) -> Text:
    if action == "set_type":
        return Text(
            gettext_noop("Changed to %(type)s"), type=Text(value)
        )  # a memory type's label is its value
    if action == "set_importance":
        return Text(gettext_noop("Set importance %(value)s on"), value=f"{value:.2f}")
    if action == "add_tags":
        return Text(gettext_noop("Tagged %(tags)s on"), tags=", ".join(value))
    if action == "remove_tags":
        return Text(gettext_noop("Removed tags %(tags)s from"), tags=", ".join(value))
    done = {
        "archive": gettext_noop("Archived"),
        "restore": gettext_noop("Restored"),
        "delete": gettext_noop("Deleted"),
    }
    return Text(done[action])


def bulk_apply(
    *, user: User, memory_ids: list[Any], action: str, value: Any, editor: User | None
) -> tuple[int, Undo]:
    """Run one checked action (see parse_value) over `user`'s memories among `memory_ids`."""
    if not memory_ids:
        raise BulkError(_("Select at least one memory first."))
    if len(memory_ids) > MAX_BULK:
        raise BulkError(
            _(
                "%(count)s memories selected; one bulk action takes at most %(limit)s. Narrow the filter and try "
                "again."
            )
            % {"count": f"{len(memory_ids):,}", "limit": f"{MAX_BULK:,}"}
        )
    memories = Memory.objects.filter(user=user, pk__in=memory_ids)
    done = _done(action, value)
    if action == "delete":
        snapshot = _snapshot(user, memory_ids)
        with files_kept():  # the Undo puts the rows back with their files; the orphan sweep takes the rest
            count = memories_delete(user=user, memory_ids=memory_ids)
        return count, Undo("delete", joined(" ", [done, _plural(count)]), snapshot)
    if action == "set_type":
        before_types = memories_set_type(
            user=user, memory_types={pk: value for pk in memory_ids}, editor=editor, via=EditVia.PAGE
        )
        return len(before_types), Undo(
            "types", joined(": ", [done, _plural(len(before_types))]), before_types
        )
    now = timezone.now()
    values = {memory.pk: _new_values(memory, action, value, now) for memory in memories}
    before = memories_set_fields(user=user, values=values, editor=editor, via=EditVia.PAGE)
    return len(before), Undo("fields", joined(" ", [done, _plural(len(before))]), before)


def bulk_undo(*, user: User, undo: Undo, editor: User | None) -> int:
    """Put back what one bulk action changed, through the same services (so the undo is itself recorded)."""
    if undo.kind == "delete":
        return memories_undelete(user=user, snapshot=undo.data, editor=editor)
    if undo.kind == "types":
        return len(memories_set_type(user=user, memory_types=undo.data, editor=editor, via=EditVia.PAGE))
    values = {
        pk: {name: _loaded(name, old) for name, old in fields.items()} for pk, fields in undo.data.items()
    }
    return len(memories_set_fields(user=user, values=values, editor=editor, via=EditVia.PAGE))
