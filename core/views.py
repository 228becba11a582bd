"""The views every page needs and no app owns: sign-in, the error handlers and the favicon."""

import logging
from functools import cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
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
        return JsonResponse({"detail": "Not found: no API route matches this path."}, status=404)
    return render(request, "404.html", {"request_path": request.path, "show_nav": True}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 page in the site's layout, rendered from a plain dict: no context processors, so nothing here
    reads the session, the user or the database, any of which may be what just failed."""
    if _is_api(request):
        return JsonResponse({"detail": "The server failed on this request; the error is logged."}, status=500)
    try:
        body = loader.get_template("500.html").render({"show_nav": True})
    except Exception:  # the page itself failed (say, a missing static manifest): still answer, in plain HTML
        logger.exception("the 500 page could not be rendered")
        body = "<!doctype html><title>Server error</title><h1>Server error (500)</h1>"
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
