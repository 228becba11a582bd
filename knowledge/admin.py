from django.contrib import admin
from django.utils import timezone

from knowledge.models import Chunk, ChunkEdit, ChunkEditVia, Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "namespace", "user", "status", "progress", "size", "created_at"]
    list_filter = ["status", "namespace"]
    search_fields = ["title", "original_name", "sha256"]
    raw_id_fields = ["user"]
    readonly_fields = ["sha256", "size", "mime", "status", "progress", "error", "notice", "ready_at"]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["document", "ordinal", "heading_path", "page_start", "sheet", "enabled", "mirror_state"]
    list_filter = ["enabled", "mirror_state", "namespace"]
    search_fields = ["text", "heading_path"]
    raw_id_fields = ["document", "user"]
    readonly_fields = ["edited_at"]

    def save_model(self, request, obj, form, change):
        """An operator's change of the text or of `enabled` is recorded in the chunk's history like a user's; the
        save itself re-mirrors the chunk (knowledge.signals)."""
        curated = [name for name in ("text", "enabled") if change and name in form.changed_data]
        if "text" in curated:
            obj.edited_at = timezone.now()
        super().save_model(request, obj, form, change)
        if curated:
            changes = {name: [form.initial[name], getattr(obj, name)] for name in curated}
            ChunkEdit.objects.create(chunk=obj, editor=request.user, via=ChunkEditVia.ADMIN, changes=changes)


@admin.register(ChunkEdit)
class ChunkEditAdmin(admin.ModelAdmin):
    list_display = ["chunk", "via", "editor", "created_at"]
    list_filter = ["via"]
    raw_id_fields = ["chunk", "editor", "api_key"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a record of what happened
