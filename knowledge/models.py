import uuid
from collections.abc import Sequence

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from core.models import MessageKeyField, MirroredModel, StoredTextQuerySet, TimeStampedModel
from core.stored_text import shown


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    CONVERTING = "converting", _("converting")
    CHUNKING = "chunking", _("chunking")
    EMBEDDING = "embedding", _("embedding")
    READY = "ready", _("ready")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")
    PAUSED = "paused", _("paused")  # waiting for disk space (core/disk.py); the resume sweep starts it again


class DocumentQuerySet(StoredTextQuerySet):
    def for_user(self, user):
        return self.filter(user=user)

    def with_chunk_count(self):
        """Each document's chunk count as a correlated subquery: a GROUP BY over documents would group by every
        column, the whole Markdown included (1.35 s for one 2 MB document)."""
        chunks = (
            Chunk.objects.filter(document=models.OuterRef("pk"))
            .order_by()
            .values("document")
            .annotate(n=models.Count("pk"))
            .values("n")
        )
        return self.annotate(chunk_count=Coalesce(models.Subquery(chunks), 0))


class Document(TimeStampedModel):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="documents")
    namespace = models.CharField(max_length=100, default="default")
    title = models.CharField(max_length=255)
    original_name = models.CharField(max_length=255, blank=True)
    file = models.FileField(upload_to="documents/%Y/%m/", blank=True)
    sha256 = models.CharField(max_length=64)
    mime = models.CharField(max_length=100, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=DocumentStatus, default=DocumentStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    error = models.TextField(blank=True)
    # The error's and the notice's message keys (core.stored_text): the text above stays English (the API returns
    # it as it is), and a page shows the key in its reader's language. {} for plain text and older rows.
    error_key = MessageKeyField(text_field="error")
    # What the reader should know about a document that did not fail: an image with no text to index, a text
    # read as GB18030. Shown on its page and in the API.
    notice = models.TextField(blank=True)
    notice_key = MessageKeyField(text_field="notice")
    markdown = models.TextField(blank=True)
    # Secrets and personal data found in the converted text (core.privacy): kinds and actions, never values.
    privacy_findings = models.JSONField(default=list, blank=True)
    chunk_size = models.PositiveIntegerField(default=800)
    chunk_overlap = models.PositiveIntegerField(default=100)
    ready_at = models.DateTimeField(null=True, blank=True)
    # A paused document's ingestion needs this many bytes beyond the disk reserve to go on.
    space_needed = models.PositiveBigIntegerField(default=0)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "namespace", "sha256"], name="unique_document_per_namespace"
            )
        ]
        indexes = [models.Index(fields=["user", "namespace", "status"], name="document_user_ns_status")]

    def __str__(self) -> str:
        return self.title

    @property
    def error_shown(self) -> str:
        """The error in the reader's language (the stored English when it has no key)."""
        return shown(self.error, self.error_key)

    @property
    def notice_shown(self) -> str:
        return shown(self.notice, self.notice_key)


class ChunkQuerySet(models.QuerySet):
    """The chunks' "which ones", in the memories' words (memories.models.MemoryQuerySet)."""

    def for_user(self, user):
        return self.filter(user=user)

    def active(self):
        """Enabled chunks of documents that finished ingestion: the only ones search, the tools and the mirror
        read (a disabled chunk is kept, with no vector)."""
        return self.filter(document__status=DocumentStatus.READY, enabled=True)

    def filtered(self, *, namespaces: Sequence[str] | None = None):
        return self.filter(namespace__in=list(namespaces)) if namespaces else self


class Chunk(MirroredModel):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # Owner and namespace are copied from the document so every vector filter and query is scoped without a join.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chunks")
    namespace = models.CharField(max_length=100)
    ordinal = models.PositiveIntegerField()
    heading_path = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # Where the text came from, for citations: the PDF pages it spans (1-based), or the workbook sheet.
    page_start = models.PositiveIntegerField(null=True, blank=True)
    page_end = models.PositiveIntegerField(null=True, blank=True)
    sheet = models.CharField(max_length=100, blank=True)
    # A disabled chunk stays (with its text and history) but has no vector and is never returned by a search.
    enabled = models.BooleanField(default=True)
    edited_at = models.DateTimeField(null=True, blank=True)  # the last change of its text by a person

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="unique_chunk_ordinal")]
        indexes = [models.Index(fields=["user", "namespace"], name="chunk_user_ns")]

    objects = ChunkQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.document.title} #{self.ordinal}"

    @property
    def location(self) -> str:
        """Where a citation says the passage is: "page 3", "pages 3–4", "sheet Sales", or nothing."""
        return location_label(page_start=self.page_start, page_end=self.page_end, sheet=self.sheet)


PAGES = gettext_noop("pages %(start)s–%(end)s")
PAGE = gettext_noop("page %(page)s")
SHEET = gettext_noop("sheet %(sheet)s")


def location_label(
    *, page_start: int | None, page_end: int | None, sheet: str, translated: bool = False
) -> str:
    """Where a passage is. English unless `translated` (the pages' words): the API and the citations stored
    with chat answers keep the English they always gave."""
    words = gettext if translated else str
    if page_start:
        if page_end and page_end != page_start:
            return words(PAGES) % {"start": page_start, "end": page_end}
        return words(PAGE) % {"page": page_start}
    return words(SHEET) % {"sheet": sheet} if sheet else ""


class ChunkEditVia(models.TextChoices):
    PAGE = "page", _("page")
    API = "api", _("API")
    ADMIN = "admin", _("admin")


class ChunkEdit(models.Model):
    """One change to a chunk by a person: its text (old and new kept) or whether it is searchable.

    `changes` is {"text": [old, new]} or {"enabled": [old, new]}, as memories' edit history records fields.
    Re-chunking the document replaces its chunks, and their history goes with them."""

    id = models.BigAutoField(primary_key=True)
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="edits")
    editor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    api_key = models.ForeignKey("core.ApiKey", on_delete=models.SET_NULL, null=True, blank=True)
    via = models.CharField(max_length=5, choices=ChunkEditVia)
    changes = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.via} edit of chunk {self.chunk_id} at {self.created_at:%Y-%m-%d %H:%M}"
