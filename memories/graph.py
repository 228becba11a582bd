"""The entity graph: merging and deleting entities, neighbourhood queries, and the Neo4j mirror of both.

Entity and Relation rows are the truth. When NEO4J_URI is set, every saved or deleted row is mirrored by its
primary key (MERGE on the id, so replays are harmless); graph queries then read Neo4j, else the SQL store.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from core import stores
from core.graph import EntityNode, RelationEdge
from core.models import MirrorState
from core.queries import owned_by_pk
from memories.models import Entity, MemoryEntity, Relation


class GraphRequestError(ValueError):
    pass


def entity_node(entity: Entity) -> EntityNode:
    return EntityNode(
        str(entity.pk), str(entity.user_id), entity.name, entity.key, entity.entity_type, entity.frequency
    )


def relation_edge(relation: Relation) -> RelationEdge:
    return RelationEdge(
        str(relation.pk),
        str(relation.user_id),
        str(relation.source_id),
        str(relation.target_id),
        relation.relation_type,
        relation.strength,
        relation.frequency,
    )


def mirror_entity(entity_id: str) -> None:
    entity = Entity.objects.filter(pk=entity_id).first()
    if entity is None:
        stores.graph_store().delete_entity(entity_id)
        return
    with _recording_mirror_state(Entity, entity_id):
        stores.graph_store().upsert_entity(entity_node(entity))


def mirror_relation(relation_id: str) -> None:
    relation = Relation.objects.filter(pk=relation_id).first()
    if relation is None:
        stores.graph_store().delete_relation(relation_id)
        return
    with _recording_mirror_state(Relation, relation_id):
        stores.graph_store().upsert_relation(relation_edge(relation))


@contextmanager
def _recording_mirror_state(model: type[Entity] | type[Relation], pk: str) -> Iterator[None]:
    """The row's mirror state after its write to the graph store: synced, or failed with the error (the task
    retries). With the SQL graph store the tables are the graph, so a row is synced at once.

    update() skips the save signals, which would mirror the row again.
    """
    started = timezone.now()
    try:
        yield
    except Exception as exc:
        error = (str(exc) or exc.__class__.__name__)[:2000]
        model.objects.filter(pk=pk).update(mirror_state=MirrorState.FAILED, mirror_error=error)
        raise
    # A row edited meanwhile stays pending: the task its edit enqueued mirrors it again.
    model.objects.filter(pk=pk, updated_at__lte=started).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )


@transaction.atomic
def entity_merge(*, user: AbstractBaseUser, source: Entity, target: Entity) -> Entity:
    """Fold `source` into `target`: its memory links and relations move over, duplicates add up, it is deleted."""
    if source.user_id != user.pk or target.user_id != user.pk:
        raise GraphRequestError("both entities must belong to you")
    if source.pk == target.pk:
        raise GraphRequestError("an entity cannot be merged into itself")
    for link in MemoryEntity.objects.filter(entity=source):
        if MemoryEntity.objects.filter(memory_id=link.memory_id, entity=target).exists():
            link.delete()
        else:
            link.entity = target
            link.save(update_fields=["entity"])
    for relation in Relation.objects.filter(Q(source=source) | Q(target=source)).select_for_update():
        new_source = target if relation.source_id == source.pk else relation.source
        new_target = target if relation.target_id == source.pk else relation.target
        if new_source.pk == new_target.pk:
            relation.delete()
            continue
        twin = Relation.objects.filter(
            user=user, source=new_source, target=new_target, relation_type=relation.relation_type
        ).first()
        if twin is not None:
            twin.frequency += relation.frequency
            twin.strength = max(twin.strength, relation.strength)
            twin.save(update_fields=["frequency", "strength", "updated_at"])
            relation.delete()
        else:
            relation.source, relation.target = new_source, new_target
            relation.save(update_fields=["source", "target", "updated_at"])
    source.delete()
    target.frequency = MemoryEntity.objects.filter(entity=target).count()
    target.save(update_fields=["frequency", "updated_at"])
    return target


def entity_delete(*, entity: Entity) -> None:
    entity.delete()  # links and relations cascade; the signals mirror each deletion


@dataclass(frozen=True)
class Neighbourhood:
    center: Entity
    entities: list[tuple[Entity, int]]  # (entity, hops), nearest and most mentioned first
    relations: list[Relation]  # among the center and the entities, strongest first
    truncated: bool  # more entities were within reach than the limit


def neighbourhood(
    *, user: AbstractBaseUser, entity: Entity, depth: int = 1, limit: int = 300
) -> Neighbourhood:
    # One more than asked for tells whether some were left out.
    found, _ = stores.read_graph(
        lambda graph: graph.neighbors(str(user.pk), [str(entity.pk)], depth=depth, limit=limit + 1)
    )
    hops = {neighbor.entity_id: neighbor.distance for neighbor in found}
    entities = owned_by_pk(
        Entity.objects.order_by(), user, hops
    )  # ranked below; Meta.ordering would sort twice
    ranked = sorted(((e, hops[str(e.pk)]) for e in entities), key=lambda pair: (pair[1], -pair[0].frequency))
    ranked = ranked[:limit]
    relations = relations_among(user, [entity, *(e for e, _ in ranked)], limit=3 * limit)
    return Neighbourhood(entity, ranked, relations, truncated=len(found) > limit)


# What the graph page and RelationOut show of a relation: loading less keeps 900 rows cheap.
RELATION_FIELDS = ("id", "user", "source", "target", "relation_type", "strength", "frequency", "evidence")


def relations_among(user: AbstractBaseUser, entities: Sequence[Entity], limit: int) -> list[Relation]:
    """The user's relations between any two of `entities`, strongest first, with their endpoints attached
    from `entities` rather than loaded again."""
    by_id = {entity.pk: entity for entity in entities}
    relations = list(
        Relation.objects.filter(user=user, source_id__in=list(by_id), target_id__in=list(by_id))
        .only(*RELATION_FIELDS)
        .order_by("-strength", "-frequency", "id")[:limit]
    )
    for relation in relations:
        relation.source, relation.target = by_id[relation.source_id], by_id[relation.target_id]
    return relations


def top_entities(*, user: AbstractBaseUser, limit: int = 300, entity_type: str = "", query: str = ""):
    entities = Entity.objects.filter(user=user).annotate(memory_count=Count("memory_links"))
    if entity_type:
        entities = entities.filter(entity_type=entity_type)
    if query:
        entities = entities.filter(Q(name__icontains=query) | Q(key__icontains=query.casefold()))
    return entities.order_by("-frequency", "name")[:limit]
