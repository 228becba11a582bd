from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from knowledge.models import Document


@login_required
@require_GET
def library(request: HttpRequest) -> HttpResponse:
    documents = Document.objects.for_user(request.user)
    return render(request, "knowledge/library.html", {"documents": documents})
