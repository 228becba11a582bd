"""The dashboard's chart data (JSON, read by console/static/console/dashboard.js) and its "Resync" button."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from console import dashboard
from console.tasks import resync_user_mirrors
from core.acting import subject_user, subject_view
from core.dispatch import dispatch
from core.pages import AuthenticatedHttpRequest


@subject_view
@require_GET
def dashboard_data(request: HttpRequest) -> HttpResponse:
    # 401, not a login redirect: the page's script fetches this and could not follow one usefully.
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Log in to see the dashboard."}, status=401)
    return JsonResponse(dashboard.stats(subject_user(request)))


@subject_view
@login_required
@require_POST
def mirror_resync(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Queue the resync of this user's pending and failed rows on the worker (Celery or the in-process pool)."""
    dispatch(resync_user_mirrors, subject_user(request).pk)
    message = _("Resync queued: pending and failed rows are being mirrored again.")
    if request.htmx:
        response = render(request, "console/dashboard.html#resync-status", {"resync_message": message})
        trigger_client_event(response, "mirrors-resynced", {})
        return response
    messages.success(request, message)
    return redirect("dashboard")
