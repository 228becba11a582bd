import uuid
from collections.abc import Sequence

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce

from core.models import MirroredModel, TimeStampedModel


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    CONVERTING = "converting", "converting"
    CHUNKING = "chunking", "chunking"
    EMBEDDING = "embedding", "embedding"
    READY = "ready", "ready"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"
    PAUSED = "paused", "paused"  # waiting for disk space (core/disk.py); the resume sweep starts it again


class DocumentQuerySet(models.QuerySet):
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


class ChunkQuerySet(models.QuerySet):
    """The chunks' "which ones", in the memories' words (memories.models.MemoryQuerySet)."""

    def for_user(self, user):
        return self.filter(user=user)

    def active(self):
        """Chunks of documents that finished ingestion: the only ones search, the tools and the mirror read."""
        return self.filter(document__status=DocumentStatus.READY)

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

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="unique_chunk_ordinal")]
        indexes = [models.Index(fields=["user", "namespace"], name="chunk_user_ns")]

    objects = ChunkQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.document.title} #{self.ordinal}"
