"""Changing memories already stored: an edit of their fields (recorded, field by field, in their history), a restore
of an earlier version, archiving, folding a repeat into the memory it repeats, and superseding a fact by a newer
one or making it current again.
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from conversations.models import AgentSession
from core.models import ApiKey, MirrorState
from core.stored_text import Text
from core.text import count_tokens
from memories import curation
from memories.actions.rules import (
    MAX_SOURCES,
    SCREENED_TEXT,
    MemoryRequestError,
    check_detail,
    check_year,
    screened_fields,
    session_for_key,
    validate,
)
from memories.entity_links import link_entities
from memories.mirror import save_unmirrored
from memories.models import Fact, Memory, MemoryEdit

EDITABLE_FIELDS = (
    "content",
    "importance",
    "memory_type",
    "metadata",
    "context",
    "outcome",
    "participants",
    "tags",
    "session",
    "expires_at",
)
# What an edit record may restore: the editable fields as they were, session by key and dates as ISO text.
RESTORABLE_FIELDS = EDITABLE_FIELDS
# Reasons are stored in English with their message keys (core.stored_text): the history shows them translated.
RESTORED_BY_HAND = Text(gettext_noop("restored by hand"))


@transaction.atomic
def memory_update(
    *,
    memory: Memory,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    reason: str = "",
    **changes: Any,
) -> Memory:
    """Change fields of a memory and keep an edit record of each field's old and new value (a session by its
    key, a date as ISO text, so the record stays readable JSON after the session is gone)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise MemoryRequestError(
            _("cannot change %(fields)s; editable: %(editable)s")
            % {"fields": ", ".join(sorted(unknown)), "editable": ", ".join(EDITABLE_FIELDS)}
        )
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    content = changes.get("content", memory.content)
    memory_type = changes.get("memory_type", memory.memory_type)
    importance = changes.get("importance", memory.importance)
    changes["content"] = validate(content, memory_type, importance)
    check_detail(changes)
    check_year(changes.get("expires_at"), "expires_at")
    given = {
        name: value
        for name, value in changes.items()
        if name in (*SCREENED_TEXT, "metadata") and value != getattr(memory, name)
    }
    screened, found = screened_fields(memory.user, given, _("the edit"))
    changes.update(screened)
    if found:
        changes["metadata"] = {**changes.get("metadata", memory.metadata), "privacy": found}
    diff = {
        field: [_recorded(getattr(memory, field)), _recorded(value)]
        for field, value in changes.items()
        if getattr(memory, field) != value
    }
    if not diff:
        return memory
    for name in diff:
        setattr(memory, name, changes[name])
    if "content" in diff:
        memory.token_count = count_tokens(memory.content)
    if "memory_type" in diff and "expires_at" not in changes:
        ttl = memory.policy.ttl
        memory.expires_at = timezone.now() + ttl if ttl is not None else None
    memory.mirror_state = MirrorState.PENDING
    memory.save()  # the save signal puts it in the mirror outbox
    MemoryEdit.objects.create(
        memory=memory, editor=editor, api_key=api_key, via=via, changes=diff, reason=reason
    )
    if "content" in diff or memory.policy.links_entities and "memory_type" in diff:
        link_entities(memory)
    if "content" in diff or "memory_type" in diff:
        memory.facts.all().delete()  # what it states changed: index it again
        curate_edit(memory, via=via, editor=editor, api_key=api_key)
    return memory


def curate_edit(memory: Memory, *, via: str, editor: User | None, api_key: ApiKey | None) -> None:
    """An edit runs the checks an add runs (memories.curation, its offline rules: the model's merged wording
    would edit a second memory): a new value supersedes the current fact, and a text that now repeats another
    current memory is folded into that one (memory_fold: archived here, counted there)."""
    curator = curation.Curator(memory.user)
    decision = (
        curator.decide(memory, edited=True)
        if memory.archived_at is None and memory.superseded_by_id is None and not memory.file
        else curation.Decision(curation.ADD)
    )
    index_facts(curator, [memory])
    if decision.action == curation.SUPERSEDE:
        MemoryEdit.objects.bulk_create(
            apply_supersede(decision, memory, via=via, api_key=api_key, editor=editor)
        )
    elif decision.action in (curation.DUPLICATE, curation.MERGE) and decision.existing is not None:
        reason = Text(gettext_noop("edited to repeat another memory: %(reason)s"), reason=decision.reason)
        memory_fold(
            memory=memory, into=decision.existing, reason=reason, via=via, editor=editor, api_key=api_key
        )
        memory.refresh_from_db()


def _recorded(value: Any) -> Any:
    """A field's value as an edit record keeps it: JSON, a session by its key and a date as ISO text."""
    if isinstance(value, AgentSession):
        return value.key
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def version_before(edit: MemoryEdit) -> dict[str, Any]:
    """The restorable fields as they were just before `edit`: each field's old value in the earliest edit, from
    `edit` on, that changed it (later edits are undone too). Values are as recorded (see _recorded)."""
    newer_first = (
        MemoryEdit.objects.filter(memory_id=edit.memory_id)
        .filter(Q(created_at__gt=edit.created_at) | Q(created_at=edit.created_at, pk__gte=edit.pk))
        .order_by("-created_at", "-pk")
    )
    version: dict[str, Any] = {}
    for later in newer_first:
        if not isinstance(later.changes, dict):
            continue
        for name, pair in later.changes.items():
            if name in RESTORABLE_FIELDS and isinstance(pair, list) and len(pair) == 2:
                version[name] = pair[0]
    return version


@transaction.atomic
def memory_restore_version(
    *, memory: Memory, edit: MemoryEdit, via: str, editor: User | None = None
) -> Memory:
    """Bring a memory back to how it read just before `edit`. The restore is an edit of its own, with the
    reason, so it can be restored past in turn; the vector is re-mirrored when the text changes."""
    if edit.memory_id != memory.pk:
        raise MemoryRequestError(_("that edit belongs to another memory"))
    version = version_before(edit)
    if not version:
        raise MemoryRequestError(_("that edit changed nothing that can be restored (only archive or counts)"))
    if "session" in version:
        key = version["session"]
        version["session"] = session_for_key(user=memory.user, key=key) if key else None
    if "expires_at" in version:
        stamp = version["expires_at"]
        version["expires_at"] = datetime.fromisoformat(stamp) if stamp else None
    when = timezone.localtime(edit.created_at)
    edits_before = memory.edits.count()
    restored = memory_update(
        memory=memory,
        via=via,
        editor=editor,
        reason=Text(
            gettext_noop("restored the version from before the edit of %(when)s"),
            when=f"{when:%Y-%m-%d %H:%M:%S}",
        ),
        **version,
    )
    if restored.edits.count() == edits_before:
        raise MemoryRequestError(_("the memory already reads like that version: there is nothing to restore"))
    return restored


@transaction.atomic
def memory_archive(
    *,
    memory: Memory,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    archived: bool = True,
) -> Memory:
    """Hide a memory from search (its point is removed) without deleting it, or bring it back."""
    new_value = timezone.now() if archived else None
    if (memory.archived_at is None) == (new_value is None):
        return memory
    MemoryEdit.objects.create(
        memory=memory,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={"archived_at": [_iso(memory.archived_at), _iso(new_value)]},
    )
    memory.archived_at = new_value
    memory.mirror_state = MirrorState.PENDING
    memory.save(update_fields=["archived_at", "mirror_state", "updated_at"])  # its point goes, or comes back
    return memory


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def index_facts(curator: "curation.Curator", memories: Sequence[Memory]) -> None:
    Fact.objects.bulk_create(
        Fact(user_id=memory.user_id, memory=memory, key=slot.key[:200], value=slot.value[:200])
        for memory in memories
        for slot in curator.slots_of(memory)
    )


def apply_supersede(
    decision: "curation.Decision",
    memory: Memory,
    *,
    via: str,
    api_key: ApiKey | None,
    editor: User | None = None,
) -> list[MemoryEdit]:
    """Mark what a new fact replaces (kept, never deleted), or the new fact itself when it is the older one.
    Returns the history records, unsaved: a bulk write saves them once its rows exist."""
    pairs = [(older, memory) for older in decision.superseded]
    if decision.superseded_by is not None:
        pairs.append((memory, decision.superseded_by))
    edits = []
    for older, newer in pairs:
        older.valid_to = max(newer.created_at, older.created_at)
        older.superseded_by = newer
        if not older._state.adding:  # the vector payload does not change: no re-mirroring
            save_unmirrored(older, ["valid_to", "superseded_by"])
        edits.append(
            MemoryEdit(
                memory=older,
                editor=editor,
                api_key=api_key,
                via=via,
                changes={"superseded_by": [None, str(newer.pk)]},
                reason=decision.reason,
            )
        )
    if decision.superseded:
        edits.append(
            MemoryEdit(
                memory=memory,
                editor=editor,
                api_key=api_key,
                via=via,
                changes={"supersedes": [None, [str(older.pk) for older in decision.superseded]]},
                reason=decision.reason,
            )
        )
    return edits


@transaction.atomic
def memory_reinstate(
    *,
    memory: Memory,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    reason: str = RESTORED_BY_HAND,
) -> Memory:
    """Make a superseded fact current again (the one that replaced it stays current too); recorded as an edit."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id is None:
        return memory
    MemoryEdit.objects.create(
        memory=memory,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={"superseded_by": [str(memory.superseded_by_id), None]},
        reason=reason,
    )
    memory.superseded_by = None
    memory.valid_to = None
    memory.save(update_fields=["superseded_by", "valid_to", "updated_at"])
    return memory


@transaction.atomic
def memory_fold(
    *,
    memory: Memory,
    into: Memory,
    reason: str,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
) -> Memory:
    """Merge `memory` into the one it repeats: that one counts its writes, sources, tags and importance; `memory`
    is archived (kept, and restorable). Both records say why."""
    target = into
    target.seen_count += memory.seen_count
    target.sources = [*target.sources, *memory.sources][-MAX_SOURCES:]
    target.importance = max(target.importance, memory.importance)
    target.tags = list(dict.fromkeys([*target.tags, *memory.tags]))
    target.save(update_fields=["seen_count", "sources", "importance", "tags", "updated_at"])
    MemoryEdit.objects.create(
        memory=target,
        editor=editor,
        api_key=api_key,
        via=via,
        changes={
            "merged": [None, memory.content],
            "seen_count": [target.seen_count - memory.seen_count, target.seen_count],
        },
        reason=reason,
    )
    return memory_archive(memory=memory, via=via, editor=editor, api_key=api_key)
