"""How one user's memories divide by tag and by source: the dashboard's counts and the browser's filter choices.

A memory's tags are a JSON list, so counting them reads each list (json_each on SQLite, jsonb_array_elements_text
on PostgreSQL); its source is two indexed columns (Memory.origin, origin_key). bench/console_pages.py measures both
at 100,000 memories.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count

from core.models import ApiKey
from memories.models import EditVia, Memory

TOP_TAGS = 20
# The browser suggests the tags of the newest memories: one user's every list would be read on each page.
SUGGESTED_FROM = 5_000


@dataclass(frozen=True)
class SourceCount:
    origin: str
    key: ApiKey | None
    count: int

    @property
    def label(self) -> str:
        label = EditVia(self.origin).label if self.origin in EditVia.values else self.origin
        return f"{label} · {self.key.name}" if self.key else label


def tag_counts(user: User, *, limit: int = TOP_TAGS, newest: int | None = None) -> list[tuple[str, int]]:
    """The user's most used tags with how many memories carry each, most used first (then by name); with
    `newest`, among that many of their newest memories only."""
    table = Memory._meta.db_table
    if newest is not None:
        table = f"(SELECT tags, user_id FROM {table} WHERE user_id = %s ORDER BY created_at DESC LIMIT %s)"  # noqa: S608
    if connection.vendor == "postgresql":
        each = "jsonb_array_elements_text(m.tags) AS t(value) WHERE jsonb_typeof(m.tags) = 'array' AND"
    else:
        each = "json_each(m.tags) AS t WHERE t.type = 'text' AND"
    sql = (
        f"SELECT t.value, COUNT(*) FROM {table} AS m, {each} m.user_id = %s "  # noqa: S608 - names, not input
        "GROUP BY t.value ORDER BY COUNT(*) DESC, t.value LIMIT %s"
    )
    params = [user.pk, limit] if newest is None else [user.pk, newest, user.pk, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(str(tag), int(count)) for tag, count in cursor.fetchall()]


def source_counts(user: User) -> list[SourceCount]:
    """How many of the user's memories came through each route and key, most first."""
    rows = (
        Memory.objects.for_user(user)
        .values_list("origin", "origin_key")
        .annotate(n=Count("id"))
        .order_by("-n", "origin", "origin_key")
    )
    rows = list(rows)
    keys = ApiKey.objects.in_bulk([key for _, key, _ in rows if key is not None])
    return [SourceCount(origin, keys.get(key) if key else None, n) for origin, key, n in rows]


def key_choices(user: User) -> list[tuple[int, str]]:
    """The user's API keys as filter choices (revoked ones too: they wrote memories)."""
    return [
        (key.pk, f"{key.name} (revoked)" if key.revoked_at else key.name)
        for key in ApiKey.objects.for_user(user).order_by("name", "pk")
    ]
