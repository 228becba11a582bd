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
