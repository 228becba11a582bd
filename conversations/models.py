"""Sessions and chat messages (issue 34: the app that owns them). The tables keep the names they were created
with while the models lived in agents: no row was ever copied, only Django's state moved (agents → memories in
issue 13, memories → conversations here)."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.models import MessageKeyField, StoredTextQuerySet
from core.stored_text import shown


class AgentSessionQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(user=user)


class AgentSession(models.Model):
    """One conversation of one user with an agent; working memory lives inside it. The pages and API that list
    sessions are memories' (session_for_key, the sessions pages, /api/v1/sessions), since a session is a filter
    on memories there."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions"
    )
    # The caller's own name for the session (Hello-Agents passes free-form session ids such as "session_1").
    key = models.CharField(max_length=200)
    title = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    objects = AgentSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="unique_session_key_per_user")]

    def __str__(self) -> str:
        return self.title or self.key


class ChatRole(models.TextChoices):
    SYSTEM = "system", _("system")
    USER = "user", _("user")
    ASSISTANT = "assistant", _("assistant")
    TOOL = "tool", _("tool")


class ChatMessage(models.Model):
    """One turn of a session. The agent writes them; they live beside the session because memories are
    captured from them and cite them (Memory.source_message, provenance, undelete)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=ChatRole)
    content = models.TextField(blank=True)
    # A note Mnemo wrote in place of the content ("[Not stored: …]") keeps its message key for the chat page.
    content_key = MessageKeyField(text_field="content")
    # OpenAI-style tool calls with their results, in the order the agent made them.
    tool_calls = models.JSONField(default=list, blank=True)
    # Ids of the memories and chunks put into the prompt, for citations: {"memories": [...], "chunks": [...]}.
    retrieved = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = StoredTextQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"

    @property
    def content_shown(self) -> str:
        """The content, or the note Mnemo wrote in its place in the reader's language."""
        return shown(self.content, self.content_key)
