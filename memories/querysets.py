"""The querysets of memories' models: the one vocabulary for "which memories", and the tag lookup its
filters use. The models (memories.models) take them as their managers."""

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual
from django.utils import timezone

from memories.types import MemoryType

# metadata["origin"] of a chat copy: the working memory the chat agent keeps of each message it receives.
CHAT_ORIGIN = "chat"


# Printable ASCII but the quote, backslash and slash: what Python's and SQLite's JSON write as it is, unescaped.
PLAIN_JSON_STRING = re.compile(r"[ !#-.0-\[\]-~]+")


class HasTag(models.Lookup):
    """`tags__has_tag="x"`: the JSON list holds the string "x". Django's `contains` on a JSONField does this on
    PostgreSQL but not on SQLite, where json_each reads the list."""

    lookup_name = "has_tag"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        # lhs is the column and rhs a placeholder, both from Django's compiler; the tag travels as a parameter.
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        if connection.vendor == "postgresql":
            return f"{lhs} @> jsonb_build_array({rhs}::text)", [*lhs_params, *rhs_params]
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE json_each.value = {rhs})"  # noqa: S608
        params = [*lhs_params, *rhs_params]
        tag = rhs_params[0] if len(rhs_params) == 1 else None
        if isinstance(tag, str) and PLAIN_JSON_STRING.fullmatch(tag):
            # A plain tag is stored as itself in quotes: rows without that text are passed over before json_each
            # reads their list, which halves a tag filter's count over 100,000 memories (107 -> 62 ms).
            return f"(instr({lhs}, %s) > 0 AND {sql})", [*lhs_params, f'"{tag}"', *params]
        return sql, params


class MemoryQuerySet(models.QuerySet):
    """The one vocabulary for "which memories": the API, the pages, the tools and retrieval all speak it."""

    def for_user(self, user: Any) -> "MemoryQuerySet":
        return self.filter(user=user)

    def listed(self, archived: bool = False) -> "MemoryQuerySet":
        """What a list shows: the archived ones when asked, else the others (expired working memory too)."""
        return self.exclude(archived_at=None) if archived else self.filter(archived_at=None)

    def active(self, now: datetime | None = None) -> "MemoryQuerySet":
        """Not archived and, for working memory, not past its TTL (superseded facts included)."""
        return self.filter(archived_at=None).exclude(expires_at__lte=now or timezone.now())

    def current(self, now: datetime | None = None) -> "MemoryQuerySet":
        """Active and not superseded by a newer fact: what search, the chat and the profile read by default."""
        return self.active(now).filter(superseded_by=None)

    def without_chat_copies(self) -> "MemoryQuerySet":
        """Leave out the working-memory copies of chat messages ("hi", "where do I work?"): the conversation's
        own context, not something another session or an API caller searches for."""
        # With has_key: a missing key compares as NULL, and NOT (working AND NULL) is NULL, which would leave out
        # every working memory without the key; has_key is false there, so the AND is false and the NOT true.
        return self.exclude(
            models.Q(memory_type=MemoryType.WORKING)
            & models.Q(metadata__has_key="origin")
            & models.Q(metadata__origin=CHAT_ORIGIN)
        )

    def filtered(
        self,
        *,
        memory_types: Sequence[str] | None = None,
        session=None,
        session_key: str | None = None,
        min_importance: float | None = None,
        max_importance: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        superseded: bool | None = None,
        contains: str | None = None,
        tag: str | None = None,
        origin: str | None = None,
        origin_key: int | None = None,
    ) -> "MemoryQuerySet":
        """The filters that lists and searches offer, each applied only when given."""
        memories = self
        if tag:
            memories = memories.filter(tags__has_tag=tag)
        if origin:
            memories = memories.filter(origin=origin)
        if origin_key is not None:
            memories = memories.filter(origin_key=origin_key)
        if memory_types:
            memories = memories.filter(memory_type__in=list(memory_types))
        if session is not None:
            memories = memories.filter(session=session)
        if session_key:
            memories = memories.filter(session__key=session_key)
        # Importance is checked on each row, not as a range of the (user, -importance) index (hence the + 0):
        # lists are newest first, and with that range the planner read and sorted half of 100,000 rows for one
        # page (the browser's session + importance filter, 340 ms in bench/console_pages.py).
        importance = models.F("importance") + 0.0
        if min_importance is not None:
            memories = memories.filter(GreaterThanOrEqual(importance, min_importance))
        if max_importance is not None:
            memories = memories.filter(LessThanOrEqual(importance, max_importance))
        if since:
            memories = memories.filter(created_at__gte=since)
        if until:
            memories = memories.filter(created_at__lte=until)
        if superseded is not None:
            memories = memories.filter(superseded_by__isnull=not superseded)
        if contains:
            memories = memories.filter(content__icontains=contains)
        return memories
