"""AgentSession and ChatMessage move from memories to conversations (issue 34) without touching a row: this
migration takes them into Django's state with the tables they have (memories 0015 drops them from memories'
state), and relabels their content types so admin history and permissions follow the models. 0002 then renames
the tables, which still carried the name of the app that first held them (agents)."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import core.models

MOVED = ["agentsession", "chatmessage"]


def _relabel(apps, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects
    if not content_types.filter(app_label=new, model__in=MOVED).exists():
        content_types.filter(app_label=old, model__in=MOVED).update(app_label=new)


def content_types_to_conversations(apps, schema_editor):
    _relabel(apps, "memories", "conversations")


def content_types_to_memories(apps, schema_editor):
    _relabel(apps, "conversations", "memories")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("memories", "0014_message_keys"),
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
                        (
                            "content_key",
                            core.models.MessageKeyField(blank=True, default=dict, text_field="content"),
                        ),
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
                                to="conversations.agentsession",
                            ),
                        ),
                    ],
                    options={"db_table": "agents_chatmessage", "ordering": ["created_at"]},
                ),
            ],
        ),
        migrations.RunPython(content_types_to_conversations, content_types_to_memories),
    ]
