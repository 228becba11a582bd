"""The views every page needs and no app owns: sign-in and the error handlers."""

from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from django.views.defaults import server_error as django_server_error

from core.forms import SignInForm


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
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": "The server failed on this request; the error is logged."}, status=500)
    return django_server_error(request)
