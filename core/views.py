"""The views every page needs and no app owns: sign-in, the error handlers and the favicon."""

import logging
from functools import cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.utils.translation import gettext
from django.views import defaults
from django.views.decorators.http import require_GET

from core.forms import SignInForm

logger = logging.getLogger(__name__)


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
    return request.path.startswith(("/api/", "/v1/", "/mcp"))


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """A URL no route matches: JSON for API clients (an id that is not a UUID lands here), the page otherwise."""
    if _is_api(request):
        return JsonResponse({"detail": gettext("Not found: no API route matches this path.")}, status=404)
    return render(request, "404.html", {"request_path": request.path, "show_nav": True}, status=404)


def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    """A request Django refused before a view could read it: a body over DATA_UPLOAD_MAX_MEMORY_SIZE is 413,
    and an API client gets JSON like every other API error (Django's own answer is an HTML page)."""
    too_big = isinstance(exception, RequestDataTooBig)
    if _is_api(request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024**2
        detail = (
            gettext(
                "The request body is over %(limit)s MiB (files go as multipart uploads, up to MNEMO_MAX_UPLOAD_MB)."
            )
            % {"limit": limit}
            if too_big
            else gettext("Bad request: the server could not read it.")
        )
        return JsonResponse({"detail": detail}, status=413 if too_big else 400)
    response = defaults.bad_request(request, exception)
    if too_big:
        response.status_code = 413
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 page in the site's layout, rendered from a plain dict: no context processors, so nothing here
    reads the session, the user or the database, any of which may be what just failed."""
    if _is_api(request):
        return JsonResponse(
            {"detail": gettext("The server failed on this request; the error is logged.")}, status=500
        )
    try:
        body = loader.get_template("500.html").render({"show_nav": True})
    except Exception:  # the page itself failed (say, a missing static manifest): still answer, in plain HTML
        logger.exception("the 500 page could not be rendered")
        title = gettext("Server error")
        body = f"<!doctype html><title>{title}</title><h1>{title} (500)</h1>"
    return HttpResponseServerError(body)


@cache
def _favicon() -> bytes:
    return (Path(settings.BASE_DIR) / "static" / "favicon.svg").read_bytes()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the page links: the SVG icon (base.html links it too)."""
    response = HttpResponse(_favicon(), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response
