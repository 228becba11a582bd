"""Thin glue: any save or delete of a memory (service, admin, shell) enqueues its mirror task on commit."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core.dispatch import dispatch_on_commit
from memories.models import Memory
from memories.tasks import sync_memory


@receiver([post_save, post_delete], sender=Memory, dispatch_uid="memories.mirror")
def mirror_memory(sender, instance: Memory, raw: bool = False, update_fields=None, **kwargs) -> None:
    if raw:  # loading fixtures: resync_mirrors covers them
        return
    dispatch_on_commit(sync_memory, str(instance.pk))
