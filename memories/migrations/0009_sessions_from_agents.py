"""AgentSession and ChatMessage move from agents to memories (issue 13) without touching a row: their tables keep
the names agents gave them, so this migration changes Django's state only (agents 0002 drops the old models from
it), and renames their content types so admin history and permissions follow the models."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MOVED = ["agentsession", "chatmessage"]


def _relabel(apps, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects
    if not content_types.filter(app_label=new, model__in=MOVED).exists():
        content_types.filter(app_label=old, model__in=MOVED).update(app_label=new)


def content_types_to_memories(apps, schema_editor):
    _relabel(apps, "agents", "memories")


def content_types_to_agents(apps, schema_editor):
    _relabel(apps, "memories", "agents")


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("memories", "0008_user_archived_created_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AgentSession",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                            ),
                        ),
                        ("key", models.CharField(max_length=200)),
                        ("title", models.CharField(blank=True, max_length=200)),
                        (
                            "started_at",
                            models.DateTimeField(db_index=True, default=django.utils.timezone.now),
                        ),
                        ("ended_at", models.DateTimeField(blank=True, null=True)),
                        ("metadata", models.JSONField(blank=True, default=dict)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="agent_sessions",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "agents_agentsession",
                        "ordering": ["-started_at"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("user", "key"), name="unique_session_key_per_user"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ChatMessage",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[
                                    ("system", "system"),
                                    ("user", "user"),
                                    ("assistant", "assistant"),
                                    ("tool", "tool"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("content", models.TextField(blank=True)),
                        ("tool_calls", models.JSONField(blank=True, default=list)),
                        ("retrieved", models.JSONField(blank=True, default=dict)),
                        ("prompt_tokens", models.PositiveIntegerField(default=0)),
                        ("completion_tokens", models.PositiveIntegerField(default=0)),
                        ("latency_ms", models.PositiveIntegerField(default=0)),
                        ("error", models.TextField(blank=True)),
                        (
                            "created_at",
                            models.DateTimeField(db_index=True, default=django.utils.timezone.now),
                        ),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="messages",
                                to="memories.agentsession",
                            ),
                        ),
                    ],
                    options={"db_table": "agents_chatmessage", "ordering": ["created_at"]},
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="session",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="memories",
                        to="memories.agentsession",
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
                        to="memories.chatmessage",
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryaccess",
                    name="session",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to="memories.agentsession",
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_to_memories, content_types_to_agents),
    ]
