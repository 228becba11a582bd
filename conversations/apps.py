from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    """Sessions and their chat messages: what an agent and a user said, which memories are captured from and cite.
    Below memories in the layers (a memory points at its session and at the message it came from)."""

    name = "conversations"
