"""Chunks are written in bulk by ingestion (no signals); an edit in the admin re-embeds through this receiver, and
a delete by any path (a queryset, the admin, a cascade from its document) removes the chunk's point."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core.dispatch import dispatch_on_commit
from knowledge.models import Chunk
from knowledge.tasks import sync_chunk


@receiver([post_save, post_delete], sender=Chunk, dispatch_uid="knowledge.mirror_chunk")
def mirror_chunk(sender, instance: Chunk, raw: bool = False, **kwargs) -> None:
    if not raw:
        dispatch_on_commit(sync_chunk, str(instance.pk))
