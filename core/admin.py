from django.contrib import admin

from core.models import ApiKey, MirrorOutbox, PrivacySettings, SubjectChange


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "scope", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["scope", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    # The hash is useless to an admin and the secret is never stored: keys are made on Settings → API keys.
    readonly_fields = ["prefix", "hashed_secret", "created_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(PrivacySettings)
class PrivacySettingsAdmin(admin.ModelAdmin):
    list_display = ["user", "secrets", "personal"]
    raw_id_fields = ["user"]


@admin.register(SubjectChange)
class SubjectChangeAdmin(admin.ModelAdmin):
    list_display = ["created_at", "staff", "subject", "method", "path", "status"]
    list_filter = ["method", "status"]
    search_fields = ["path", "staff__username", "subject__username"]
    raw_id_fields = ["staff", "subject"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MirrorOutbox)
class MirrorOutboxAdmin(admin.ModelAdmin):
    """What waits to be written to the vector stores and the graph (core.mirror_outbox): read-only, for an operator
    checking why a mirror is behind; the drain and the sweep own the rows."""

    list_display = ["created_at", "kind", "object_id", "claim", "claimed_until"]
    list_filter = ["kind"]
    search_fields = ["object_id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
