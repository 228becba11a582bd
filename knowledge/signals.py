"""The one place that decides when a chunk's vector is written or deleted after ingestion.

Ingestion writes chunks in bulk with their points (no signals). Afterwards any save or delete by any path (the
admin, a queryset, the cascade from its document or user) adds the chunk to the mirror outbox in its transaction,
and one drain after the commit writes or deletes a transaction's chunks together (core.mirror_outbox): deleting a
document of 300 chunks is one delete call to the vector store.
"""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core.files import delete_file_on_commit
from knowledge import mirror
from knowledge.models import Chunk, Document


@receiver([post_save, post_delete], sender=Chunk, dispatch_uid="knowledge.mirror_chunk")
def mirror_chunk(sender, instance: Chunk, raw: bool = False, **kwargs) -> None:
    if not raw:  # loading fixtures: resync_mirrors covers them
        mirror.enqueue([instance.pk])


@receiver(post_delete, sender=Document, dispatch_uid="knowledge.delete_file")
def delete_document_file(sender, instance: Document, **kwargs) -> None:
    delete_file_on_commit(instance.file)  # the uploaded original goes with its row (core.files)
