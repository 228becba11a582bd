"""The knowledge base's write path: accept a file, ingest it in the background, delete it with its vectors.

Ingestion: queued → converting → chunking → embedding → ready | failed (or cancelled by the user). Every chunk is
embedded before anything is stored, and the rows and points are written together at the end; a failure on the
way removes whatever was written, so a document is either fully searchable or has no chunks and no vectors.
Re-chunking a document with other settings removes its chunks and runs the same ingestion again.

An image whose only text is its metadata (no LLM describes it, and there is no OCR) ends ready with no chunks and
a notice saying so: a chunk of "ImageSize: 200x60, Format: PNG" would only be found by searches it cannot answer.
"""

import hashlib
import logging
import re
import tempfile
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from core import disk, hybrid, privacy, stores
from core.dispatch import dispatch_later, dispatch_on_commit
from core.embeddings import EmbeddingError
from core.errors import RequestRefused
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import VectorStoreError
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.pipeline import (
    ConversionError,
    Converted,
    Part,
    chunk_paragraphs,
    safe_filename,
    split_paragraphs,
)
from knowledge.pipeline.bounded import Budget, LLMSettings, convert_bounded
from knowledge.pipeline.convert import SUPPORTED, detect_kind

logger = logging.getLogger(__name__)

COLLECTION = "chunks"
EMBED_BATCH = 64
NAMESPACE = re.compile(r"^[\w.\-]{1,100}$")
ACTIVE_STATES = (
    DocumentStatus.QUEUED,
    DocumentStatus.CONVERTING,
    DocumentStatus.CHUNKING,
    DocumentStatus.EMBEDDING,
)
# What a user may start again (a stalled document too: is_stalled).
RETRIABLE = (DocumentStatus.FAILED, DocumentStatus.CANCELLED, DocumentStatus.PAUSED)
# Ingestion touches its row at every step and embedding batch; an active document whose row has not moved for
# this long has no worker any more (the process was killed or crashed) and is started again.
STALLED_AFTER = timedelta(minutes=15)
NO_TEXT_IN_IMAGE = (
    "No text found in this image, so nothing of it is searchable: only its metadata (size, format, embedded "
    "tags) could be read, and there is no OCR. Configure an LLM (LLM_BASE_URL) to index a description of images."
)


class KnowledgeError(RequestRefused):
    """A request the knowledge base refuses."""


class Cancelled(Exception):
    pass


KEYWORD_FIELDS = ("user_id", "namespace", "document_id")
FLOAT_FIELDS = ("ordinal",)


def chunk_store():
    return stores.collection_store(COLLECTION, keyword_fields=KEYWORD_FIELDS, float_fields=FLOAT_FIELDS)


def check_namespace(namespace: str) -> str:
    namespace = (namespace or "default").strip()
    if not NAMESPACE.match(namespace):
        raise KnowledgeError("namespace may hold letters, digits, '_', '-' and '.', at most 100 characters")
    return namespace


def check_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not 50 <= chunk_size <= 8000:
        raise KnowledgeError(f"chunk_size must be between 50 and 8000 tokens (got {chunk_size})")
    if not 0 <= chunk_overlap < chunk_size / 2:
        raise KnowledgeError(
            f"chunk_overlap must be at least 0 and less than half of chunk_size (got {chunk_overlap})"
        )


@dataclass(frozen=True)
class Accepted:
    document: Document
    created: bool  # False: the same file was already in this namespace


@transaction.atomic
def document_create(
    *,
    user: User,
    file: UploadedFile,
    namespace: str = "default",
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    title: str = "",
    background: bool = True,
) -> Accepted:
    """Store an uploaded file and queue its ingestion; the same file twice in a namespace is one document."""
    namespace = check_namespace(namespace)
    check_chunking(chunk_size, chunk_overlap)
    name = safe_filename(file.name or "document")
    limit = settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024
    size = file.size
    if not size:  # UploadedFile.size may be None in the stubs; Django's upload handlers always set it
        raise KnowledgeError(f"{name} is empty (0 bytes)")
    if size > limit:
        raise KnowledgeError(
            f"{name} is larger than the {settings.MNEMO_MAX_UPLOAD_MB} MB limit (MNEMO_MAX_UPLOAD_MB)", 413
        )
    disk.require_space(size, name)
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if extension not in SUPPORTED:
        raise KnowledgeError(
            f"unsupported file type .{extension or '?'}: supported are {', '.join(sorted(SUPPORTED))}", 415
        )
    digest = hashlib.sha256()
    file.seek(0)
    head = file.read(8192)
    try:
        kind = detect_kind(head, name)
    except ConversionError as exc:
        raise KnowledgeError(str(exc), 415) from None
    digest.update(head)
    for block in iter(lambda: file.read(1 << 20), b""):
        digest.update(block)
    sha256 = digest.hexdigest()
    existing = Document.objects.filter(user=user, namespace=namespace, sha256=sha256).first()
    if existing is not None:
        if existing.status in RETRIABLE or is_stalled(existing):
            document_retry(document=existing, background=background)
        return Accepted(existing, created=False)
    file.seek(0)
    stem, extension = name[: len(name) - len(Path(name).suffix)], Path(name).suffix
    # A secret in the title or the file's name is screened like the text (the extension stays for conversion).
    stem = privacy.screen_for(user, stem, "the file's name").text
    title = privacy.screen_for(user, title or stem, "the title").text
    document = Document(
        user=user,
        namespace=namespace,
        title=title[:255],
        original_name=stem + extension,
        sha256=sha256,
        mime=kind,
        size=size,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    document.file.save(document.original_name, File(file, name=document.original_name), save=False)
    document.save()
    _start(document, background)
    return Accepted(document, created=True)


def document_create_from_text(
    *,
    user: User,
    text: str,
    title: str,
    namespace: str = "default",
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    background: bool = True,
) -> Accepted:
    from django.core.files.uploadedfile import SimpleUploadedFile

    if not text or not text.strip():
        raise KnowledgeError("text must not be empty")
    name = safe_filename(f"{title or 'text'}.md")
    upload = SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/markdown")
    return document_create(
        user=user,
        file=upload,
        namespace=namespace,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        title=title,
        background=background,
    )


def _start(document: Document, background: bool) -> None:
    from knowledge.tasks import ingest_document

    if background:
        dispatch_on_commit(ingest_document, str(document.pk))
    else:
        transaction.on_commit(lambda: ingest(str(document.pk)))


def is_stalled(document: Document) -> bool:
    return document.status in ACTIVE_STATES and timezone.now() - document.updated_at >= STALLED_AFTER


def document_retry(*, document: Document, background: bool = True) -> Document:
    """Start a failed, cancelled, paused or stalled document again."""
    if document.status not in RETRIABLE and not is_stalled(document):
        why = f"this one is {document.status}"
        if document.status in ACTIVE_STATES:
            why += f" and still moving; one that stops for {STALLED_AFTER.seconds // 60} minutes is stalled"
        raise KnowledgeError(
            f"only failed, cancelled, paused or stalled documents can be retried ({why})", 409
        )
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.QUEUED, progress=0, error="", space_needed=0, updated_at=timezone.now()
    )
    _start(document, background)
    document.refresh_from_db()
    return document


def documents_resume_stalled(*, stalled_after: timedelta = STALLED_AFTER) -> list[str]:
    """Start again every document a killed or crashed worker left in an active state; their ids.

    The serving process calls it at start-up with no delay on the embedded default (its in-process pool is new,
    so nothing can still be working on them), and every sweep with STALLED_AFTER.
    """
    cutoff = timezone.now() - stalled_after
    resumed = []
    for document in Document.objects.filter(status__in=ACTIVE_STATES, updated_at__lte=cutoff):
        claimed = Document.objects.filter(
            pk=document.pk, status__in=ACTIVE_STATES, updated_at__lte=cutoff
        ).update(status=DocumentStatus.QUEUED, progress=0, error="", updated_at=timezone.now())
        if claimed:  # another sweep did not take it meanwhile
            logger.warning("resuming document %s, left %s by a stopped worker", document.pk, document.status)
            _start(document, background=True)
            resumed.append(str(document.pk))
    return resumed


def document_rechunk(
    *, document: Document, chunk_size: int, chunk_overlap: int, background: bool = True
) -> Document:
    """Chunk a document again with other settings: its chunks go (edited and disabled ones too, with their
    history) and it is converted, chunked and embedded again from its stored file, through the usual states."""
    check_chunking(chunk_size, chunk_overlap)
    if document.status in ACTIVE_STATES and not is_stalled(document):
        raise KnowledgeError(
            f"this document is being ingested ({document.status}); re-chunk it once that has finished", 409
        )
    if not document.file:
        raise KnowledgeError("this document has no stored file to chunk again", 409)
    with transaction.atomic():
        claimed = Document.objects.filter(pk=document.pk, status=document.status).update(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            status=DocumentStatus.QUEUED,
            progress=0,
            error="",
            notice="",
            ready_at=None,
            updated_at=timezone.now(),
        )
        if not claimed:
            raise KnowledgeError("the document's state changed meanwhile; look again and retry", 409)
        _cleanup(document)
        _start(document, background)
    document.refresh_from_db()
    return document


def documents_resume_paused() -> list[str]:
    """Start again every document paused for disk space that now fits (the resume sweep calls it); their ids."""
    resumed = []
    spare = disk.disk_space().spare
    for document in Document.objects.filter(status=DocumentStatus.PAUSED).order_by("updated_at"):
        if document.space_needed > spare:
            continue
        claimed = Document.objects.filter(pk=document.pk, status=DocumentStatus.PAUSED).update(
            status=DocumentStatus.QUEUED, progress=0, error="", space_needed=0, updated_at=timezone.now()
        )
        if claimed:
            logger.info("resuming document %s: the disk has room for it again", document.pk)
            _start(document, background=True)
            resumed.append(str(document.pk))
            spare -= document.space_needed
    return resumed


def document_cancel(*, document: Document) -> Document:
    if document.status not in ACTIVE_STATES:
        raise KnowledgeError(
            f"only a document being ingested can be cancelled (this one is {document.status})", 409
        )
    Document.objects.filter(pk=document.pk, status__in=ACTIVE_STATES).update(
        status=DocumentStatus.CANCELLED, error="cancelled by the user"
    )
    document.refresh_from_db()
    return document


def document_delete(*, document: Document) -> None:
    """Delete a document, its chunks and their vectors, and its stored file.

    The chunks' points and the file go with their rows: knowledge.signals removes them once the delete commits."""
    document.delete()


def clear_namespace(*, user: User, namespace: str) -> int:
    documents = list(Document.objects.filter(user=user, namespace=check_namespace(namespace)))
    for document in documents:
        document_delete(document=document)
    return len(documents)


def _remove_vectors(document: Document) -> None:
    chunk_store().delete_where(COLLECTION, {"document_id": str(document.pk)})


# --- ingestion ----------------------------------------------------------------------------------------------


def _set(document_id: str, **fields) -> None:
    """Update the document's progress unless the user cancelled it meanwhile."""
    updated = (
        Document.objects.filter(pk=document_id)
        .exclude(status=DocumentStatus.CANCELLED)
        .update(**fields, updated_at=timezone.now())  # the heartbeat is_stalled reads
    )
    if not updated:
        raise Cancelled


def ingest(document_id: str) -> Document | None:
    """Run the whole pipeline for one document. Never leaves partial chunks or vectors behind."""
    document = Document.objects.filter(pk=document_id).first()
    if document is None or document.status in (DocumentStatus.READY, DocumentStatus.CANCELLED):
        return document
    try:
        # No conversion for nothing when the disk is past its reserve already.
        disk.require_space(0, document.original_name)
        if not _claim_conversion(document):
            return _wait_for_turn(document)
        converted = _convert(document)
        markdown, parts, findings = _screened(document, converted)
        paragraphs = [
            paragraph
            for part in parts
            for paragraph in split_paragraphs(part.markdown, page=part.page, sheet=part.sheet)
        ]
        specs = chunk_paragraphs(
            paragraphs, chunk_size=document.chunk_size, chunk_overlap=document.chunk_overlap
        )
        if not specs and converted.parts:
            raise ConversionError(f"No text could be extracted from {document.original_name}")
        # Before anything is written: the text, the chunks and their points must leave the reserve free.
        needed = len(markdown.encode("utf-8")) * disk.TEXT_COPIES
        disk.require_space(needed + disk.texts_bytes([spec.text for spec in specs]), document.original_name)
        _set(
            document_id,
            status=DocumentStatus.CHUNKING,
            progress=25,
            markdown=markdown,
            privacy_findings=findings,
            notice=converted.notice if converted.parts else NO_TEXT_IN_IMAGE,
        )
        _set(document_id, status=DocumentStatus.EMBEDDING, progress=30)
        vectors = _embed(document_id, [spec.text for spec in specs]) if specs else {}
        _store(document, specs, vectors)
    except Cancelled:
        _cleanup(document)
        logger.info("ingestion of %s cancelled", document_id)
    except disk.DiskFull as exc:
        _cleanup(document)
        _pause(document_id, exc)
    except (ConversionError, EmbeddingError, VectorStoreError, ValueError) as exc:
        _cleanup(document)
        _fail(document_id, str(exc) or exc.__class__.__name__)
    except Exception as exc:
        logger.exception("ingestion of %s failed", document_id)
        _cleanup(document)
        _fail(document_id, f"unexpected error: {exc.__class__.__name__}: {exc}")
    document.refresh_from_db()
    return document


# How often a document waiting for its owner's other conversions to finish looks again.
TURN_WAIT_SECONDS = 10.0
WAITING_FOR_TURN = "Waiting: another of your documents is being converted; this one starts after it."


@transaction.atomic
def _claim_conversion(document: Document) -> bool:
    """Start converting `document` unless its owner has MNEMO_CONVERSIONS_PER_USER conversions running (stalled
    ones do not count). The owner's row lock makes two workers claiming at once take turns."""
    User.objects.select_for_update().filter(pk=document.user_id).exists()
    running = (
        Document.objects.filter(
            user_id=document.user_id,
            status=DocumentStatus.CONVERTING,
            updated_at__gt=timezone.now() - STALLED_AFTER,
        )
        .exclude(pk=document.pk)
        .count()
    )
    if running >= settings.MNEMO_CONVERSIONS_PER_USER:
        return False
    _set(str(document.pk), status=DocumentStatus.CONVERTING, progress=5, error="", notice="")
    return True


def _wait_for_turn(document: Document) -> Document:
    """Leave the document queued, with a note, and look again in TURN_WAIT_SECONDS; the worker is free meanwhile.
    Each look refreshes updated_at, so a waiting document never counts as stalled."""
    from knowledge.tasks import ingest_document

    _set(str(document.pk), status=DocumentStatus.QUEUED, progress=0, error=WAITING_FOR_TURN)
    dispatch_later(ingest_document, TURN_WAIT_SECONDS, str(document.pk))
    document.refresh_from_db()
    return document


def _convert(document: Document):
    llm = None
    if settings.LLM_BASE_URL:  # images get a description from the model
        llm = LLMSettings(
            settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_TIMEOUT
        )
    budget = Budget(seconds=settings.MNEMO_CONVERT_SECONDS, memory_mb=settings.MNEMO_CONVERT_MEMORY_MB)
    with (
        document.file.open("rb") as source,
        tempfile.NamedTemporaryFile(suffix=f"_{document.original_name}") as copy,
    ):
        for block in iter(lambda: source.read(1 << 20), b""):
            copy.write(block)
        copy.flush()
        return convert_bounded(
            copy.name,
            filename=document.original_name,
            budget=budget,
            llm=llm,
            check=lambda: _raise_if_cancelled(document.pk),
        )


def _screened(document: Document, converted: Converted) -> tuple[str, list[Part], list[dict]]:
    """The Markdown to store, the parts to index and what was found in them, by the owner's privacy settings."""
    what = document.original_name
    if not converted.parts:  # an image's metadata: shown on its page, never indexed
        screened = privacy.screen_for(document.user, converted.markdown, what)
        return screened.text, [], screened.record()
    parts, findings = [], []
    for part in converted.parts:
        screened = privacy.screen_for(document.user, part.markdown, what)
        parts.append(replace(part, markdown=screened.text))
        findings += screened.record()
    return "\n\n".join(part.markdown for part in parts), parts, findings


def _raise_if_cancelled(document_id) -> None:
    if not Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).exists():
        raise Cancelled


def _embed(document_id: str, texts: list[str]) -> dict[str, list]:
    embedding_set = stores.embedding_set()
    vectors: dict[str, list] = {name: [] for name in embedding_set.spaces}
    for start in range(0, len(texts), EMBED_BATCH):
        batch = embedding_set.embed_documents(texts[start : start + EMBED_BATCH])
        for name, matrix in batch.items():
            vectors[name].extend(matrix)
        done = min(start + EMBED_BATCH, len(texts))
        _set(document_id, progress=30 + int(65 * done / len(texts)))
    return vectors


@transaction.atomic
def _store(document: Document, specs, vectors: dict[str, list]) -> None:
    document = Document.objects.select_for_update().get(pk=document.pk)
    if document.status == DocumentStatus.CANCELLED:
        raise Cancelled
    now = timezone.now()
    chunks = [
        Chunk(
            document=document,
            user_id=document.user_id,
            namespace=document.namespace,
            ordinal=spec.ordinal,
            heading_path=spec.heading_path[:500],
            text=spec.text,
            token_count=spec.token_count,
            page_start=spec.page_start,
            page_end=spec.page_end,
            sheet=spec.sheet[:100],
            mirror_state=MirrorState.SYNCED,
            mirrored_at=now,
        )
        for spec in specs
    ]
    Chunk.objects.bulk_create(chunks, batch_size=500)
    points = hybrid.points([(str(c.pk), c.text, chunk_payload(c)) for c in chunks], vectors)
    # Points go in last, inside the transaction: if this raises, the rows roll back and _cleanup deletes
    # any points the store accepted before failing.
    store = chunk_store()
    for start in range(0, len(points), 256):
        store.upsert(COLLECTION, points[start : start + 256])
    document.status = DocumentStatus.READY
    document.progress = 100
    document.ready_at = now
    document.save(update_fields=["status", "progress", "ready_at", "updated_at"])


def sync_chunks(chunk_ids: list[str]) -> None:
    """Mirror chunks by re-reading their rows (edits on the page, the API or the admin); chunks that are gone or
    disabled lose their points.

    On a failure the chunks still there are marked failed with the reason, for the sweep, and the error is raised
    for the task to retry."""
    rows = list(Chunk.objects.filter(pk__in=chunk_ids, document__status=DocumentStatus.READY))
    live_ids = [chunk.pk for chunk in rows]
    chunks = [chunk for chunk in rows if chunk.enabled]
    try:
        store = chunk_store()
        gone = set(map(str, chunk_ids)) - {str(chunk.pk) for chunk in chunks}
        if gone:
            store.delete(COLLECTION, sorted(gone))
        if chunks:
            vectors = stores.embedding_set().embed_documents([chunk.text for chunk in chunks])
            points = hybrid.points([(str(c.pk), c.text, chunk_payload(c)) for c in chunks], vectors)
            store.upsert(COLLECTION, points)
    except Exception as exc:
        error = without_paths(str(exc) or exc.__class__.__name__)[:2000]
        Chunk.objects.filter(pk__in=live_ids).update(mirror_state=MirrorState.FAILED, mirror_error=error)
        raise
    Chunk.objects.filter(pk__in=live_ids).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )


def unsynced_chunk_ids(limit: int) -> list[str]:
    """Chunks of ready documents whose last mirror write failed or never happened."""
    unsynced = Chunk.objects.filter(document__status=DocumentStatus.READY).exclude(
        mirror_state=MirrorState.SYNCED
    )
    return [str(pk) for pk in unsynced.values_list("pk", flat=True)[:limit]]


def chunk_payload(chunk: Chunk) -> dict:
    return {
        "user_id": str(chunk.user_id),
        "namespace": chunk.namespace,
        "document_id": str(chunk.document_id),
        "ordinal": float(chunk.ordinal),
    }


def _cleanup(document: Document) -> None:
    Chunk.objects.filter(document_id=document.pk).delete()
    try:
        _remove_vectors(document)
    except VectorStoreError as exc:  # nothing was written if the store is down; resync removes any orphans
        logger.warning("could not remove vectors of %s: %s", document.pk, exc)


def _pause(document_id: str, full: disk.DiskFull) -> None:
    logger.warning("ingestion of %s paused: %s", document_id, full)
    Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).update(
        status=DocumentStatus.PAUSED,
        progress=0,
        markdown="",
        space_needed=full.needed,
        error=f"Paused: {full} It starts again by itself once there is room.",
    )


def _fail(document_id: str, reason: str) -> None:
    # The reason is shown to the user: a store's error may name the server's folders.
    Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).update(
        status=DocumentStatus.FAILED, error=without_paths(reason)[:2000]
    )
