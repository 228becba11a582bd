from django.contrib import admin

from core.models import ApiKey, PrivacySettings


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
