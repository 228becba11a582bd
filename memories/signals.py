"""The one place that decides when a memory's vector or an entity's or relation's Neo4j node is written or deleted.

Every save or delete by any path (a service, the admin, a queryset delete, a cascade from a user, memory or
entity) adds the row's id to its transaction's batch, and one task per batch mirrors them on commit by re-reading
the rows (core.dispatch.dispatch_batch_on_commit): a delete of a thousand memories is one store call, and an entity
created then counted again in one transaction is written once. The one exception is a memory the service saves: it
embeds and writes it itself right after the commit, for read-your-writes, so that save is not queued again.
"""

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core.dispatch import dispatch_batch_on_commit
from core.files import delete_file_on_commit
from memories.models import Entity, Memory, Relation
from memories.tasks import mirror_graph_task, sync_memories_task


@receiver(post_save, sender=Memory, dispatch_uid="memories.mirror_saved")
def mirror_saved_memory(sender, instance: Memory, raw: bool = False, **kwargs) -> None:
    if raw:  # loading fixtures: resync_mirrors covers them
        return
    if getattr(instance, "mirrored_by_service", False):  # memories.actions syncs it itself after the commit
        return
    dispatch_batch_on_commit(sync_memories_task, memory_ids=str(instance.pk))


@receiver(post_delete, sender=Memory, dispatch_uid="memories.mirror_deleted")
def mirror_deleted_memory(sender, instance: Memory, **kwargs) -> None:
    dispatch_batch_on_commit(sync_memories_task, memory_ids=str(instance.pk))


@receiver(post_delete, sender=Memory, dispatch_uid="memories.delete_file")
def delete_memory_file(sender, instance: Memory, **kwargs) -> None:
    delete_file_on_commit(instance.file)  # a perceptual memory's file goes with its row (core.files)


@receiver([post_save, post_delete], sender=Entity, dispatch_uid="memories.mirror_entity")
def mirror_entity(sender, instance: Entity, raw: bool = False, **kwargs) -> None:
    if settings.NEO4J_URI and not raw:  # the SQL graph store reads the tables themselves
        dispatch_batch_on_commit(mirror_graph_task, entity_ids=str(instance.pk))


@receiver([post_save, post_delete], sender=Relation, dispatch_uid="memories.mirror_relation")
def mirror_relation(sender, instance: Relation, raw: bool = False, **kwargs) -> None:
    if settings.NEO4J_URI and not raw:
        dispatch_batch_on_commit(mirror_graph_task, relation_ids=str(instance.pk))
