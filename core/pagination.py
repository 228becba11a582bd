"""The API's one pagination: ninja's limit/offset with bounds the database can hold."""

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_PAGE_SIZE = 1000
# SQLite and PostgreSQL take 64-bit offsets; an unbounded one overflowed them and answered 500.
MAX_OFFSET = 10**12


class BoundedLimitOffset(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(100, ge=1, le=MAX_PAGE_SIZE)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)


def page_links(number: int | None, num_pages: int) -> list[int | None]:
    """Page numbers a pager links: the first two, the last two and two either side of the current one (when
    known); None marks a gap. The console's memory, document and chunk lists all use it."""
    wanted = {1, 2, num_pages - 1, num_pages}
    if number is not None:
        wanted |= set(range(number - 2, number + 3))
    pages = sorted(n for n in wanted if 1 <= n <= num_pages)
    links: list[int | None] = []
    for n in pages:
        if links and n - (links[-1] or 0) > 1:
            links.append(None)
        links.append(n)
    return links
