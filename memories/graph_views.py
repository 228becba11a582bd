"""The graph explorer: one page that draws the entity graph with cytoscape, and the endpoints it reads.

Every query starts from request.user: another user's entity or relation id is a 404, never a leak. The JSON
endpoints answer 401 instead of a login redirect, which a script fetching JSON could not follow usefully. The
page never draws more than MAX_NODES entities; when a search matches more, the answer says so and how many.
"""

import uuid
from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from memories import graph
from memories.models import Entity, EntityType, Memory, Relation

MAX_NODES = 300  # drawing more makes the canvas sluggish and the picture unreadable
MAX_EDGES = 3 * MAX_NODES
MAX_DEPTH = 3
PANEL_MEMORIES = 20
TEMPLATE = "memories/graph.html"


class BadParameter(ValueError):
    pass


def _json_login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return JsonResponse({"detail": "Log in to see the graph."}, status=401)
        try:
            return view(request, *args, **kwargs)
        except BadParameter as exc:
            return JsonResponse({"detail": str(exc)}, status=400)

    return wrapper


def _int_param(request: HttpRequest, name: str, *, default: int, low: int, high: int) -> int:
    value = request.GET.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadParameter(f"{name} must be a whole number from {low} to {high}") from None
    if not low <= number <= high:
        raise BadParameter(f"{name} must be a whole number from {low} to {high}")
    return number


def _type_param(request: HttpRequest) -> str:
    entity_type = request.GET.get("type", "").strip()
    if entity_type and entity_type not in EntityType.values:
        raise BadParameter(f"type must be one of {', '.join(EntityType.values)}")
    return entity_type


def _node(entity: Entity, **extra) -> dict:
    return {
        "id": str(entity.pk),
        "label": entity.name,
        "type": entity.entity_type,
        "type_label": entity.get_entity_type_display(),
        "frequency": entity.frequency,
        **extra,
    }


def _edge(relation: Relation) -> dict:
    return {
        "id": str(relation.pk),
        "source": str(relation.source_id),
        "target": str(relation.target_id),
        "type": relation.relation_type,
        "strength": round(relation.strength, 3),
        "frequency": relation.frequency,
    }


def _cap_message(shown: int, total: int) -> str:
    return f"Showing {shown} of {total} entities — refine the search" if total > shown else ""


# --- the page ----------------------------------------------------------------------------------------------


@login_required
@require_GET
def graph_page(request: HttpRequest) -> HttpResponse:
    selected_type, depth = request.GET.get("type", ""), request.GET.get("depth", "")
    context = {
        "has_entities": Entity.objects.filter(user=request.user).exists(),
        "types": EntityType.choices,
        "q": request.GET.get("q", ""),
        "selected_type": selected_type if selected_type in EntityType.values else "",
        "depth": depth if depth in {"1", "2", "3"} else "1",
        "max_nodes": MAX_NODES,
    }
    return render(request, TEMPLATE, context)


# --- JSON for the canvas -------------------------------------------------------------------------------------


@_json_login_required
@require_GET
def graph_data(request: HttpRequest) -> JsonResponse:
    """The most mentioned entities matching ?q= and ?type=, at most ?limit= (≤ MAX_NODES), and their relations."""
    limit = _int_param(request, "limit", default=MAX_NODES, low=1, high=MAX_NODES)
    filters = {
        "user": request.user,
        "entity_type": _type_param(request),
        "query": request.GET.get("q", "").strip(),
    }
    entities = list(graph.top_entities(limit=limit, **filters))
    # Count every match (limit=None: the unsliced query) only when the page is full; otherwise it is all of them.
    total = len(entities) if len(entities) < limit else graph.top_entities(limit=None, **filters).count()
    relations = graph.relations_among(request.user, entities, limit=MAX_EDGES)
    return JsonResponse(
        {
            "nodes": [_node(entity, memory_count=entity.memory_count) for entity in entities],
            "edges": [_edge(relation) for relation in relations],
            "total": total,
            "shown": len(entities),
            "max_nodes": MAX_NODES,
            "capped": total > len(entities),
            "message": _cap_message(len(entities), total),
        }
    )


@_json_login_required
@require_GET
def entity_neighbors(request: HttpRequest, pk: uuid.UUID) -> JsonResponse:
    """Entities within ?depth= hops (1-3) of one entity, nearest first, and the relations among all of them."""
    depth = _int_param(request, "depth", default=1, low=1, high=MAX_DEPTH)
    entity = get_object_or_404(Entity, pk=pk, user=request.user)
    found = graph.neighbourhood(user=request.user, entity=entity, depth=depth, limit=MAX_NODES)
    return JsonResponse(
        {
            "center": _node(entity, hops=0),
            "nodes": [_node(neighbour, hops=hops) for neighbour, hops in found.entities],
            "edges": [_edge(relation) for relation in found.relations[:MAX_EDGES]],
            "depth": depth,
            "truncated": found.truncated,
            "max_nodes": MAX_NODES,
        }
    )


# --- HTML for the side panel (htmx swaps it into #graph-panel) -------------------------------------------------


@login_required
@require_GET
def entity_memories(request: HttpRequest, pk: uuid.UUID) -> HttpResponse:
    entity = get_object_or_404(Entity, pk=pk, user=request.user)
    memories = Memory.objects.for_user(request.user).filter(entity_links__entity=entity).distinct()
    context = {
        "entity": entity,
        "memories": list(memories.order_by("-created_at", "-id")[:PANEL_MEMORIES]),
        "memory_total": memories.count(),
        "relation_total": Relation.objects.filter(user=request.user)
        .filter(Q(source=entity) | Q(target=entity))
        .count(),
    }
    return render(request, f"{TEMPLATE}#entity-panel", context)


@login_required
@require_GET
def relation_memories(request: HttpRequest, pk: uuid.UUID) -> HttpResponse:
    relation = get_object_or_404(
        Relation.objects.select_related("source", "target"), pk=pk, user=request.user
    )
    mine = Memory.objects.for_user(request.user)
    evidence = mine.filter(pk=relation.evidence_id).first() if relation.evidence_id else None
    both = (
        mine.filter(entity_links__entity=relation.source_id)
        .filter(entity_links__entity=relation.target_id)
        .exclude(pk=relation.evidence_id)
        .distinct()
        .order_by("-created_at", "-id")
    )
    context = {"relation": relation, "evidence": evidence, "co_mentions": list(both[:PANEL_MEMORIES])}
    return render(request, f"{TEMPLATE}#relation-panel", context)
