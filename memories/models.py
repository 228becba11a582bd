from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from conversations.models import AgentSession, ChatMessage
from core.models import MessageKeyField, MirroredModel, MirrorState, StoredTextQuerySet
from core.stored_text import shown
from core.text import fingerprint
from memories.querysets import CHAT_ORIGIN, HasTag, MemoryQuerySet
from memories.types import MemoryType, MemoryTypePolicy, policy_of


class EditVia(models.TextChoices):
    """The route a write came through: an edit's, an access's and a memory's origin (how it was first written)."""

    PAGE = "page", _("page")
    API = "api", _("API")
    MCP = "mcp", _("MCP")
    OPENAI = "openai", _("OpenAI endpoint")
    TOOL = "tool", _("tool")
    ADMIN = "admin", _("admin")
    SYSTEM = "system", _("system")
    CHAT = "chat", _("chat")
    DOCUMENT = "doc", _("document")
    IMPORT = "import", _("import")


# The routes that carry an API key: a memory written through one records the key (Memory.origin_key).
KEYED_VIA = frozenset({EditVia.API, EditVia.MCP, EditVia.OPENAI})


class Memory(MirroredModel):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories")
    session = models.ForeignKey(
        AgentSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="memories"
    )
    memory_type = models.CharField(max_length=10, choices=MemoryType, default=MemoryType.WORKING)
    content = models.TextField()
    importance = models.FloatField(default=0.5)
    metadata = models.JSONField(default=dict, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)  # working memory TTL
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    archived_at = models.DateTimeField(null=True, blank=True)
    source_message = models.ForeignKey(
        ChatMessage,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="captured_memories",
    )
    source_document = models.ForeignKey(
        "knowledge.Document", on_delete=models.SET_NULL, null=True, blank=True, related_name="memories"
    )
    # Episodic detail (Hello-Agents' Episode: context, outcome, participants, tags).
    context = models.TextField(blank=True)
    outcome = models.TextField(blank=True)
    participants = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    # Perceptual memory: what kind of input, and the file when there is one.
    modality = models.CharField(max_length=10, default="text", blank=True)
    file = models.FileField(upload_to="perceptual/%Y/%m/", blank=True)
    # Curation: exact duplicates share a fingerprint; a repeat is counted on the memory it repeats, with its
    # source; a newer fact about the same subject and attribute supersedes this one (kept, never deleted).
    content_hash = models.CharField(max_length=64, blank=True, editable=False)
    seen_count = models.PositiveIntegerField(default=1)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    sources = models.JSONField(default=list, blank=True)  # [{"via", "api_key", "message", "document", "at"}]
    # How it was first written (the first of `sources`, as columns to filter and count by): the route, and the
    # API key for the routes that carry one (API, MCP, the OpenAI endpoint).
    origin = models.CharField(max_length=6, choices=EditVia, default=EditVia.SYSTEM)
    origin_key = models.ForeignKey(
        "core.ApiKey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )

    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "memories"
        indexes = [
            models.Index(fields=["user", "-created_at"], name="memory_user_created"),
            # The browser's total and its pages: active (or archived) rows newest first, counted from the index; the
            # id makes it the list's whole order, so a deep page (?page=1000) skips its rows in the index alone.
            models.Index(
                fields=["user", "archived_at", "-created_at", "-id"], name="memory_user_archived_order"
            ),
            models.Index(fields=["user", "memory_type", "-created_at"], name="memory_user_type_created"),
            models.Index(fields=["user", "session", "-created_at"], name="memory_user_session_created"),
            models.Index(fields=["user", "-importance"], name="memory_user_importance"),
            models.Index(fields=["mirror_state"], name="memory_mirror_state"),
            models.Index(fields=["user", "content_hash"], name="memory_user_content_hash"),
            # The dashboard's most and least retrieved memories, oldest (or newest) of equal counts first.
            models.Index(fields=["user", "access_count", "created_at"], name="memory_user_access_created"),
            # The browser's source filter.
            models.Index(fields=["user", "origin", "-created_at"], name="memory_user_origin_created"),
            # The dashboard's count per source and key, read from the index alone.
            models.Index(fields=["user", "origin", "origin_key"], name="memory_user_origin_key"),
            # The memories a fact replaced (its detail page): without it the planner walks the user's rows.
            models.Index(fields=["superseded_by", "user"], name="memory_superseded_by_user"),
            # On SQLite, memories.migrations.0013_console_page_indexes adds (user, tags) for the count per tag:
            # not here, as a PostgreSQL B-tree entry holds at most ~2.7 KB and a memory's tags may be longer.
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(importance__gte=0) & models.Q(importance__lte=1),
                name="memory_importance_0_1",
            )
        ]

    def __str__(self) -> str:
        return f"[{self.memory_type}] {self.content[:60]}"

    @property
    def origin_label(self) -> str:
        """How it was first written, for people: "MCP · claude-desktop", "page", "import"."""
        label = self.get_origin_display()
        return f"{label} · {self.origin_key.name}" if self.origin_key_id and self.origin_key else label

    @property
    def policy(self) -> MemoryTypePolicy:
        """How its type behaves (memories.types): expiry, capacity, graph linking, the fields it shows."""
        return policy_of(self.memory_type)

    @property
    def is_chat_copy(self) -> bool:
        return self.memory_type == MemoryType.WORKING and self.metadata.get("origin") == CHAT_ORIGIN

    def save(self, *args, **kwargs) -> None:
        # Derived from the content on every save, so no route (admin, shell, service) can leave it stale.
        self.content_hash = fingerprint(self.content)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "content" in update_fields:
            kwargs["update_fields"] = {*update_fields, "content_hash"}
        super().save(*args, **kwargs)


class MemoryEdit(models.Model):
    """One change to a memory: who made it, through which route, and each field's old and new value."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="edits")
    editor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    api_key = models.ForeignKey("core.ApiKey", on_delete=models.SET_NULL, null=True, blank=True)
    via = models.CharField(max_length=6, choices=EditVia)
    changes = models.JSONField(default=dict)  # {"field": [old, new]}
    reason = models.TextField(blank=True)  # why a curation decision (merge, supersede, restore) was made
    # The reason's message key (core.stored_text): the reason stays English, the page shows it translated.
    reason_key = MessageKeyField(text_field="reason")
    created_at = models.DateTimeField(default=timezone.now)

    objects = StoredTextQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.via} edit of {self.memory_id} at {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def reason_shown(self) -> str:
        """The reason in the reader's language (as stored when it has no key)."""
        return shown(self.reason, self.reason_key)


class MemoryAccess(models.Model):
    """A memory returned by a search: to whom, through which key or session, for which query."""

    id = models.BigAutoField(primary_key=True)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="accesses")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    api_key = models.ForeignKey("core.ApiKey", on_delete=models.SET_NULL, null=True, blank=True)
    session = models.ForeignKey(AgentSession, on_delete=models.SET_NULL, null=True, blank=True)
    query = models.TextField(blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True)  # 1 = the top result; None: before 0006
    score = models.FloatField(default=0)
    via = models.CharField(max_length=6, choices=EditVia)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "memory accesses"

    def __str__(self) -> str:
        return f"{self.memory_id} returned for {self.query[:40]!r}"


class EntityType(models.TextChoices):
    PERSON = "PERSON", _("person")
    ORG = "ORG", _("organisation")
    PLACE = "PLACE", _("place")
    PRODUCT = "PRODUCT", _("product")
    SKILL = "SKILL", _("skill")
    EVENT = "EVENT", _("event")
    TIME = "TIME", _("time")
    CONCEPT = "CONCEPT", _("concept")
    OTHER = "OTHER", _("other")


class GraphMirroredModel(MirroredModel):
    """A row of the entity graph: mirrored to Neo4j when NEO4J_URI is set, else its table is the graph itself."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        # Without Neo4j a saved row is already where graph queries look, so it is synced as it is written. With
        # Neo4j it stays as the writer left it (pending) until the mirror task records the outcome.
        if not settings.NEO4J_URI and self.mirror_state != MirrorState.SYNCED:
            self.mirror_state, self.mirror_error, self.mirrored_at = MirrorState.SYNCED, "", timezone.now()
        super().save(*args, **kwargs)


class Entity(GraphMirroredModel):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="entities")
    name = models.CharField(max_length=200)
    key = models.CharField(max_length=200, help_text="Normalised name: the merge key per user.")
    entity_type = models.CharField(max_length=10, choices=EntityType, default=EntityType.CONCEPT)
    description = models.TextField(blank=True)
    frequency = models.PositiveIntegerField(default=1)
    memories = models.ManyToManyField(Memory, through="MemoryEntity", related_name="entities")

    class Meta:
        ordering = ["-frequency", "name"]
        verbose_name_plural = "entities"
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="unique_entity_key_per_user")]
        indexes = [models.Index(fields=["user", "entity_type"], name="entity_user_type")]

    def __str__(self) -> str:
        return f"{self.name} ({self.entity_type})"


class Relation(GraphMirroredModel):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="relations")
    source = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="outgoing")
    target = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="incoming")
    relation_type = models.CharField(max_length=50, default="RELATED_TO")
    strength = models.FloatField(default=0.5)
    frequency = models.PositiveIntegerField(default=1)
    evidence = models.ForeignKey(Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-strength"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "source", "target", "relation_type"], name="unique_relation_per_user"
            )
        ]
        # The unique constraint's index (user, source, target, …) serves lookups by source; this one serves
        # lookups by target and, holding the source too, answers a graph hop without reading the table.
        indexes = [models.Index(fields=["user", "target", "source"], name="relation_user_target_source")]

    def __str__(self) -> str:
        return f"{self.source.name} -{self.relation_type}-> {self.target.name}"


class MemoryEntity(models.Model):
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="entity_links")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="memory_links")
    mention = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name_plural = "memory entities"
        constraints = [models.UniqueConstraint(fields=["memory", "entity"], name="unique_memory_entity")]

    def __str__(self) -> str:
        return f"{self.memory_id} mentions {self.entity_id}"


class Fact(models.Model):
    """A single-valued fact a semantic memory states (memories.facts): the index that finds what a newer memory
    about the same subject and attribute supersedes."""

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="facts")
    key = models.CharField(max_length=200)  # "subject|attribute"
    value = models.CharField(max_length=200)

    class Meta:
        indexes = [models.Index(fields=["user", "key"], name="fact_user_key")]

    def __str__(self) -> str:
        return f"{self.key} = {self.value}"


class ProposalAction(models.TextChoices):
    MERGE = "merge", _("merge")
    SUPERSEDE = "supersede", _("supersede")


class ProposalStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    APPROVED = "approved", _("approved")
    REJECTED = "rejected", _("rejected")
    UNDONE = "undone", _("undone")


class Proposal(models.Model):
    """A cleaning step waiting for review (memories.cleaning): fold `memory` into `target` (merge), or mark
    `memory` as replaced by the newer `target` (supersede)."""

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=9, choices=ProposalAction)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    reason = models.TextField(blank=True)
    reason_key = MessageKeyField(text_field="reason")
    status = models.CharField(max_length=8, choices=ProposalStatus, default=ProposalStatus.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    objects = StoredTextQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "status", "-created_at"], name="proposal_user_status")]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id} → {self.target_id} ({self.status})"

    @property
    def reason_shown(self) -> str:
        return shown(self.reason, self.reason_key)


class GraphAction(models.TextChoices):
    RENAME = "rename", _("renamed")
    RETYPE = "retype", _("retyped")
    MERGE = "merge", _("merged")
    DELETE = "delete", _("deleted")
    EDIT_RELATION = "edit_rel", _("relation edited")
    DELETE_RELATION = "del_rel", _("relation deleted")


class GraphEdit(models.Model):
    """One curation of the entity graph: who did it, through which route, and what changed.

    Entities and relations are named by id, not by foreign key, so the record outlives a deleted or merged row.
    """

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    editor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    api_key = models.ForeignKey("core.ApiKey", on_delete=models.SET_NULL, null=True, blank=True)
    via = models.CharField(max_length=6, choices=EditVia)
    action = models.CharField(max_length=8, choices=GraphAction)
    entity_id = models.UUIDField(null=True, blank=True)
    relation_id = models.UUIDField(null=True, blank=True)
    label = models.CharField(
        max_length=300
    )  # the entity's name or "source -TYPE-> target" when it was edited
    changes = models.JSONField(default=dict)  # {"field": [old, new]}
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "entity_id"], name="graphedit_user_entity")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.label} at {self.created_at:%Y-%m-%d %H:%M}"


Memory._meta.get_field("tags").register_lookup(HasTag)
