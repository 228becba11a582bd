from django.contrib import admin

from knowledge.models import Chunk, Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "namespace", "user", "status", "progress", "size", "created_at"]
    list_filter = ["status", "namespace"]
    search_fields = ["title", "original_name", "sha256"]
    raw_id_fields = ["user"]
    readonly_fields = ["sha256", "size", "mime", "status", "progress", "error", "ready_at"]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["document", "ordinal", "heading_path", "token_count", "mirror_state"]
    list_filter = ["mirror_state", "namespace"]
    search_fields = ["text", "heading_path"]
    raw_id_fields = ["document", "user"]
