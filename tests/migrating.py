"""The database as an older version left it, for the tests of data migrations."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@contextmanager
def models_as_of(targets: Sequence[tuple[str, str | None]]) -> Iterator[Apps]:
    """The database migrated back to `targets` ((app, migration); (app, None): before the app's first one) and
    its models as they were then; on leaving, migrated forward to the latest again, whatever happened inside."""
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        yield _migrate(targets)
    finally:
        _migrate(leaves)


def _migrate(targets: Sequence[tuple[str, str | None]]) -> Apps:
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets))
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps
