"""SQLite's planner statistics (core/planner_stats.py): taken once a table has grown, again when it changes,
and what they are for: a search's candidate query reads its memories by primary key."""

import pytest
from django.db import connection
from django.utils import timezone

from core.planner_stats import MIN_ROWS, refresh_planner_statistics
from memories import retrieval
from memories.models import Memory
from tests.test_memory_bulk import many  # rows without services: no mirror, no signals

pytestmark = pytest.mark.django_db


def analysed_rows(table: str) -> int | None:
    with connection.cursor() as cursor:
        found = cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = %s", [table]).fetchall()
    return max(int(stat.split()[0]) for (stat,) in found) if found else None


def candidate_plan(user, ids) -> str:
    scope = retrieval._Scope(None, 0.0, None, None, False)
    queryset = retrieval._filtered(user, scope, timezone.now(), ids=ids).values_list(
        *retrieval._CANDIDATE_COLUMNS
    )
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        return " ".join(row[-1] for row in cursor.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall())


def test_a_table_is_analysed_once_it_has_grown_and_again_only_when_its_size_changes(user):
    many(user, MIN_ROWS - 1)
    assert "memories_memory" not in refresh_planner_statistics()  # too small to matter yet

    many(user, 301 - (MIN_ROWS - 1))
    assert "memories_memory" in refresh_planner_statistics()
    assert analysed_rows("memories_memory") == 301

    many(user, 200)  # 501: not yet twice the 301 analysed
    assert "memories_memory" not in refresh_planner_statistics()
    assert analysed_rows("memories_memory") == 301

    many(user, 200)  # 701
    assert "memories_memory" in refresh_planner_statistics()
    assert analysed_rows("memories_memory") == 701

    Memory.objects.filter(user=user).exclude(pk__in=Memory.objects.filter(user=user)[:300]).delete()
    assert "memories_memory" in refresh_planner_statistics()  # 300 left: under half
    assert analysed_rows("memories_memory") == 300


def test_with_statistics_a_searchs_candidates_are_read_by_primary_key(user, other_user):
    memories = many(user, 3000)
    many(other_user, 1000)
    ids = [str(memory.pk) for memory in memories[::20]]  # 150 found by the vector store
    # Without statistics SQLite took the `superseded_by IS NULL` index and read every current memory.
    assert "superseded_by" in candidate_plan(user, ids)

    refresh_planner_statistics()

    plan = candidate_plan(user, ids)
    assert "(id=?)" in plan and "superseded_by" not in plan, plan
