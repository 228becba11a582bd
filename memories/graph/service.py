"""The entity graph: merging and deleting entities, neighbourhood queries, and the Neo4j mirror of both.

Entity and Relation rows are the truth. When NEO4J_URI is set, every saved or deleted row is mirrored by its
primary key (MERGE on the id, so replays are harmless) through the mirror outbox (core.mirror_outbox: entries
added by memories.signals in the row's transaction); graph queries then read Neo4j, else the SQL store.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from core import mirror_outbox, stores
from core.errors import RequestRefused
from core.graphstore import EntityNode, RelationEdge
from core.models import ApiKey, MirrorState
from core.queries import owned_by_pk
from memories.entities import entity_key
from memories.models import EditVia, Entity, EntityType, GraphAction, GraphEdit, MemoryEntity, Relation


class GraphRequestError(RequestRefused):
    """A graph edit that cannot be made (merging an entity into itself, a name already taken, …)."""


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


ENTITY_KIND = "entity"  # their entries in the mirror outbox
RELATION_KIND = "relation"


def register_mirror() -> None:
    """Entities, then relations (so each relation finds its endpoints), drained in the background; only with
    Neo4j: the SQL graph store reads the tables themselves."""

    def neo4j() -> bool:
        return bool(settings.NEO4J_URI)

    for kind, model, write, needs in (
        (ENTITY_KIND, Entity, mirror_entities, ""),
        (RELATION_KIND, Relation, mirror_relations, ENTITY_KIND),
    ):
        mirror_outbox.register(
            mirror_outbox.Writer(
                kind=kind,
                write=write,
                unsynced=partial(_unsynced, model),
                enabled=neo4j,
                needs=needs,
            )
        )


def _unsynced(model: type[Entity] | type[Relation]) -> QuerySet:
    return model.objects.exclude(mirror_state=MirrorState.SYNCED)


def mirror_entities(entity_ids: Sequence[str]) -> None:
    _mirror_rows(Entity, mirror_entity, entity_ids)


def mirror_relations(relation_ids: Sequence[str]) -> None:
    _mirror_rows(Relation, mirror_relation, relation_ids)


def _mirror_rows(
    model: type[Entity] | type[Relation], mirror_row: Callable[[str], None], ids: Sequence[str]
) -> None:
    for position, pk in enumerate(ids):
        try:
            mirror_row(pk)  # records the row's state, synced or failed
        except Exception as exc:
            # Neo4j is most likely down: the rows not tried yet show the same error until the retry.
            error = (str(exc) or exc.__class__.__name__)[:2000]
            model.objects.filter(pk__in=ids[position + 1 :]).update(
                mirror_state=MirrorState.FAILED, mirror_error=error
            )
            raise


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
    # A row edited meanwhile stays pending: the outbox entry its edit added mirrors it again.
    model.objects.filter(pk=pk, updated_at__lte=started).update(
        mirror_state=MirrorState.SYNCED, mirror_error="", mirrored_at=timezone.now()
    )


# --- curation: every change goes through one of these and leaves a GraphEdit -----------------------------------


@dataclass(frozen=True)
class Editor:
    """Who changes the graph and through which route; recorded with each change."""

    user: User | None = None
    api_key: ApiKey | None = None
    via: str = EditVia.SYSTEM


def _record(
    editor: Editor | None,
    *,
    owner_id: int,
    action: str,
    label: str,
    changes: dict,
    entity_id=None,
    relation_id=None,
) -> GraphEdit:
    editor = editor or Editor()
    return GraphEdit.objects.create(
        user_id=owner_id,
        editor=editor.user,
        api_key=editor.api_key,
        via=editor.via,
        action=action,
        entity_id=entity_id,
        relation_id=relation_id,
        label=label[:300],
        changes=changes,
    )


def _relation_label(relation: Relation) -> str:
    return f"{relation.source.name} -{relation.relation_type}-> {relation.target.name}"


# Saving these with the row makes a lost mirror task visible (pending) to the sweep and to the dashboard; without
# Neo4j the model's save (GraphMirroredModel) marks the row synced at once, since the tables are the graph.
_MIRROR_FIELDS = ["mirror_state", "mirror_error", "mirrored_at", "updated_at"]


def _mark_pending(row: Entity | Relation) -> None:
    row.mirror_state = MirrorState.PENDING


@transaction.atomic
def entity_update(
    *, entity: Entity, name: str | None = None, entity_type: str | None = None, editor: Editor | None = None
) -> Entity:
    """Rename and/or retype an entity. A new name whose key another entity of the user holds is refused: that is
    a merge."""
    fields: list[str] = []
    if name is not None:
        name = " ".join(name.split())
        key = entity_key(name)
        if not key or len(name) > 200:
            raise GraphRequestError(gettext("a name needs 1 to 200 characters, not only punctuation"))
        if name != entity.name:
            twin = Entity.objects.filter(user_id=entity.user_id, key=key).exclude(pk=entity.pk).first()
            if twin is not None:
                raise GraphRequestError(
                    gettext("“%(name)s” already exists: merge into it instead") % {"name": twin.name}
                )
            _record(
                editor,
                owner_id=entity.user_id,
                action=GraphAction.RENAME,
                label=entity.name,
                changes={"name": [entity.name, name]},
                entity_id=entity.pk,
            )
            entity.name, entity.key = name, key
            fields += ["name", "key"]
    if entity_type is not None and entity_type != entity.entity_type:
        if entity_type not in EntityType.values:
            raise GraphRequestError(
                gettext("type must be one of %(items)s") % {"items": ", ".join(EntityType.values)}
            )
        _record(
            editor,
            owner_id=entity.user_id,
            action=GraphAction.RETYPE,
            label=entity.name,
            changes={"entity_type": [entity.entity_type, entity_type]},
            entity_id=entity.pk,
        )
        entity.entity_type = entity_type
        fields.append("entity_type")
    if fields:
        _mark_pending(entity)
        entity.save(update_fields=[*fields, *_MIRROR_FIELDS])
    return entity


@transaction.atomic
def entity_merge(*, user: User, source: Entity, target: Entity, editor: Editor | None = None) -> Entity:
    """Fold `source` into `target`: its memory links and relations move over, duplicates add up, it is deleted."""
    if source.user_id != user.pk or target.user_id != user.pk:
        raise GraphRequestError(gettext("both entities must belong to you"))
    if source.pk == target.pk:
        raise GraphRequestError(gettext("an entity cannot be merged into itself"))
    _record(
        editor,
        owner_id=user.pk,
        action=GraphAction.MERGE,
        label=source.name,
        changes={"into": str(target.pk), "into_name": target.name},
        entity_id=source.pk,
    )
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
    _mark_pending(target)
    target.save(update_fields=["frequency", *_MIRROR_FIELDS])
    return target


@transaction.atomic
def entity_delete(*, entity: Entity, editor: Editor | None = None) -> None:
    _record(
        editor,
        owner_id=entity.user_id,
        action=GraphAction.DELETE,
        label=entity.name,
        changes={"entity_type": entity.entity_type, "frequency": entity.frequency},
        entity_id=entity.pk,
    )
    entity.delete()  # links and relations cascade; the signals mirror each deletion


def relation_type_normalised(value: str) -> str:
    """RELATED_TO style: upper case, words joined by underscores; CJK kept as typed."""
    return "_".join(value.split()).upper()


@transaction.atomic
def relation_update(
    *,
    relation: Relation,
    relation_type: str | None = None,
    strength: float | None = None,
    editor: Editor | None = None,
) -> Relation:
    changes: dict = {}
    if relation_type is not None:
        relation_type = relation_type_normalised(relation_type)
        if not relation_type or len(relation_type) > 50:
            raise GraphRequestError(gettext("a relation type needs 1 to 50 characters"))
        if relation_type != relation.relation_type:
            twin = Relation.objects.filter(
                user_id=relation.user_id,
                source_id=relation.source_id,
                target_id=relation.target_id,
                relation_type=relation_type,
            ).exclude(pk=relation.pk)
            if twin.exists():
                raise GraphRequestError(
                    gettext("these entities are already related as %(relation_type)s")
                    % {"relation_type": relation_type}
                )
            changes["relation_type"] = [relation.relation_type, relation_type]
    if strength is not None and round(strength, 3) != round(relation.strength, 3):
        if not 0 <= strength <= 1:
            raise GraphRequestError(gettext("strength must be between 0 and 1"))
        changes["strength"] = [round(relation.strength, 3), round(strength, 3)]
    if not changes:
        return relation
    _record(
        editor,
        owner_id=relation.user_id,
        action=GraphAction.EDIT_RELATION,
        label=_relation_label(relation),
        changes=changes,
        entity_id=relation.source_id,
        relation_id=relation.pk,
    )
    # Each is in `changes` only when it was given (not None).
    if "relation_type" in changes and relation_type is not None:
        relation.relation_type = relation_type
    if "strength" in changes and strength is not None:
        relation.strength = strength
    _mark_pending(relation)
    relation.save(update_fields=["relation_type", "strength", *_MIRROR_FIELDS])
    return relation


@transaction.atomic
def relation_delete(*, relation: Relation, editor: Editor | None = None) -> None:
    _record(
        editor,
        owner_id=relation.user_id,
        action=GraphAction.DELETE_RELATION,
        label=_relation_label(relation),
        changes={"relation_type": relation.relation_type, "strength": round(relation.strength, 3)},
        entity_id=relation.source_id,
        relation_id=relation.pk,
    )
    relation.delete()  # the post_delete signal removes it from the mirror


def entity_history(*, entity: Entity, limit: int = 20) -> list[GraphEdit]:
    """The recorded changes of an entity, its relations, and the entities merged into it, newest first."""
    edits = GraphEdit.objects.filter(user_id=entity.user_id).filter(
        Q(entity_id=entity.pk) | Q(action=GraphAction.MERGE, changes__into=str(entity.pk))
    )
    return list(edits.select_related("editor")[:limit])


@dataclass(frozen=True)
class Neighbourhood:
    center: Entity
    entities: list[tuple[Entity, int]]  # (entity, hops), nearest and most mentioned first
    relations: list[Relation]  # among the center and the entities, strongest first
    truncated: bool  # more entities were within reach than the limit


def neighbourhood(*, user: User, entity: Entity, depth: int = 1, limit: int = 300) -> Neighbourhood:
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


def neighbours_of(
    *, user: User, entities: Sequence[Entity], depth: int = 1, limit: int = 300
) -> list[tuple[Entity, int]]:
    """The entities within `depth` hops of any of `entities` (not themselves), nearest and most mentioned first."""
    if not entities or limit < 1:
        return []
    found, _ = stores.read_graph(
        lambda graph: graph.neighbors(str(user.pk), [str(e.pk) for e in entities], depth=depth, limit=limit)
    )
    hops = {neighbor.entity_id: neighbor.distance for neighbor in found}
    rows = owned_by_pk(Entity.objects.order_by(), user, hops)
    return sorted(((e, hops[str(e.pk)]) for e in rows), key=lambda pair: (pair[1], -pair[0].frequency))[
        :limit
    ]


# What the graph page and RelationOut show of a relation: loading less keeps 900 rows cheap.
RELATION_FIELDS = ("id", "user", "source", "target", "relation_type", "strength", "frequency", "evidence")


def relations_among(user: User, entities: Sequence[Entity], limit: int) -> list[Relation]:
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


def top_entities(*, user: User, limit: int | None = 300, entity_type: str = "", query: str = ""):
    entities = Entity.objects.filter(user=user).annotate(memory_count=Count("memory_links"))
    if entity_type:
        entities = entities.filter(entity_type=entity_type)
    if query:
        entities = entities.filter(Q(name__icontains=query) | Q(key__icontains=query.casefold()))
    return entities.order_by("-frequency", "name")[:limit]
