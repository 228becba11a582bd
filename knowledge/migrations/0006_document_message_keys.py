"""A document's error and notice get their message keys (core.stored_text), so pages show them in the reader's
language. Rows written before keep their English text; those whose text is one of the fixed messages (no
parameters) get its key here, so they are translated too. The texts are copied as of this migration."""

from django.db import migrations

import core.models

FIXED_ERRORS = [
    "cancelled by the user",
    "Waiting: another of your documents is being converted; this one starts after it.",
]
FIXED_NOTICES = [
    "No text found in this image, so nothing of it is searchable: only its metadata (size, format, embedded "
    "tags) could be read, and there is no OCR. Configure an LLM (LLM_BASE_URL) to index a description of images.",
    "Only the image's metadata (size, format and embedded tags) was extracted: the picture itself is not read "
    "and there is no OCR. Configure an LLM to get a description of images.",
    "The image was described by the configured LLM; no OCR was run.",
]


def key_fixed_messages(apps, schema_editor):
    Document = apps.get_model("knowledge", "Document")
    for text in FIXED_ERRORS:
        Document.objects.filter(error=text).update(error_key={"msgid": text, "params": {}})
    for text in FIXED_NOTICES:
        Document.objects.filter(notice=text).update(notice_key={"msgid": text, "params": {}})


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0005_merge_paused_image_chunks"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="error_key",
            field=core.models.MessageKeyField(blank=True, default=dict, text_field="error"),
        ),
        migrations.AddField(
            model_name="document",
            name="notice_key",
            field=core.models.MessageKeyField(blank=True, default=dict, text_field="notice"),
        ),
        migrations.RunPython(key_fixed_messages, migrations.RunPython.noop),
    ]
