"""The tables take their app's default names (conversations_agentsession, conversations_chatmessage): they kept
agents_* through two moves of the models (issue 34). A rename in place, so every row and every foreign key to them
stays as it is."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0001_initial"),
        ("memories", "0015_sessions_to_conversations"),
    ]

    operations = [
        migrations.AlterModelTable(name="agentsession", table=None),
        migrations.AlterModelTable(name="chatmessage", table=None),
    ]
