"""AgentSession and ChatMessage now belong to conversations (conversations 0001 takes them over with their
tables): memories points its foreign keys there and forgets the models, in Django's state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0001_initial"),
        ("memories", "0014_message_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memoryaccess",
                    name="session",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to="conversations.agentsession",
                    ),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="session",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="memories",
                        to="conversations.agentsession",
                    ),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="source_message",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="captured_memories",
                        to="conversations.chatmessage",
                    ),
                ),
                migrations.DeleteModel(name="ChatMessage"),
                migrations.DeleteModel(name="AgentSession"),
            ],
        ),
    ]
