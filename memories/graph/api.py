"""Entities and relations over the JSON API, always scoped to the key's owner."""

from typing import TYPE_CHECKING, Annotated, Literal, cast
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status
from ninja.pagination import paginate

from core.auth import WRITE_AUTH, ApiRequest
from core.limits import MAX_QUERY_CHARS
from core.pagination import BoundedLimitOffset
from core.schemas import text_rules
from memories.graph import service
from memories.models import EditVia, Entity, EntityType, Relation
from memories.schemas import EntityDetailOut, EntityOut, MergeIn, NeighborhoodOut, RelationOut

router = Router(tags=["graph"])
SearchText = Annotated[str, *text_rules(MAX_QUERY_CHARS)]
if TYPE_CHECKING:  # a Literal built from the choices at import time is beyond the type checker
    EntityTypeName = str
else:
    EntityTypeName = Literal[tuple(EntityType.values)]


def _owner(request: HttpRequest) -> User:
    return cast(ApiRequest, request).auth.user


def _editor(request: HttpRequest) -> service.Editor:
    api_key = cast(ApiRequest, request).auth
    return service.Editor(user=api_key.user, api_key=api_key, via=EditVia.API)


def _entity(request: HttpRequest, entity_id: UUID) -> Entity:
    return get_object_or_404(Entity, pk=entity_id, user=_owner(request))


@router.get("/entities", response=list[EntityOut], summary="List or search entities")
@paginate(BoundedLimitOffset)
def list_entities(request: HttpRequest, q: SearchText = "", entity_type: EntityTypeName | None = None):
    return service.top_entities(user=_owner(request), limit=100_000, entity_type=entity_type or "", query=q)


@router.get(
    "/entities/{uuid:entity_id}",
    response=EntityDetailOut,
    summary="An entity with its memories and relations",
)
def get_entity(request: HttpRequest, entity_id: UUID):
    entity = _entity(request, entity_id)
    relations = Relation.objects.filter(Q(source=entity) | Q(target=entity)).select_related(
        "source", "target"
    )
    memories = list(entity.memories.select_related("session").order_by("-created_at")[:100])
    related = list(relations[:200])
    return {**EntityOut.from_orm(entity).dict(), "memories": memories, "relations": related}


@router.get(
    "/entities/{uuid:entity_id}/neighbors", response=NeighborhoodOut, summary="Entities within 1-3 hops"
)
def get_neighbors(
    request: HttpRequest,
    entity_id: UUID,
    depth: int = Query(1, ge=1, le=3),
    limit: int = Query(300, ge=1, le=1000),
):
    found = service.neighbourhood(
        user=_owner(request), entity=_entity(request, entity_id), depth=depth, limit=limit
    )
    return {
        "center": found.center,
        "neighbors": [{"entity": entity, "hops": hops} for entity, hops in found.entities],
        "relations": found.relations,
    }


@router.post(
    "/entities/{uuid:entity_id}/merge",
    response=EntityOut,
    summary="Merge this entity into another",
    auth=WRITE_AUTH,
)
def merge_entity(request: HttpRequest, entity_id: UUID, payload: MergeIn):
    source = _entity(request, entity_id)
    target = _entity(request, payload.into)
    return service.entity_merge(user=_owner(request), source=source, target=target, editor=_editor(request))


@router.delete(
    "/entities/{uuid:entity_id}",
    response={204: None},
    summary="Delete an entity and its relations",
    auth=WRITE_AUTH,
)
def delete_entity(request: HttpRequest, entity_id: UUID):
    service.entity_delete(entity=_entity(request, entity_id), editor=_editor(request))
    return Status(204, None)


@router.get("/relations", response=list[RelationOut], summary="List relations")
@paginate(BoundedLimitOffset)
def list_relations(request: HttpRequest, entity_id: UUID | None = None, relation_type: SearchText = ""):
    relations = Relation.objects.filter(user=_owner(request)).select_related("source", "target")
    if entity_id:
        relations = relations.filter(Q(source_id=entity_id) | Q(target_id=entity_id))
    if relation_type:
        relations = relations.filter(relation_type=relation_type)
    return relations
