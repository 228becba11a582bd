from celery import shared_task

# The worker finds the app's tasks in this module (config/celery.py autodiscovers knowledge.tasks); ingestion's
# own task is defined beside it in knowledge.ingest. Chunk mirroring runs through the mirror outbox's tasks
# (core.tasks).
from knowledge.ingest import ingest_document  # noqa: F401


@shared_task(name="knowledge.resume_stalled")
def resume_stalled_documents() -> int:
    """Start again the documents a stopped worker left in an active state (knowledge.ingest.STALLED_AFTER)
    and those paused for disk space that now fit."""
    from knowledge.services import documents_resume_paused, documents_resume_stalled

    return len(documents_resume_stalled()) + len(documents_resume_paused())
