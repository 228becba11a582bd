"""SQLite's query-planner statistics, kept current while the server runs.

Without them SQLite guesses that any index narrows a query down, and picks badly: a search's candidate query
(150 memories by primary key, current ones only) walked the whole `superseded_by IS NULL` index instead, 6 ms
of SQL instead of 0.3 ms at 10,000 memories. ANALYZE fills sqlite_stat1; this runs it on a table whose row count
has moved well away from the one its statistics were taken at. `PRAGMA analysis_limit` bounds its cost at any
size (each index is sampled, not read whole). Other connections of the process read the new statistics from
their next request or task on (core/sqlite/base.py: a connection reads them only when it opens). PostgreSQL's
autovacuum keeps its own statistics: nothing to do.
"""

from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper

from core.sqlite.base import planner_statistics_retaken

# Rows sampled per index (SQLite's own suggestion is 100 to 1,000); ~30 ms for every table at 10,000 memories.
ANALYSIS_LIMIT = 1000
# A table is analysed again once its rows have doubled or halved since, or first once it has this many.
MIN_ROWS = 100


def refresh_planner_statistics(connection: BaseDatabaseWrapper = default_connection) -> list[str]:
    """ANALYZE the tables whose statistics are missing or stale; returns their names."""
    if connection.vendor != "sqlite":
        return []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        tables = [
            name for name in connection.introspection.table_names(cursor) if not name.startswith("sqlite_")
        ]
        analysed_rows = _analysed_rows(cursor)
        stale = []
        for table in tables:
            # The names come from the schema, never from a request.
            rows = cursor.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0]  # noqa: S608
            before = analysed_rows.get(table)
            if before is None:
                if rows >= MIN_ROWS:
                    stale.append(table)
            elif abs(rows - before) >= MIN_ROWS and not before / 2 < rows < before * 2:
                stale.append(table)
        if stale:
            cursor.execute(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
            for table in stale:
                cursor.execute(f"ANALYZE {quote(table)}")
    if stale:
        planner_statistics_retaken(connection)
    return stale


def _analysed_rows(cursor) -> dict[str, int]:
    """Each analysed table's row count when ANALYZE last ran (the first number of its sqlite_stat1 rows)."""
    exists = cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
    if exists.fetchone() is None:
        return {}
    rows: dict[str, int] = {}
    for table, stat in cursor.execute("SELECT tbl, stat FROM sqlite_stat1").fetchall():
        if stat:
            rows[table] = max(rows.get(table, 0), int(stat.split()[0]))
    return rows
