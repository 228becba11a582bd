"""What every page view shares: where a form sends the browser next, and how to get there under htmx."""

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it, for the type checker (django-htmx's documented idiom)."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """A page request behind `login_required`, whose user is therefore signed in (django-stubs' documented
    idiom); every page passes through django-htmx's middleware too."""

    user: User


def next_url(request: HttpRequest, default: str) -> str:
    """The form's `next` when it points back into this site (never elsewhere: an open redirect), else `default`."""
    url = request.POST.get("next", "")
    if url and url_has_allowed_host_and_scheme(url, {request.get_host()}, request.is_secure()):
        return url
    return default


def navigate(request: HtmxHttpRequest, url: str) -> HttpResponse:
    # htmx would swap a followed redirect into the element that asked; make the browser navigate instead.
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def from_row(request: HtmxHttpRequest, row_id: str) -> bool:
    """An htmx action from a list's row (its element id is the HX-Target), which gets the row partial back."""
    return bool(request.htmx) and request.htmx.target == row_id
