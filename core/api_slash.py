"""The API answers every address with or without a trailing slash.

Django's APPEND_SLASH answers `POST /api/v1/memories` with a 301 to `/api/v1/memories/`, and HTTP clients follow
a 301 with a GET (python-requests, httpx, browsers): an agent's new memory became a listing of its memories, with
200 and nothing stored. For the API the request is served at the address that exists, with its method and
body (`/memories` as `/memories/`, `/documents/` as `/documents`); pages keep Django's redirect, which their
links and forms never need.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import get_urlconf, is_valid_path

API_PREFIX = "/api/"


class ApiSlashMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.startswith(API_PREFIX) and path != API_PREFIX:
            urlconf = getattr(request, "urlconf", None) or get_urlconf()
            if not is_valid_path(path, urlconf):
                other = path[:-1] if path.endswith("/") else f"{path}/"
                if is_valid_path(other, urlconf):
                    request.path_info = other
                    request.path = request.path[: len(request.path) - len(path)] + other
        return self.get_response(request)
