import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from conversations.models import AgentSession, ChatMessage
from core.models import MessageKeyField, MirroredModel, MirrorState
from core.stored_text import shown
from core.text import fingerprint


class MemoryType(models.TextChoices):
    WORKING = "working", _("working")
    EPISODIC = "episodic", _("episodic")
    SEMANTIC = "semantic", _("semantic")
    PERCEPTUAL = "perceptual", _("perceptual")


# metadata["origin"] of a chat copy: the working memory the chat agent keeps of each message it receives.
CHAT_ORIGIN = "chat"


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


# Printable ASCII but the quote, backslash and slash: what Python's and SQLite's JSON write as it is, unescaped.
PLAIN_JSON_STRING = re.compile(r"[ !#-.0-\[\]-~]+")


class HasTag(models.Lookup):
    """`tags__has_tag="x"`: the JSON list holds the string "x". Django's `contains` on a JSONField does this on
    PostgreSQL but not on SQLite, where json_each reads the list."""

    lookup_name = "has_tag"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        # lhs is the column and rhs a placeholder, both from Django's compiler; the tag travels as a parameter.
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        if connection.vendor == "postgresql":
            return f"{lhs} @> jsonb_build_array({rhs}::text)", [*lhs_params, *rhs_params]
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE json_each.value = {rhs})"  # noqa: S608
        params = [*lhs_params, *rhs_params]
        tag = rhs_params[0] if len(rhs_params) == 1 else None
        if isinstance(tag, str) and PLAIN_JSON_STRING.fullmatch(tag):
            # A plain tag is stored as itself in quotes: rows without that text are passed over before json_each
            # reads their list, which halves a tag filter's count over 100,000 memories (107 -> 62 ms).
            return f"(instr({lhs}, %s) > 0 AND {sql})", [*lhs_params, f'"{tag}"', *params]
        return sql, params


class MemoryQuerySet(models.QuerySet):
    """The one vocabulary for "which memories": the API, the pages, the tools and retrieval all speak it."""

    def for_user(self, user: Any) -> "MemoryQuerySet":
        return self.filter(user=user)

    def listed(self, archived: bool = False) -> "MemoryQuerySet":
        """What a list shows: the archived ones when asked, else the others (expired working memory too)."""
        return self.exclude(archived_at=None) if archived else self.filter(archived_at=None)

    def active(self, now: datetime | None = None) -> "MemoryQuerySet":
        """Not archived and, for working memory, not past its TTL (superseded facts included)."""
        return self.filter(archived_at=None).exclude(expires_at__lte=now or timezone.now())

    def current(self, now: datetime | None = None) -> "MemoryQuerySet":
        """Active and not superseded by a newer fact: what search, the chat and the profile read by default."""
        return self.active(now).filter(superseded_by=None)

    def without_chat_copies(self) -> "MemoryQuerySet":
        """Leave out the working-memory copies of chat messages ("hi", "where do I work?"): the conversation's
        own context, not something another session or an API caller searches for."""
        # With has_key: a missing key compares as NULL, and NOT (working AND NULL) is NULL, which would leave out
        # every working memory without the key; has_key is false there, so the AND is false and the NOT true.
        return self.exclude(
            models.Q(memory_type=MemoryType.WORKING)
            & models.Q(metadata__has_key="origin")
            & models.Q(metadata__origin=CHAT_ORIGIN)
        )

    def filtered(
        self,
        *,
        memory_types: Sequence[str] | None = None,
        session=None,
        session_key: str | None = None,
        min_importance: float | None = None,
        max_importance: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        superseded: bool | None = None,
        contains: str | None = None,
        tag: str | None = None,
        origin: str | None = None,
        origin_key: int | None = None,
    ) -> "MemoryQuerySet":
        """The filters that lists and searches offer, each applied only when given."""
        memories = self
        if tag:
            memories = memories.filter(tags__has_tag=tag)
        if origin:
            memories = memories.filter(origin=origin)
        if origin_key is not None:
            memories = memories.filter(origin_key=origin_key)
        if memory_types:
            memories = memories.filter(memory_type__in=list(memory_types))
        if session is not None:
            memories = memories.filter(session=session)
        if session_key:
            memories = memories.filter(session__key=session_key)
        # Importance is checked on each row, not as a range of the (user, -importance) index (hence the + 0):
        # lists are newest first, and with that range the planner read and sorted half of 100,000 rows for one
        # page (the browser's session + importance filter, 340 ms in bench/console_pages.py).
        importance = models.F("importance") + 0.0
        if min_importance is not None:
            memories = memories.filter(GreaterThanOrEqual(importance, min_importance))
        if max_importance is not None:
            memories = memories.filter(LessThanOrEqual(importance, max_importance))
        if since:
            memories = memories.filter(created_at__gte=since)
        if until:
            memories = memories.filter(created_at__lte=until)
        if superseded is not None:
            memories = memories.filter(superseded_by__isnull=not superseded)
        if contains:
            memories = memories.filter(content__icontains=contains)
        return memories


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
