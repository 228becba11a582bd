from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memories.models import Entity, Memory, MemoryType, Relation

PAGE_SIZE = 50


@login_required
@require_GET
def memory_list(request: HttpRequest) -> HttpResponse:
    memories = Memory.objects.for_user(request.user).select_related("session")
    memory_type = request.GET.get("type", "")
    if memory_type in MemoryType.values:
        memories = memories.filter(memory_type=memory_type)
    page = Paginator(memories, PAGE_SIZE).get_page(request.GET.get("page"))
    template = "memories/memory_list.html"
    if request.htmx.target == "memory-table":
        template += "#memory-table"
    return render(request, template, {"page": page, "types": MemoryType.choices, "memory_type": memory_type})


@login_required
@require_GET
def graph(request: HttpRequest) -> HttpResponse:
    entities = Entity.objects.filter(user=request.user)[:300]
    relations = Relation.objects.filter(user=request.user).select_related("source", "target")[:300]
    return render(request, "memories/graph.html", {"entities": entities, "relations": relations})
