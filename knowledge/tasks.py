from celery import shared_task

# The worker finds the app's tasks in this module (config/celery.py autodiscovers knowledge.tasks); ingestion's
# own task is defined beside it in knowledge.ingest.
from knowledge.ingest import ingest_document  # noqa: F401


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
