from django.contrib import admin

from conversations.models import AgentSession, ChatMessage


class ChatMessageInline(admin.TabularInline):
    model = ChatMessage
    extra = 0
    fields = readonly_fields = (
        "role",
        "content",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
        "error",
        "created_at",
    )


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = ["key", "title", "user", "started_at", "ended_at"]
    list_filter = ["started_at"]
    search_fields = ["key", "title", "user__username"]
    inlines = [ChatMessageInline]


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    list_display = ["session", "role", "created_at", "prompt_tokens", "completion_tokens", "latency_ms"]
    list_filter = ["role"]
    search_fields = ["content"]
    raw_id_fields = ["session"]
