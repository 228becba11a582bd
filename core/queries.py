"""Query shapes shared by the apps."""

import uuid
from collections.abc import Iterable, Sequence
from typing import cast

from django.contrib.auth.models import User
from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, F, Field, Model, QuerySet
from django.db.models.expressions import RawSQL

from core.vectorstore.base import CANONICAL_UUID


def owned_by_pk[M: Model](queryset: QuerySet[M], user: User, ids: Iterable) -> QuerySet[M]:
    """The rows of `queryset` among `ids` that belong to `user`, looked up by primary key.

    Comparing `user_id + 0` instead of `user_id` keeps SQLite's planner (it has no table statistics) off the
    per-user indexes, which walk every row of the user: 13 ms instead of ~1 ms for 150 of 10,000 memories.
    """
    owned = with_ids(
        queryset.alias(owner=F("user_id") + 0).filter(owner=user.pk), queryset.model._meta.pk.name, ids
    )
    # The cast: django-stubs' plugin types alias() on a QuerySet of a type variable as QuerySet[Model].
    return cast(QuerySet[M], owned)


def with_ids[M: Model](queryset: QuerySet[M], field: str, ids: Iterable) -> QuerySet[M]:
    """queryset.filter(<field>__in=ids) for a UUID column and ids given as UUIDs or their text, with each id
    turned into the database's form once (stored_uuids), not through Django's four preparation calls per value:
    a search filters ~130 memory ids twice (candidates, their graph links), ~2 ms of the lock it holds. An id
    that is no UUID matches nothing."""
    connection = connections[queryset.db]
    keys = stored_uuids(ids, connection.features.has_native_uuid_field)
    if not keys:
        return queryset.none()
    column = quoted_column(queryset.model, field, connection)
    marks = ", ".join(["%s"] * len(keys))
    return queryset.filter(RawSQL(f"{column} IN ({marks})", keys, output_field=BooleanField()))  # noqa: S611


def stored_uuids(ids: Iterable, native: bool) -> list[uuid.UUID | str]:
    """Each id (a UUID, or its text in any form uuid.UUID reads) as the database stores it, in order, without
    repeats; ids that are no UUID are left out."""
    keys: dict[uuid.UUID | str, None] = {}
    for value in ids:
        try:
            keys[_stored_uuid(value, native)] = None
        except ValueError:  # uuid.UUID's only complaint, about text that is no UUID (None reads "None")
            continue
    return list(keys)


def raw_rows(queryset: QuerySet) -> list[tuple]:
    """The rows of a values_list() queryset as the database driver returns them, without Django's per-value
    converters: a search's graph step reads thousands of UUIDs, and turning each into a UUID object (and back
    into text) cost more than the queries themselves (~3,000 conversions, ~10 ms of a search's CPU)."""
    try:
        sql, params = queryset.query.get_compiler(queryset.db).as_sql()
    except EmptyResultSet:  # e.g. `pk__in=[]`: Django answers it without a query
        return []
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def uuid_text(value: object) -> str:
    """A UUID column's raw value (SQLite: 32 hex digits; PostgreSQL: a UUID) as str(uuid.UUID) writes it."""
    if isinstance(value, str) and len(value) == 32:
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return str(value)


def _stored_uuid(key: object, native: bool) -> uuid.UUID | str:
    """A UUID, or its text, as the database stores it: a UUID (PostgreSQL), or 32 hex digits (SQLite)."""
    if isinstance(key, uuid.UUID):
        return key if native else key.hex
    if not native and isinstance(key, str) and CANONICAL_UUID.fullmatch(key):  # str(uuid.UUID)'s form
        return key.replace("-", "")  # a fifth of the cost of uuid.UUID(key).hex, for ~300 ids per search
    parsed = uuid.UUID(str(key))
    return parsed if native else parsed.hex


def quoted_column(model: type[Model], name: str, connection: BaseDatabaseWrapper) -> str:
    """The SQL for the column of `model`'s field `name` (a foreign key by its field name: "user"), with its
    table, for queries written by hand."""
    quote = connection.ops.quote_name
    field = cast(Field, model._meta.get_field(name))
    return f"{quote(model._meta.db_table)}.{quote(field.column or name)}"


def owned_rows(model: type[Model], user: User, ids: Iterable[str], columns: Sequence[str]) -> list[tuple]:
    """The `columns` of `user`'s rows of `model` among the primary keys `ids` (UUIDs as text), raw as the
    driver returns them: owned_by_pk(...).values_list(...) through raw_rows, without Django's per-value
    preparation of the key list (four calls per id: 5 ms of a search's graph step for 300 entity ids)."""
    database = router.db_for_read(model)
    connection = connections[database]
    keys = stored_uuids(ids, connection.features.has_native_uuid_field)
    if not keys:
        return []
    table = connection.ops.quote_name(model._meta.db_table)

    def column(name: str) -> str:
        return quoted_column(model, name, connection)

    selected = ", ".join(column(name) for name in columns)
    marks = ", ".join(["%s"] * len(keys))
    sql = (
        f"SELECT {selected} FROM {table} "  # noqa: S608 - names from the model's metadata, values as parameters
        f"WHERE ({column('user')} + 0) = %s AND {column(model._meta.pk.name)} IN ({marks})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.pk, *keys])
        return cursor.fetchall()
