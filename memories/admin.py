from django.contrib import admin

from memories.models import (
    Entity,
    Fact,
    GraphEdit,
    Memory,
    MemoryAccess,
    MemoryEdit,
    MemoryEntity,
    Proposal,
    Relation,
)


class MemoryEditInline(admin.TabularInline):
    model = MemoryEdit
    extra = 0
    readonly_fields = ["editor", "api_key", "via", "changes", "reason", "created_at"]
    can_delete = False


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ["content", "memory_type", "user", "importance", "mirror_state", "created_at"]
    list_filter = ["memory_type", "origin", "mirror_state", "archived_at", "valid_to"]
    search_fields = ["content", "user__username"]
    raw_id_fields = ["user", "session", "source_message", "source_document", "superseded_by"]
    readonly_fields = [
        "mirror_state",
        "mirror_error",
        "mirrored_at",
        "access_count",
        "last_accessed_at",
        "seen_count",
        "last_seen_at",
        "sources",
        "origin",  # how it was first written: a record, not a setting
        "origin_key",
    ]
    date_hierarchy = "created_at"
    inlines = [MemoryEditInline]


@admin.register(MemoryEdit)
class MemoryEditAdmin(admin.ModelAdmin):
    list_display = ["memory", "via", "editor", "created_at"]
    list_filter = ["via"]
    raw_id_fields = ["memory", "editor", "api_key"]


@admin.register(GraphEdit)
class GraphEditAdmin(admin.ModelAdmin):
    """The graph's change record, read-only: it is written by memories.graph's services."""

    list_display = ["action", "label", "user", "via", "editor", "created_at"]
    list_filter = ["action", "via"]
    search_fields = ["label", "user__username"]
    raw_id_fields = ["user", "editor", "api_key"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MemoryAccess)
class MemoryAccessAdmin(admin.ModelAdmin):
    list_display = ["memory", "user", "via", "query", "score", "created_at"]
    list_filter = ["via"]
    raw_id_fields = ["memory", "user", "api_key", "session"]


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["name", "entity_type", "user", "frequency", "mirror_state"]
    list_filter = ["entity_type", "mirror_state"]
    search_fields = ["name", "key"]
    raw_id_fields = ["user"]


@admin.register(Relation)
class RelationAdmin(admin.ModelAdmin):
    list_display = ["source", "relation_type", "target", "strength", "frequency", "user"]
    list_filter = ["relation_type"]
    raw_id_fields = ["user", "source", "target", "evidence"]


@admin.register(MemoryEntity)
class MemoryEntityAdmin(admin.ModelAdmin):
    list_display = ["memory", "entity", "mention"]
    raw_id_fields = ["memory", "entity"]


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = ["key", "value", "memory", "user"]
    search_fields = ["key", "value"]
    raw_id_fields = ["user", "memory"]


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ["action", "memory", "target", "status", "user", "created_at"]
    list_filter = ["action", "status"]
    raw_id_fields = ["user", "memory", "target"]
