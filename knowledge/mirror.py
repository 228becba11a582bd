"""The chunks' vector mirror: their collection and payload, writing chunks again by re-reading their rows (the
mirror outbox, core.mirror_outbox, drains them through sync_chunks), and, for the mirror checks (core.mirrors),
which rows must have a point and how many of a user's passages a search would miss. Ingestion (knowledge.ingest)
writes a document's points together with its rows."""

from collections.abc import Iterable, Sequence
from uuid import UUID

from django.utils import timezone

from core import hybrid, mirror_outbox, mirrors, stores
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import VectorStore
from knowledge.models import Chunk, DocumentStatus

COLLECTION = "chunks"
KIND = "chunk"  # its entries in the mirror outbox
KEYWORD_FIELDS = ("user_id", "namespace", "document_id")
FLOAT_FIELDS = ("ordinal",)


def chunk_store() -> VectorStore:
    return hybrid.collection_store(COLLECTION, keyword_fields=KEYWORD_FIELDS, float_fields=FLOAT_FIELDS)


def sync_chunks(chunk_ids: Sequence[str]) -> None:
    """Mirror chunks by re-reading their rows (edits on the page, the API or the admin); chunks that are gone or
    disabled lose their points.

    On a failure the chunks still there are marked failed with the reason and the error is raised: their outbox
    entries stay for the retry and the sweep."""
    rows = list(Chunk.objects.filter(pk__in=chunk_ids, document__status=DocumentStatus.READY))
    live_ids = [chunk.pk for chunk in rows]
    chunks = [chunk for chunk in rows if chunk.enabled]
    try:
        store = chunk_store()
        gone = set(map(str, chunk_ids)) - {str(chunk.pk) for chunk in chunks}
        if gone:
            store.delete(COLLECTION, sorted(gone))
        if chunks:
            texts = [chunk_indexed_text(chunk) for chunk in chunks]
            vectors = stores.embedding_set().embed_documents(texts)
            points = hybrid.points(
                [(str(c.pk), text, chunk_payload(c)) for c, text in zip(chunks, texts, strict=True)], vectors
            )
            store.upsert(COLLECTION, points)
    except Exception as exc:
        error = without_paths(str(exc) or exc.__class__.__name__)[:2000]
        Chunk.objects.filter(pk__in=live_ids).update(mirror_state=MirrorState.FAILED, mirror_error=error)
        raise
    Chunk.objects.filter(pk__in=live_ids).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )


def unsynced_chunks():
    """Chunks of ready documents whose last mirror write failed or never happened."""
    return Chunk.objects.filter(document__status=DocumentStatus.READY).exclude(
        mirror_state=MirrorState.SYNCED
    )


def unsynced_chunk_ids(limit: int) -> list[str]:
    return [str(pk) for pk in unsynced_chunks().values_list("pk", flat=True)[:limit]]


def indexed_text(heading_path: str, text: str) -> str:
    """What a chunk is found by: its section's headings, then its text. The chunker keeps a section's headings
    out of its chunks' text (Chunk.heading_path), and a passage under "Porto office > Hours" says only "Open
    from 9:00 to 17:00": the dense and the lexical signals read both, the page shows the text alone. Not the
    document's title: prefixed to article paragraphs (XQuAD, CMRC 2018, DRCD: 400 questions each) it moved
    hit@1 by -2, +1 and -2 questions, where the headings of the team's sectioned documents moved it up."""
    return f"{heading_path}\n\n{text}" if heading_path else text


def chunk_indexed_text(chunk: Chunk) -> str:
    return indexed_text(chunk.heading_path, chunk.text)


def chunk_payload(chunk: Chunk) -> dict:
    return {
        "user_id": str(chunk.user_id),
        "namespace": chunk.namespace,
        "document_id": str(chunk.document_id),
        "ordinal": float(chunk.ordinal),
    }


def mirrored_rows():
    """The chunks whose points must be in the store now: of ready documents, and mirrored."""
    return Chunk.objects.active().filter(mirror_state=MirrorState.SYNCED)


def register() -> None:
    """The mirror outbox drains chunks through sync_chunks, in the background; the mirror checks (core.mirrors)
    compare the collection with mirrored_rows."""
    mirrors.register_vector_mirror(
        name="knowledge chunks",
        kind=KIND,
        collection=COLLECTION,
        store=chunk_store,
        mirrored_rows=mirrored_rows,
        unsynced=unsynced_chunks,
        write=sync_chunks,
    )


def enqueue(chunk_ids: Iterable[UUID | str]) -> None:
    """Mirror these chunks once the caller's transaction commits (a save or delete enqueues its row itself:
    knowledge.signals)."""
    mirror_outbox.enqueue(KIND, chunk_ids)


def missing_points(user, namespaces: list[str]) -> int:
    """How many of `user`'s mirrored passages in `namespaces` have no point in the store
    (core.mirrors.missing_points)."""
    rows = mirrored_rows().filter(user=user, namespace__in=namespaces)
    where = {"user_id": str(user.pk), "namespace": namespaces}
    return mirrors.missing_points(chunk_store, COLLECTION, rows, where)
