"""Thin glue: any save or delete of a memory (service, admin, shell) enqueues its mirror task on commit."""

from django.conf import settings
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from core.dispatch import dispatch_on_commit
from core.models import MirrorState
from memories.models import Entity, Memory, Relation
from memories.tasks import mirror_entity_task, mirror_relation_task, sync_memory


@receiver([post_save, post_delete], sender=Memory, dispatch_uid="memories.mirror")
def mirror_memory(sender, instance: Memory, raw: bool = False, update_fields=None, **kwargs) -> None:
    if raw:  # loading fixtures: resync_mirrors covers them
        return
    if getattr(instance, "mirrored_by_service", False):  # memories.services syncs it itself after the commit
        return
    dispatch_on_commit(sync_memory, str(instance.pk))


@receiver([post_save, post_delete], sender=Entity, dispatch_uid="memories.mirror_entity")
def mirror_entity(sender, instance: Entity, raw: bool = False, **kwargs) -> None:
    if settings.NEO4J_URI and not raw:  # the SQL graph store reads the tables themselves
        dispatch_on_commit(mirror_entity_task, str(instance.pk))


@receiver([post_save, post_delete], sender=Relation, dispatch_uid="memories.mirror_relation")
def mirror_relation(sender, instance: Relation, raw: bool = False, **kwargs) -> None:
    if settings.NEO4J_URI and not raw:
        dispatch_on_commit(mirror_relation_task, str(instance.pk))


@receiver(pre_save, sender=Entity, dispatch_uid="memories.graph_mirror_state_entity")
@receiver(pre_save, sender=Relation, dispatch_uid="memories.graph_mirror_state_relation")
def graph_mirror_state(sender, instance: Entity | Relation, raw: bool = False, **kwargs) -> None:
    """Without Neo4j the Entity and Relation tables are the graph: a saved row is already where searches look."""
    if not settings.NEO4J_URI and not raw and instance.mirror_state != MirrorState.SYNCED:
        instance.mirror_state = MirrorState.SYNCED
        instance.mirror_error = ""
        instance.mirrored_at = timezone.now()
