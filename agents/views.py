from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.models import AgentSession


@login_required
@require_GET
def chat(request: HttpRequest) -> HttpResponse:
    sessions = AgentSession.objects.for_user(request.user)[:50]
    return render(request, "agents/chat.html", {"sessions": sessions})
