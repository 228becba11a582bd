from django.contrib import admin

from core.models import ApiKey, PrivacySettings, SubjectChange


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "scope", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["scope", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    # The hash is useless to an admin and the secret is never stored: keys are made on the API keys page.
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
