"""Ingesting one document in the background: queued → converting → chunking → embedding → ready | failed (or
cancelled by the user, or paused for disk space). Every chunk is embedded before anything is stored, and the rows
and points are written together at the end; a failure on the way removes whatever was written, so a document is
either fully searchable or has no chunks and no vectors.

An image whose only text is its metadata (no LLM describes it, and there is no OCR) ends ready with no chunks and
a notice saying so: a chunk of "ImageSize: 200x60, Format: PNG" would only be found by searches it cannot answer.
"""

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
from celery import shared_task
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext_noop

from core import disk, hybrid, privacy, stores
from core.dispatch import dispatch_later
from core.embedders.base import EmbeddingError
from core.models import MirrorState
from core.stored_text import Text, key_of
from core.text import without_paths
from core.vectorstore import VectorStoreError
from knowledge.mirror import COLLECTION, chunk_payload, chunk_store, indexed_text
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.pipeline import ChunkSpec, ConversionError, Converted, Part, chunk_paragraphs, split_paragraphs
from knowledge.pipeline.bounded import Budget, LLMSettings, convert_bounded

logger = logging.getLogger(__name__)

EMBED_BATCH = 64
# Ingestion touches its row at every step and embedding batch; an active document whose row has not moved for
# this long has no worker any more (the process was killed or crashed) and is started again.
STALLED_AFTER = timedelta(minutes=15)
NO_TEXT_IN_IMAGE = Text(
    gettext_noop(
        "No text found in this image, so nothing of it is searchable: only its metadata (size, format, embedded "
        "tags) could be read, and there is no OCR. Configure an LLM (LLM_BASE_URL) to index a description of "
        "images."
    )
)


class Cancelled(Exception):
    pass


def _set(document_id: str, **fields: Any) -> None:
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
    # A document's error and notice are stored and read later in any language: they are written in English, with
    # their message keys (core.stored_text) for the pages to translate, even when the ingestion runs inside a
    # Chinese request (eager dispatch, a retry from the page).
    with translation.override("en"):
        return _ingest(document_id)


def _ingest(document_id: str) -> Document | None:
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
            raise ConversionError(
                Text(
                    gettext_noop("No text could be extracted from %(name)s%(hint)s"),
                    name=document.original_name,
                    hint="",
                )
            )
        # Before anything is written: the text, the chunks and their points must leave the reserve free.
        needed = len(markdown.encode("utf-8")) * disk.TEXT_COPIES
        disk.require_space(needed + disk.texts_bytes([spec.text for spec in specs]), document.original_name)
        notice = converted.notice if converted.parts else NO_TEXT_IN_IMAGE
        _set(
            document_id,
            status=DocumentStatus.CHUNKING,
            progress=25,
            markdown=markdown,
            privacy_findings=findings,
            notice=notice,
        )
        _set(document_id, status=DocumentStatus.EMBEDDING, progress=30)
        texts = [indexed_text(spec.heading_path, spec.text) for spec in specs]
        vectors = _embed(document_id, texts) if specs else {}
        _store(document, specs, texts, vectors)
    except Cancelled:
        cleanup(document)
        logger.info("ingestion of %s cancelled", document_id)
    except disk.DiskFull as exc:
        cleanup(document)
        _pause(document_id, exc)
    except (ConversionError, EmbeddingError, VectorStoreError, ValueError) as exc:
        cleanup(document)
        _fail(document_id, _message(exc))
    except Exception as exc:
        logger.exception("ingestion of %s failed", document_id)
        cleanup(document)
        unexpected = gettext_noop("unexpected error: %(kind)s: %(error)s")
        _fail(document_id, Text(unexpected, kind=exc.__class__.__name__, error=str(exc)))
    document.refresh_from_db()
    return document


# How often a document waiting for its owner's other conversions to finish looks again.
TURN_WAIT_SECONDS = 10.0
WAITING_FOR_TURN = Text(
    gettext_noop("Waiting: another of your documents is being converted; this one starts after it.")
)


# The task lives beside what it runs (knowledge.tasks holds the sweeps): queueing a document, here and in
# knowledge.services, then imports no module that imports them back. Celery ships no types.
@shared_task(name="knowledge.ingest_document", acks_late=True)  # type: ignore[untyped-decorator]
def ingest_document(document_id: str) -> str:
    """Convert, chunk, embed and index one document; its state records the outcome."""
    document = ingest(document_id)
    return document.status if document else "gone"


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
    _set(
        str(document.pk),
        status=DocumentStatus.CONVERTING,
        progress=5,
        error="",
        error_key={},
        notice="",
        notice_key={},
    )
    return True


def _wait_for_turn(document: Document) -> Document:
    """Leave the document queued, with a note, and look again in TURN_WAIT_SECONDS; the worker is free meanwhile.
    Each look refreshes updated_at, so a waiting document never counts as stalled."""
    _set(
        str(document.pk),
        status=DocumentStatus.QUEUED,
        progress=0,
        error=WAITING_FOR_TURN,
    )
    dispatch_later(ingest_document, TURN_WAIT_SECONDS, str(document.pk))
    document.refresh_from_db()
    return document


def _convert(document: Document) -> Converted:
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


def _screened(document: Document, converted: Converted) -> tuple[str, list[Part], list[dict[str, Any]]]:
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


def _raise_if_cancelled(document_id: Any) -> None:
    if not Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).exists():
        raise Cancelled


def _embed(document_id: str, texts: list[str]) -> dict[str, list[np.ndarray]]:
    embedding_set = stores.embedding_set()
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in embedding_set.spaces}
    for start in range(0, len(texts), EMBED_BATCH):
        batch = embedding_set.embed_documents(texts[start : start + EMBED_BATCH])
        for name, matrix in batch.items():
            vectors[name].extend(matrix)
        done = min(start + EMBED_BATCH, len(texts))
        _set(document_id, progress=30 + int(65 * done / len(texts)))
    return vectors


@transaction.atomic
def _store(
    document: Document, specs: Sequence[ChunkSpec], texts: Sequence[str], vectors: dict[str, list[np.ndarray]]
) -> None:
    """The chunks of `specs` and their points: `texts` are what each was embedded from (indexed_text), in order."""
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
    points = hybrid.points(
        [(str(c.pk), text, chunk_payload(c)) for c, text in zip(chunks, texts, strict=True)], vectors
    )
    # Points go in last, inside the transaction: if this raises, the rows roll back and cleanup deletes
    # any points the store accepted before failing.
    store = chunk_store()
    for start in range(0, len(points), 256):
        store.upsert(COLLECTION, points[start : start + 256])
    document.status = DocumentStatus.READY
    document.progress = 100
    document.ready_at = now
    document.save(update_fields=["status", "progress", "ready_at", "updated_at"])


def cleanup(document: Document) -> None:
    Chunk.objects.filter(document_id=document.pk).delete()
    try:
        _remove_vectors(document)
    except VectorStoreError as exc:  # nothing was written if the store is down; resync removes any orphans
        logger.warning("could not remove vectors of %s: %s", document.pk, exc)


def _pause(document_id: str, full: disk.DiskFull) -> None:
    logger.warning("ingestion of %s paused: %s", document_id, full)
    paused = Text(
        gettext_noop("Paused: %(reason)s It starts again by itself once there is room."),
        reason=_message(full),
    )
    Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).update(
        status=DocumentStatus.PAUSED,
        progress=0,
        markdown="",
        space_needed=full.needed,
        error=paused,
    )


def _message(exc: Exception) -> str:
    """The exception's message as it was raised: a Text keeps its key (str(exc) would drop it)."""
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return message or exc.__class__.__name__


def _fail(document_id: str, reason: str) -> None:
    # The reason is shown to the user: a store's error may name the server's folders. The key is the uncut
    # reason's, given here because the cut text is plain; a key whose English no longer matches the cut text is
    # ignored when shown (core.stored_text.shown).
    Document.objects.filter(pk=document_id).exclude(status=DocumentStatus.CANCELLED).update(
        status=DocumentStatus.FAILED, error=without_paths(reason)[:2000], error_key=key_of(reason)
    )


def _remove_vectors(document: Document) -> None:
    chunk_store().delete_where(COLLECTION, {"document_id": str(document.pk)})
