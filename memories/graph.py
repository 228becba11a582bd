"""The entity graph: merging and deleting entities, neighbourhood queries, and the Neo4j mirror of both.

Entity and Relation rows are the truth. When NEO4J_URI is set, every saved or deleted row is mirrored by its
primary key (MERGE on the id, so replays are harmless); graph queries then read Neo4j, else the SQL store.
"""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from core import stores
from core.graph import EntityNode, RelationEdge
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
    graph = stores.graph_store()
    if entity is None:
        graph.delete_entity(entity_id)
    else:
        graph.upsert_entity(entity_node(entity))


def mirror_relation(relation_id: str) -> None:
    relation = Relation.objects.filter(pk=relation_id).first()
    graph = stores.graph_store()
    if relation is None:
        graph.delete_relation(relation_id)
    else:
        graph.upsert_relation(relation_edge(relation))


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
    entities: list[tuple[Entity, int]]  # (entity, hops)
    relations: list[Relation]


def neighbourhood(
    *, user: AbstractBaseUser, entity: Entity, depth: int = 1, limit: int = 300
) -> Neighbourhood:
    found = stores.graph_store().neighbors(str(user.pk), [str(entity.pk)], depth=depth, limit=limit)
    hops = {neighbor.entity_id: neighbor.distance for neighbor in found}
    entities = Entity.objects.filter(user=user, pk__in=list(hops))
    ranked = sorted(((e, hops[str(e.pk)]) for e in entities), key=lambda pair: (pair[1], -pair[0].frequency))
    ids = {entity.pk, *(e.pk for e, _ in ranked)}
    relations = list(
        Relation.objects.filter(user=user, source_id__in=ids, target_id__in=ids).select_related(
            "source", "target"
        )[: limit * 3]
    )
    return Neighbourhood(entity, ranked, relations)


def top_entities(*, user: AbstractBaseUser, limit: int = 300, entity_type: str = "", query: str = ""):
    entities = Entity.objects.filter(user=user).annotate(memory_count=Count("memory_links"))
    if entity_type:
        entities = entities.filter(entity_type=entity_type)
    if query:
        entities = entities.filter(Q(name__icontains=query) | Q(key__icontains=query.casefold()))
    return entities.order_by("-frequency", "name")[:limit]
