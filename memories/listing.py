"""The memory browser at scale: its total, numbered pages, page size, and the entities shown on each row.

Page 1 and the "Older →"/"← Newer" links page by keyset (keyset_page: "older than this created_at, id", one
index range scan of at most PAGE_SIZE + 1 rows, however many memories a user has). A numbered page link
(?page=N, or ?page=last) uses OFFSET, counted from whichever end is nearer, so the deepest page reads at most
half the matching rows; bench/console_pages.py measures both at 100,000 memories.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.db.models import Q, QuerySet
from django.http import QueryDict

from core.pagination import page_links
from memories.models import Memory, MemoryEntity

PAGE_SIZE = 50
PAGE_SIZES = (25, 50, 100, 200)
ENTITIES_PER_ROW = 6
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cursor:
    """A position in the newest-first order: created_at to the microsecond, then id as the tie-break."""

    created_at: datetime
    pk: uuid.UUID

    @classmethod
    def of(cls, memory: Memory) -> Cursor:
        return cls(memory.created_at, memory.pk)

    @classmethod
    def parse(cls, value: str | None) -> Cursor | None:
        micros, _, pk = (value or "").partition("_")
        try:
            return cls(EPOCH + timedelta(microseconds=int(micros)), uuid.UUID(hex=pk))
        except (ValueError, OverflowError):
            return None

    def __str__(self) -> str:
        # Integer microseconds, not a float timestamp, so the cursor round-trips exactly.
        return f"{(self.created_at - EPOCH) // timedelta(microseconds=1)}_{self.pk.hex}"

    def older(self) -> Q:
        # "<= and not (= and >=)" rather than "< or (= and <)": one range on the (user, -created_at) index.
        return Q(created_at__lte=self.created_at) & ~Q(created_at=self.created_at, pk__gte=self.pk)

    def newer(self) -> Q:
        return Q(created_at__gte=self.created_at) & ~Q(created_at=self.created_at, pk__lte=self.pk)


@dataclass
class KeysetPage:
    memories: list[Memory]
    older: Cursor | None  # the cursor for "Older →", when there are older rows
    newer: Cursor | None  # the cursor for "← Newer", when there are newer rows
    total: int | None = None  # every memory the filter matches (memory_page)
    number: int | None = None  # the page number, when known (page 1, or a ?page= link)
    size: int = PAGE_SIZE

    @property
    def num_pages(self) -> int:
        return max(1, -(-(self.total or 0) // self.size))

    @property
    def links(self) -> list[int | None]:
        return page_links(self.number, self.num_pages)


def keyset_page(
    memories: QuerySet, *, before: Cursor | None, after: Cursor | None, size: int = PAGE_SIZE
) -> KeysetPage:
    """At most two queries: the page itself (size + 1 rows) and an EXISTS for the other direction."""
    if after is not None:
        rows = list(memories.filter(after.newer()).order_by("created_at", "id")[: size + 1])
        if len(rows) > size:
            rows = rows[:size][::-1]
            has_older = memories.filter(Cursor.of(rows[-1]).older()).exists()
            return KeysetPage(rows, Cursor.of(rows[-1]) if has_older else None, Cursor.of(rows[0]), size=size)
        before = None  # back at the newest rows: show a full first page rather than a short one
    newest_first = memories.order_by("-created_at", "-id")
    if before is not None:
        newest_first = newest_first.filter(before.older())
    rows = list(newest_first[: size + 1])
    older = Cursor.of(rows[size - 1]) if len(rows) > size else None
    rows = rows[:size]
    newer = None
    if before is not None:
        anchor = Cursor.of(rows[0]) if rows else before
        newer = anchor if memories.filter(anchor.newer()).exists() else None
    return KeysetPage(rows, older, newer, size=size, number=None if before is not None else 1)


def page_size(raw: str | None) -> int:
    try:
        size = int(raw or "")
    except ValueError:
        return PAGE_SIZE
    return size if size in PAGE_SIZES else PAGE_SIZE


def _page_number(raw: str, num_pages: int) -> int:
    if raw == "last":
        return num_pages
    try:
        return min(max(int(raw), 1), num_pages)
    except ValueError:
        return 1


def memory_page(memories: QuerySet, params: QueryDict) -> KeysetPage:
    """The page of `memories` that `params` asks for (?before/?after cursors, ?page=N, ?size=), with the total."""
    size = page_size(params.get("size"))
    # One COUNT over the filter's index range: ~10 ms at 100,000 rows on SQLite (bench/console_pages.py).
    total = memories.count()
    before, after = Cursor.parse(params.get("before")), Cursor.parse(params.get("after"))
    number = _page_number(params.get("page", ""), max(1, -(-total // size))) if "page" in params else 1
    if before is not None or after is not None or number == 1:
        page = keyset_page(memories, before=before, after=after, size=size)
        page.total = total
        return page
    rows = _offset_page(memories, offset=(number - 1) * size, size=size, total=total)
    num_pages = max(1, -(-total // size))
    older = Cursor.of(rows[-1]) if rows and number < num_pages else None
    newer = Cursor.of(rows[0]) if rows else None
    return KeysetPage(rows, older, newer, total=total, number=number, size=size)


def _offset_page(memories: QuerySet, *, offset: int, size: int, total: int) -> list[Memory]:
    """The `size` rows after the newest `offset`, newest first. The skipped rows are read as ids only, which the
    (user, archived_at, -created_at, -id) index holds, so an unfiltered deep page reads no row it does not show
    (page 1,000 of 100,000 memories: 50 rows instead of 50,000); the page's rows come by id after."""
    if offset <= total // 2:
        ids = list(
            memories.order_by("-created_at", "-id").values_list("pk", flat=True)[offset : offset + size]
        )
    else:  # nearer the oldest end: read from there and turn the ids round
        start = max(0, total - offset - size)
        ids = list(memories.order_by("created_at", "id").values_list("pk", flat=True)[start : total - offset])
        ids.reverse()
    rows = memories.in_bulk(ids)
    return [rows[pk] for pk in ids if pk in rows]


def attach_entities(memories: Sequence[Memory]) -> None:
    """Set `linked_entities` on each memory (at most ENTITIES_PER_ROW, by name) with one query for them all."""
    if not memories:
        return
    by_memory = defaultdict(list)
    links = (
        MemoryEntity.objects.filter(memory__in=[m.pk for m in memories])
        .select_related("entity")
        .order_by("entity__name")
    )
    for link in links:
        by_memory[link.memory_id].append(link.entity)
    for memory in memories:
        cast(Any, memory).linked_entities = by_memory[memory.pk][:ENTITIES_PER_ROW]
