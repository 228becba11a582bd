"""The one place that decides when a memory's vector or an entity's or relation's Neo4j node is written or deleted.

Every save or delete by any path (a service, the admin, a queryset delete, a cascade from a user, memory or
entity) adds the row to the mirror outbox in its transaction (core.mirror_outbox), and the drain after the commit
writes a transaction's rows together by re-reading them: a delete of a thousand memories is one store call, and an
entity created then counted again in one transaction is written once. Memories are drained in the committing
thread, so the call that wrote one can search it at once; entities and relations in the background. Writes that send
no signal (bulk_create, bulk_update) enqueue their rows themselves (memories.mirror.enqueue).
"""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core import mirror_outbox
from core.files import delete_file_on_commit
from memories import mirror
from memories.graph.service import ENTITY_KIND, RELATION_KIND
from memories.models import Entity, Memory, Relation


@receiver([post_save, post_delete], sender=Memory, dispatch_uid="memories.mirror_memory")
def mirror_memory(sender, instance: Memory, raw: bool = False, **kwargs) -> None:
    if not raw:  # loading fixtures: resync_mirrors covers them
        mirror.enqueue([instance.pk])


@receiver(post_delete, sender=Memory, dispatch_uid="memories.delete_file")
def delete_memory_file(sender, instance: Memory, **kwargs) -> None:
    delete_file_on_commit(instance.file)  # a perceptual memory's file goes with its row (core.files)


@receiver([post_save, post_delete], sender=Entity, dispatch_uid="memories.mirror_entity")
def mirror_entity(sender, instance: Entity, raw: bool = False, **kwargs) -> None:
    if not raw:  # without Neo4j the outbox takes nothing: the SQL graph store reads the tables themselves
        mirror_outbox.enqueue(ENTITY_KIND, [instance.pk])


@receiver([post_save, post_delete], sender=Relation, dispatch_uid="memories.mirror_relation")
def mirror_relation(sender, instance: Relation, raw: bool = False, **kwargs) -> None:
    if not raw:
        mirror_outbox.enqueue(RELATION_KIND, [instance.pk])
