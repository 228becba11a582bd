"""Indexes for the console's pages at 100,000 memories (bench/console_pages.py): the browser's whole order (deep
pages skip rows in the index), the dashboard's count per source and key and per tag, read from indexes alone, and
the memories a fact replaced."""

from django.conf import settings
from django.db import migrations, models

# SQLite only: a PostgreSQL B-tree entry holds at most ~2.7 KB, and a memory may carry 100 tags of 200 characters.
TAGS_INDEX = "memory_user_tags"


def add_tags_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{TAGS_INDEX}" ON "memories_memory" ("user_id", "tags")'
        )


def drop_tags_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{TAGS_INDEX}"')


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_subject_change"),
        ("knowledge", "0005_merge_paused_image_chunks"),
        ("memories", "0012_merge_entity_plural_fingerprints"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                fields=["user", "archived_at", "-created_at", "-id"], name="memory_user_archived_order"
            ),
        ),
        migrations.RemoveIndex(model_name="memory", name="memory_user_archived_created"),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["user", "origin", "origin_key"], name="memory_user_origin_key"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["superseded_by", "user"], name="memory_superseded_by_user"),
        ),
        migrations.RunPython(add_tags_index, drop_tags_index),
    ]
