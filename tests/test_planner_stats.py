"""SQLite's planner statistics (core/planner_stats.py): taken once a table has grown, again when it changes,
and what they are for: a search's candidate query reads its memories by primary key."""

import pytest
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import ConnectionHandler
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


def file_connection(path) -> BaseDatabaseWrapper:
    """A connection of its own to the SQLite file `path`, as a server thread holds one (core.sqlite)."""
    settings = {"ENGINE": "core.sqlite", "NAME": path, "CONN_MAX_AGE": None}  # kept open, as settings.py does
    return ConnectionHandler({"default": settings})["default"]


def plan(connection: BaseDatabaseWrapper) -> str:
    with connection.cursor() as cursor:
        query = "EXPLAIN QUERY PLAN SELECT id FROM ticket WHERE state = 1 AND team = 1"
        return " ".join(row[-1] for row in cursor.execute(query).fetchall())


def test_a_connection_opened_before_the_statistics_plans_with_them_from_its_next_request(tmp_path):
    path = tmp_path / "planned.sqlite3"
    serving, refreshing = file_connection(path), file_connection(path)
    with serving.cursor() as cursor:
        cursor.execute("CREATE TABLE ticket (id INTEGER PRIMARY KEY, state INTEGER, team INTEGER)")
        cursor.execute("CREATE INDEX ticket_state ON ticket (state)")
        cursor.execute("CREATE INDEX ticket_team ON ticket (team)")
        # Two teams, a thousand states: the state narrows a query down, the team does not.
        cursor.executemany(
            "INSERT INTO ticket (state, team) VALUES (%s, %s)", [(i % 1000, i % 2) for i in range(20_000)]
        )
    try:
        assert "ticket_team" in plan(serving)  # no statistics: SQLite guesses

        assert refresh_planner_statistics(refreshing) == ["ticket"]
        assert "ticket_state" in plan(refreshing)
        # SQLite does not tell the serving thread's open connection: it would plan with its guess for ever.
        assert "ticket_team" in plan(serving)

        serving.close_if_unusable_or_obsolete()  # what Django runs as a request or a background task begins

        assert "ticket_state" in plan(serving)
        serving.close_if_unusable_or_obsolete()
        assert serving.connection is not None  # closed once per new statistics, not at every request
    finally:
        serving.close()
        refreshing.close()
