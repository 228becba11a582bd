"""Move an embedded install (SQLite, Qdrant Edge, the SQL graph) onto the configured production stack.

Run it with the production settings (DATABASE_URL on an empty PostgreSQL database, QDRANT_URL, NEO4J_URI) while
the embedded server is stopped:

    DATABASE_URL=postgresql://... QDRANT_URL=http://... NEO4J_URI=bolt://... \\
        python manage.py migrate_up --from /path/to/old/var

Every row of every table is copied as it is (primary keys, timestamps, mirror states), uploaded files are copied
to the new MEDIA_ROOT, and the vector and graph mirrors are rebuilt from the copied rows (resync_mirrors
--rebuild): a mirror is a pure function of its row, so nothing is read from the old Qdrant Edge store. At the end
each table's count is checked against the source, and the mirrors' against the rows they stand for.
"""

import shutil
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.migrations.recorder import MigrationRecorder

from core.dispatch import redact_url

SOURCE = "embedded_source"
BATCH = 1000


class Command(BaseCommand):
    help = (
        "Copy an embedded install (its data folder: mnemo.sqlite3 and media/) into the configured PostgreSQL "
        "database, then rebuild the vector and graph mirrors on the configured Qdrant server and Neo4j, and "
        "check every table's count. The target database must be empty; the source is only read."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--from",
            dest="source",
            type=Path,
            required=True,
            help="the embedded install's data folder (its MNEMO_DATA_DIR, holding mnemo.sqlite3)",
        )
        parser.add_argument(
            "--check",
            action="store_true",
            help="copy nothing: only compare the counts with the source again (after a move)",
        )

    def handle(self, *args, source: Path, check: bool = False, verbosity: int = 1, **options):
        self.verbosity = verbosity
        database = source / "mnemo.sqlite3"
        if not database.is_file():
            raise CommandError(f"{database} does not exist: --from takes the embedded install's data folder")
        target = connections[DEFAULT_DB_ALIAS]
        if target.vendor != "postgresql":
            raise CommandError(
                "The target is not PostgreSQL: set DATABASE_URL=postgresql://user:password@host:port/name "
                "for the database to move to."
            )
        self._open_source(database)
        if check:
            self._check_counts()
            self.stdout.write(self.style.SUCCESS("Every table's count matches the source, and the mirrors."))
            return
        self._describe_target()

        call_command("migrate", interactive=False, verbosity=0)
        self._check_same_schema()
        models = copied_models()
        if any(model._base_manager.exists() for model in models if model._meta.label not in _POST_MIGRATE):
            raise CommandError(
                "The target database already holds data; migrate_up only fills an empty database "
                "(create a new one, or drop and re-create this one)."
            )

        counts = self._copy(models)
        files = self._copy_media(source / "media")
        self.stdout.write(f"Copied {sum(counts.values())} rows in {len(counts)} tables and {files} files.")

        call_command("resync_mirrors", rebuild=True, stdout=self.stdout, stderr=self.stderr)
        self._check_counts(counts)
        self.stdout.write(
            self.style.SUCCESS("Moved: every table's count matches the source, and the mirrors.")
        )

    # --- steps ---------------------------------------------------------------------------------------------------

    def _open_source(self, database: Path) -> None:
        # A second alias on the same process, so the ORM reads the old rows with the same field conversions.
        configured = connections.configure_settings(
            {DEFAULT_DB_ALIAS: {}, SOURCE: {"ENGINE": "django.db.backends.sqlite3", "NAME": str(database)}}
        )
        connections.settings[SOURCE] = configured[SOURCE]

    def _describe_target(self) -> None:
        vectors = (
            f"Qdrant server {redact_url(settings.QDRANT_URL)}"
            if settings.QDRANT_URL
            else "Qdrant Edge (QDRANT_URL unset)"
        )
        graph = (
            f"Neo4j {redact_url(settings.NEO4J_URI)}"
            if settings.NEO4J_URI
            else "the SQL graph (NEO4J_URI unset)"
        )
        self.stdout.write(
            f"Moving to PostgreSQL {connections[DEFAULT_DB_ALIAS].settings_dict['NAME']}, {vectors}, {graph}."
        )

    def _check_same_schema(self) -> None:
        have = set(MigrationRecorder(connections[SOURCE]).applied_migrations())
        want = set(MigrationRecorder(connections[DEFAULT_DB_ALIAS]).applied_migrations())
        if have != want:
            missing = ", ".join(f"{app}.{name}" for app, name in sorted(want - have)[:5])
            extra = ", ".join(f"{app}.{name}" for app, name in sorted(have - want)[:5])
            raise CommandError(
                "The embedded database and this code are at different migrations"
                + (
                    f"; not applied there: {missing} (run `manage.py migrate` on the embedded install first)"
                    if missing
                    else ""
                )
                + (
                    f"; unknown here: {extra} (run this command from the same version of Mnemo)"
                    if extra
                    else ""
                )
            )

    def _copy(self, models: list) -> dict[str, int]:
        """Every row of every table, in one transaction: all or nothing."""
        target = connections[DEFAULT_DB_ALIAS]
        counts: dict[str, int] = {}
        try:
            with transaction.atomic(using=DEFAULT_DB_ALIAS):
                # migrate filled contenttypes and permissions with its own numbering; the source's ids are the
                # ones its rows point at, so those tables are emptied and copied like the rest.
                tables = target.introspection.django_table_names(only_existing=True, include_views=False)
                with target.cursor() as cursor:
                    for statement in target.ops.sql_flush(no_style(), tables, allow_cascade=True):
                        cursor.execute(statement)
                # PostgreSQL checks Django's foreign keys at commit (DEFERRABLE INITIALLY DEFERRED), so tables
                # go in any order and rows that point at each other need no second pass.
                for model in models:
                    counts[model._meta.label] = _copy_table(model)
                with target.cursor() as cursor:
                    for statement in target.ops.sequence_reset_sql(no_style(), models):
                        cursor.execute(statement)
        except DatabaseError as exc:
            raise CommandError(f"Copying the rows failed and nothing was written: {exc}") from None
        return counts

    def _copy_media(self, media: Path) -> int:
        """Uploaded documents and perceptual files, to the new MEDIA_ROOT."""
        destination = Path(settings.MEDIA_ROOT)
        if not media.is_dir() or media.resolve() == destination.resolve():
            return 0
        shutil.copytree(media, destination, dirs_exist_ok=True)
        return sum(1 for path in media.rglob("*") if path.is_file())

    def _check_counts(self, copied: dict[str, int] | None = None) -> None:
        """Each table's rows here against the source (and against what was copied); exits 1 naming each difference."""
        problems = []
        for model in copied_models():
            label = model._meta.label
            source = model._base_manager.using(SOURCE).count()
            target = model._base_manager.using(DEFAULT_DB_ALIAS).count()
            if source != target or (copied is not None and copied[label] != target):
                problems.append(f"{label}: {source} in the source, {target} here")
            elif source and self.verbosity >= 2:
                self.stdout.write(f"  {label}: {target}")
        problems += mirror_problems()
        if problems:
            raise CommandError("Counts differ after the move:\n  " + "\n  ".join(problems))


# The tables `migrate` itself fills: an empty database has rows there (they are replaced by the source's).
_POST_MIGRATE = {"contenttypes.ContentType", "auth.Permission"}


def copied_models() -> list:
    """Every table Django manages, many-to-many tables included; the users' and everything they own."""
    models = [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy and not model._meta.swapped
    ]
    return sorted(models, key=lambda model: model._meta.label)


def _copy_table(model) -> int:
    """The rows of `model` from the source, as they are: raw inserts keep auto_now timestamps and send no signals."""
    fields = [field for field in model._meta.concrete_fields if not field.generated]
    rows = model._base_manager.using(SOURCE).order_by("pk").iterator(chunk_size=BATCH)
    manager = model._base_manager.using(DEFAULT_DB_ALIAS)
    batch, copied = [], 0
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            manager._insert(batch, fields=fields, raw=True, using=DEFAULT_DB_ALIAS)
            copied += len(batch)
            batch = []
    if batch:
        manager._insert(batch, fields=fields, raw=True, using=DEFAULT_DB_ALIAS)
        copied += len(batch)
    return copied


def mirror_problems() -> list[str]:
    """What the rebuilt mirrors lack: points for active memories and ready chunks; Neo4j nodes and edges."""
    from core.models import MirrorState
    from knowledge.mirror import COLLECTION as CHUNKS
    from knowledge.mirror import chunk_store
    from knowledge.models import Chunk
    from memories.mirror import COLLECTION as MEMORIES
    from memories.mirror import memory_store
    from memories.models import Entity, Memory, Relation

    problems = []
    expected = {
        MEMORIES: (memory_store(), Memory.objects.filter(archived_at=None).count()),
        CHUNKS: (chunk_store(), Chunk.objects.active().count()),
    }
    for collection, (store, rows) in expected.items():
        points = store.count(collection)
        if points != rows:
            problems.append(f"vector collection {collection}: {points} points for {rows} rows")
    if settings.NEO4J_URI:
        for model in (Entity, Relation):
            unsynced = model.objects.exclude(mirror_state=MirrorState.SYNCED).count()
            if unsynced:
                problems.append(f"{model._meta.verbose_name_plural}: {unsynced} not mirrored to Neo4j")
    return problems
