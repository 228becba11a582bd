from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.defaults import page_not_found
from django.views.defaults import server_error as django_server_error

from agents.models import AgentSession
from core.forms import ApiKeyForm, SignInForm
from core.health import run_checks
from core.models import ApiKey
from core.services import api_key_create, api_key_revoke
from knowledge.models import Document
from memories.models import Entity, Memory


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    memories = Memory.objects.for_user(request.user)
    by_type = dict(memories.values_list("memory_type").annotate(n=Count("id")).order_by())
    context = {
        "memory_count": sum(by_type.values()),
        "by_type": by_type,
        "entity_count": Entity.objects.filter(user=request.user).count(),
        "document_count": Document.objects.for_user(request.user).count(),
        "session_count": AgentSession.objects.for_user(request.user).count(),
        "recent": memories.select_related("session")[:8],
    }
    return render(request, "core/dashboard.html", context)


@login_required
@require_GET
def health(request: HttpRequest) -> HttpResponse:
    checks = run_checks()
    return render(request, "core/health.html", {"checks": checks, "ok": all(c.ok for c in checks)})


@login_required
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    form = ApiKeyForm(request.POST or None)
    new_key = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            _, new_key = api_key_create(user=request.user, **form.cleaned_data)
            form = ApiKeyForm()
        else:
            status = 422
    keys = ApiKey.objects.for_user(request.user)
    return render(
        request, "core/api_keys.html", {"form": form, "keys": keys, "new_key": new_key}, status=status
    )


@login_required
@require_POST
def api_key_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    api_key = get_object_or_404(ApiKey.objects.for_user(request.user), pk=pk)
    api_key_revoke(api_key=api_key)
    if request.htmx:
        return render(request, "core/api_keys.html#key-row", {"key": api_key})
    return redirect("api_keys")


class SignInView(LoginView):
    """Django's sign-in with core.forms.SignInForm; a refused attempt over the rate answers 429."""

    form_class = SignInForm
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.blocked:
            response.status_code = 429
        return response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(("/api/", "/v1/"))


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """A URL no route matches: JSON for API clients (an id that is not a UUID lands here), the page otherwise."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found: no API route matches this path."}, status=404)
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": "The server failed on this request; the error is logged."}, status=500)
    return django_server_error(request)
