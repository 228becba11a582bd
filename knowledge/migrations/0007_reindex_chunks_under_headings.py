"""Chunks under a heading are indexed with their section's headings from now on (knowledge.mirror.indexed_text):
those indexed before without them are marked pending, and the mirror sweep (core.mirror_outbox.sweep) embeds
them again. Their rows and their text do not change; search finds them as before until then."""

from django.db import migrations


def mark_for_reindexing(apps, schema_editor):
    Chunk = apps.get_model("knowledge", "Chunk")
    Chunk.objects.exclude(heading_path="").filter(mirror_state="synced").update(mirror_state="pending")


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0006_document_message_keys")]

    operations = [migrations.RunPython(mark_for_reindexing, migrations.RunPython.noop)]
