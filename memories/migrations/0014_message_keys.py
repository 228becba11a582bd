"""Message keys (core.stored_text) beside texts Mnemo stores and shows later: a memory edit's and a proposal's
reason, the chat's "[Not stored: …]" note. Older rows keep their English text; those whose reason is one of the
fixed reasons (no parameters) get its key here, so they are translated too. The texts are copied as of this
migration."""

from django.db import migrations

import core.models

FIXED_REASONS = [
    "restored by hand",
    "a repeat taken back (undo)",
    "the fact that replaced it was undone",
    "Undo of a bulk delete.",
    "approved cleaning undone",
    "secrets masked by a scan",
    "the same text is already stored",
    "the model was not asked: the user has no current fact yet",
]


def key_fixed_reasons(apps, schema_editor):
    for name in ("MemoryEdit", "Proposal"):
        model = apps.get_model("memories", name)
        for text in FIXED_REASONS:
            model.objects.filter(reason=text).update(reason_key={"msgid": text, "params": {}})


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0013_console_page_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatmessage",
            name="content_key",
            field=core.models.MessageKeyField(blank=True, default=dict, text_field="content"),
        ),
        migrations.AddField(
            model_name="memoryedit",
            name="reason_key",
            field=core.models.MessageKeyField(blank=True, default=dict, text_field="reason"),
        ),
        migrations.AddField(
            model_name="proposal",
            name="reason_key",
            field=core.models.MessageKeyField(blank=True, default=dict, text_field="reason"),
        ),
        migrations.RunPython(key_fixed_reasons, migrations.RunPython.noop),
    ]
