"""Query shapes shared by the apps."""

from collections.abc import Iterable
from typing import cast

from django.contrib.auth.models import User
from django.db.models import F, Model, QuerySet


def owned_by_pk[M: Model](queryset: QuerySet[M], user: User, ids: Iterable) -> QuerySet[M]:
    """The rows of `queryset` among `ids` that belong to `user`, looked up by primary key.

    Comparing `user_id + 0` instead of `user_id` keeps SQLite's planner (it has no table statistics) off the
    per-user indexes, which walk every row of the user: 13 ms instead of ~1 ms for 150 of 10,000 memories.
    """
    owned = queryset.alias(owner=F("user_id") + 0).filter(owner=user.pk, pk__in=list(ids))
    # The cast: django-stubs' plugin types alias() on a QuerySet of a type variable as QuerySet[Model].
    return cast(QuerySet[M], owned)
