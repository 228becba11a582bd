"""The graph explorer: one page that draws the entity graph with cytoscape, and the endpoints it reads.

Every query starts from subject_user(request) (core.acting), and edits name request.user as their editor: another
user's entity or relation id is a 404, never a leak. The JSON endpoints answer 401 instead of a login redirect,
which a script fetching JSON could not follow usefully. The page never draws more than MAX_NODES entities; when a
search matches more, the answer says so and how many.
"""

import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from core.acting import subject_user, subject_view
from core.pages import AuthenticatedHttpRequest
from memories.entities import entity_key
from memories.graph import service
from memories.models import EditVia, Entity, EntityType, Memory, Relation

MAX_NODES = 300  # drawing more makes the canvas sluggish and the picture unreadable
MAX_EDGES = 3 * MAX_NODES
MAX_DEPTH = 3
PANEL_MEMORIES = 20
SEARCH_SEEDS = 10  # a search draws the neighbours of at most this many of its best matches
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


def _int_param(request: AuthenticatedHttpRequest, name: str, *, default: int, low: int, high: int) -> int:
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


def _type_param(request: AuthenticatedHttpRequest) -> str:
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
    if total <= shown:
        return ""
    return _("Showing %(shown)s of %(total)s entities — refine the search") % {"shown": shown, "total": total}


# --- the page ----------------------------------------------------------------------------------------------


@subject_view
@login_required
@require_GET
def graph_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    selected_type, depth = request.GET.get("type", ""), request.GET.get("depth", "")
    context = {
        "has_entities": Entity.objects.filter(user=subject_user(request)).exists(),
        "types": EntityType.choices,
        "q": request.GET.get("q", ""),
        "selected_type": selected_type if selected_type in EntityType.values else "",
        "depth": depth if depth in {"1", "2", "3"} else "1",
        "max_nodes": MAX_NODES,
    }
    return render(request, TEMPLATE, context)


# --- JSON for the canvas -------------------------------------------------------------------------------------


@subject_view
@_json_login_required
@require_GET
def graph_data(request: AuthenticatedHttpRequest) -> JsonResponse:
    """The most mentioned entities matching ?q= and ?type=, at most ?limit= (≤ MAX_NODES), and their relations."""
    limit = _int_param(request, "limit", default=MAX_NODES, low=1, high=MAX_NODES)
    filters: dict[str, Any] = {
        "user": subject_user(request),
        "entity_type": _type_param(request),
        "query": request.GET.get("q", "").strip(),
    }
    depth = _int_param(request, "depth", default=1, low=1, high=MAX_DEPTH)
    entities = list(service.top_entities(limit=limit, **filters))
    # Count every match (limit=None: the unsliced query) only when the page is full; otherwise it is all of them.
    total = len(entities) if len(entities) < limit else service.top_entities(limit=None, **filters).count()
    searched = (
        {"match": True} if filters["query"] else {}
    )  # a search marks its matches among their neighbours
    nodes = [_node(entity, memory_count=entity.memory_count, **searched) for entity in entities]
    neighbours: list[tuple[Entity, int]] = []
    if filters["query"] and entities:
        # A name search draws its best matches with their neighbourhood at once, not lone nodes to click.
        seeds = entities[:SEARCH_SEEDS]
        neighbours = service.neighbours_of(
            user=subject_user(request), entities=seeds, depth=depth, limit=MAX_NODES - len(entities)
        )
        neighbours = [(e, hops) for e, hops in neighbours if e not in entities]
        nodes += [_node(e, hops=hops, match=False) for e, hops in neighbours]
    relations = service.relations_among(
        subject_user(request), [*entities, *(e for e, _ in neighbours)], limit=MAX_EDGES
    )
    return JsonResponse(
        {
            "nodes": nodes,
            "edges": [_edge(relation) for relation in relations],
            "total": total,
            "shown": len(entities),
            "neighbours": len(neighbours),
            "max_nodes": MAX_NODES,
            "capped": total > len(entities),
            "message": _cap_message(len(entities), total),
        }
    )


@subject_view
@_json_login_required
@require_GET
def entity_neighbors(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> JsonResponse:
    """Entities within ?depth= hops (1-3) of one entity, nearest first, and the relations among all of them."""
    depth = _int_param(request, "depth", default=1, low=1, high=MAX_DEPTH)
    entity = get_object_or_404(Entity, pk=pk, user=subject_user(request))
    found = service.neighbourhood(user=subject_user(request), entity=entity, depth=depth, limit=MAX_NODES)
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


@subject_view
@login_required
@require_GET
def entity_memories(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    entity = get_object_or_404(Entity, pk=pk, user=subject_user(request))
    return render(request, f"{TEMPLATE}#entity-panel", _entity_panel(request, entity))


def _entity_panel(request: AuthenticatedHttpRequest, entity: Entity, **extra) -> dict:
    memories = Memory.objects.for_user(subject_user(request)).filter(entity_links__entity=entity).distinct()
    return {
        "entity": entity,
        "memories": list(memories.order_by("-created_at", "-id")[:PANEL_MEMORIES]),
        "memory_total": memories.count(),
        "relation_total": Relation.objects.filter(user=subject_user(request))
        .filter(Q(source=entity) | Q(target=entity))
        .count(),
        "history": service.entity_history(entity=entity),
        "types": EntityType.choices,
        **extra,
    }


@subject_view
@login_required
@require_GET
def relation_memories(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    return render(request, f"{TEMPLATE}#relation-panel", _relation_panel(request, _relation(request, pk)))


def _relation(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> Relation:
    return get_object_or_404(
        Relation.objects.select_related("source", "target"), pk=pk, user=subject_user(request)
    )


def _relation_panel(request: AuthenticatedHttpRequest, relation: Relation, **extra) -> dict:
    mine = Memory.objects.for_user(subject_user(request))
    evidence = mine.filter(pk=relation.evidence_id).first() if relation.evidence_id else None
    both = (
        mine.filter(entity_links__entity=relation.source_id)
        .filter(entity_links__entity=relation.target_id)
        .exclude(pk=relation.evidence_id)
        .distinct()
        .order_by("-created_at", "-id")
    )
    return {
        "relation": relation,
        "evidence": evidence,
        "co_mentions": list(both[:PANEL_MEMORIES]),
        "types": EntityType.choices,
        **extra,
    }


# --- curation from the side panel: each form posts here, gets the fresh panel back, and tells the canvas -------


def _editor(request: AuthenticatedHttpRequest) -> service.Editor:
    return service.Editor(user=request.user, via=EditVia.PAGE)


def _changed(
    request: AuthenticatedHttpRequest, response: HttpResponse, change: dict, done: str
) -> HttpResponse:
    """The panel for htmx with a `graph-changed` event for graph.js to redraw; a redirect to the page without."""
    if request.htmx:
        trigger_client_event(response, "graph-changed", change)
        return response
    messages.success(request, done)
    return redirect("graph")


def _refused(request: AuthenticatedHttpRequest, entity: Entity, error: str) -> HttpResponse:
    if request.htmx:
        context = _entity_panel(request, entity, error=error)
        return render(request, f"{TEMPLATE}#entity-panel", context, status=422)
    messages.error(request, error)
    return redirect("graph")


@subject_view
@login_required
@require_POST
def entity_edit(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Rename and retype an entity."""
    entity = get_object_or_404(Entity, pk=pk, user=subject_user(request))
    try:
        service.entity_update(
            entity=entity,
            name=request.POST.get("name", entity.name),
            entity_type=request.POST.get("entity_type", entity.entity_type),
            editor=_editor(request),
        )
    except service.GraphRequestError as exc:
        entity.refresh_from_db()
        return _refused(request, entity, str(exc))
    response = render(request, f"{TEMPLATE}#entity-panel", _entity_panel(request, entity, saved=True))
    return _changed(request, response, {"action": "update", "node": _node(entity)}, f"Saved {entity.name}.")


def _merge_target(request: AuthenticatedHttpRequest, entity: Entity) -> Entity | None:
    """The entity named in ?into= (its name, as the merge key compares them, or its id), of this user."""
    into = request.POST.get("into", "").strip()
    mine = Entity.objects.filter(user=subject_user(request))
    try:
        by_id = mine.filter(pk=uuid.UUID(into)).first()
    except ValueError:
        by_id = None
    return by_id or mine.filter(key=entity_key(into)).first() if into else None


@subject_view
@login_required
@require_POST
def entity_merge(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    entity = get_object_or_404(Entity, pk=pk, user=subject_user(request))
    target = _merge_target(request, entity)
    if target is None:
        return _refused(
            request, entity, "No entity of yours has that name: type the exact name to merge into."
        )
    source_id, source_name = str(entity.pk), entity.name
    try:
        service.entity_merge(
            user=subject_user(request), source=entity, target=target, editor=_editor(request)
        )
    except service.GraphRequestError as exc:
        return _refused(request, entity, str(exc))
    found = service.neighbourhood(user=subject_user(request), entity=target, depth=1, limit=MAX_NODES)
    change = {
        "action": "merge",
        "removed": source_id,
        "node": _node(target),
        "nodes": [_node(neighbour, hops=hops) for neighbour, hops in found.entities],
        "edges": [_edge(relation) for relation in found.relations[:MAX_EDGES]],
    }
    context = _entity_panel(request, target, merged=source_name)
    response = render(request, f"{TEMPLATE}#entity-panel", context)
    return _changed(request, response, change, f"Merged {source_name} into {target.name}.")


@subject_view
@login_required
@require_POST
def entity_delete(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    entity = get_object_or_404(Entity, pk=pk, user=subject_user(request))
    entity_id, name = str(entity.pk), entity.name
    service.entity_delete(entity=entity, editor=_editor(request))
    response = render(request, f"{TEMPLATE}#deleted-panel", {"name": name, "kind": "entity"})
    return _changed(request, response, {"action": "delete", "removed": entity_id}, f"Deleted {name}.")


@subject_view
@login_required
@require_POST
def relation_edit(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    relation = _relation(request, pk)
    error = ""
    try:
        strength = float(request.POST.get("strength", relation.strength))
    except ValueError:
        error = "strength must be a number between 0 and 1"
    if not error:
        try:
            service.relation_update(
                relation=relation,
                relation_type=request.POST.get("relation_type", relation.relation_type),
                strength=strength,
                editor=_editor(request),
            )
        except service.GraphRequestError as exc:
            error = str(exc)
    if error:
        relation.refresh_from_db()
        if not request.htmx:
            messages.error(request, error)
            return redirect("graph")
        context = _relation_panel(request, relation, error=error)
        return render(request, f"{TEMPLATE}#relation-panel", context, status=422)
    response = render(request, f"{TEMPLATE}#relation-panel", _relation_panel(request, relation, saved=True))
    done = _("Saved %(source)s -%(type)s-> %(target)s.") % {
        "source": relation.source.name,
        "type": relation.relation_type,
        "target": relation.target.name,
    }
    return _changed(request, response, {"action": "update-edge", "edge": _edge(relation)}, done)


@subject_view
@login_required
@require_POST
def relation_delete(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    relation = _relation(request, pk)
    relation_id, label = str(relation.pk), f"{relation.source.name} → {relation.target.name}"
    service.relation_delete(relation=relation, editor=_editor(request))
    response = render(request, f"{TEMPLATE}#deleted-panel", {"name": label, "kind": "relation"})
    return _changed(request, response, {"action": "delete-edge", "removed": relation_id}, f"Deleted {label}.")
