from celery import shared_task


@shared_task(name="knowledge.ingest_document", acks_late=True)
def ingest_document(document_id: str) -> str:
    """Convert, chunk, embed and index one document; its state records the outcome."""
    from knowledge.ingest import ingest

    document = ingest(document_id)
    return document.status if document else "gone"


@shared_task(name="knowledge.sync_chunks", autoretry_for=(Exception,), retry_backoff=True, max_retries=8)
def sync_chunks_task(chunk_ids: list[str]) -> int:
    """Re-embed chunks after an edit outside ingestion (the admin); chunks that are gone lose their points."""
    from knowledge.mirror import sync_chunks

    sync_chunks(chunk_ids)
    return len(chunk_ids)


@shared_task(name="knowledge.sync_unsynced")
def sync_unsynced_chunks(batch: int = 256) -> int:
    """Mirror chunks left pending or failed (an edit whose task gave up while the vector store was down)."""
    from knowledge.mirror import sync_chunks, unsynced_chunk_ids

    ids = unsynced_chunk_ids(batch)
    if ids:
        sync_chunks(ids)
    return len(ids)


@shared_task(name="knowledge.resume_stalled")
def resume_stalled_documents() -> int:
    """Start again the documents a stopped worker left in an active state (knowledge.ingest.STALLED_AFTER)
    and those paused for disk space that now fit."""
    from knowledge.services import documents_resume_paused, documents_resume_stalled

    return len(documents_resume_stalled()) + len(documents_resume_paused())
