"""The memory browser at scale: its total, numbered pages, page size, and the entities shown on each row.

Page 1 and the "Older →"/"← Newer" links page by keyset (memories.views.keyset_page). A numbered page link
(?page=N, or ?page=last) uses OFFSET, counted from whichever end is nearer, so the deepest page reads at most
half the matching rows; bench/console_pages.py measures both at 100,000 memories.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from django.db.models import QuerySet
from django.http import QueryDict

from core.pagination import page_links  # noqa: F401 - memories.views reads it from here
from memories.models import Memory, MemoryEntity

if TYPE_CHECKING:
    from memories.views import KeysetPage

PAGE_SIZES = (25, 50, 100, 200)
ENTITIES_PER_ROW = 6


def page_size(raw: str | None) -> int:
    from memories.views import PAGE_SIZE

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
    from memories.views import Cursor, KeysetPage, keyset_page

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
