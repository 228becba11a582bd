"""Chunks are written in bulk by ingestion (no signals); an edit in the admin re-embeds through this receiver."""

from django.db.models.signals import post_save
from django.dispatch import receiver

from core.dispatch import dispatch_on_commit
from knowledge.models import Chunk
from knowledge.tasks import sync_chunk


@receiver(post_save, sender=Chunk, dispatch_uid="knowledge.mirror_chunk")
def mirror_chunk(sender, instance: Chunk, raw: bool = False, **kwargs) -> None:
    if not raw:
        dispatch_on_commit(sync_chunk, str(instance.pk))
