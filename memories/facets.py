"""How one user's memories divide by tag and by source: the dashboard's counts and the browser's filter choices.

A memory's tags are a JSON list, so counting them reads each row's list; its source is two indexed columns
(Memory.origin, origin_key). bench/console_pages.py measures both at 100,000 memories.
"""

import json
from collections import Counter
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Count, TextField
from django.db.models.functions import Cast

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
        label = str(EditVia(self.origin).label) if self.origin in EditVia.values else self.origin
        return f"{label} · {self.key.name}" if self.key else label


def tag_counts(user: User, *, limit: int = TOP_TAGS, newest: int | None = None) -> list[tuple[str, int]]:
    """The user's most used tags with how many memories carry each, most used first (then by name); with
    `newest`, among that many of their newest memories only."""
    memories = Memory.objects.for_user(user)
    if newest is not None:
        # Each list as the stored JSON text, decoded once per distinct list rather than once per row: 5,000
        # decodes and encodes were a third of the memory browser's time (bench/console_pages.py).
        newest_lists = memories.order_by("-created_at").values_list(Cast("tags", TextField()), flat=True)
        lists = Counter(newest_lists[:newest])
        grouped = [(json.loads(text), n) for text, n in lists.items() if text]
    else:
        # The same few lists repeat: grouping them in SQL and counting their tags here reads each list once,
        # half the time of expanding every list in SQL (json_each) at 100,000 memories. COUNT(*), not COUNT(id):
        # on SQLite the (user, tags) index (migration 0013) then answers alone, without reading a row.
        grouped = list(memories.values_list("tags").annotate(n=Count("*")).order_by())
    counts: Counter[str] = Counter()
    for tags, n in grouped:
        for tag in set(tags) if isinstance(tags, list) else ():
            if isinstance(tag, str):
                counts[tag] += n
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def source_counts(user: User) -> list[SourceCount]:
    """How many of the user's memories came through each route and key, most first."""
    rows = (
        Memory.objects.for_user(user)
        .values_list("origin", "origin_key")
        .annotate(n=Count("*"))  # from the (user, origin, origin_key) index alone: COUNT(id) reads each row
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
