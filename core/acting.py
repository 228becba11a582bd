"""Whose data a page shows: the signed-in person's own or, for staff, one end-user's (the operator's console).

Staff open another user's pages under /users/<id>/…: /users/7/memories/ is user 7's memory browser. This
middleware takes the prefix off before the address is resolved, so the same views answer, and adds it to the
script prefix, so every reverse() and {% url %} on those pages (links, form actions, htmx requests, redirects)
stays with that user without any template carrying a parameter. A view that scopes data reads
`subject_user(request)` instead of `request.user` and says so with @subject_view; under the prefix any other view
is refused (404), or for a GET sent to the signed-in person's own address. Writes still name `request.user`, the
staff member, as their editor.

Anyone but staff gets 404 for every address under /users/<id>/, whether or not the user exists (a signed-out
visitor is sent to sign in, whatever the id). Every request there that is not a read is recorded as a
SubjectChange with the staff member who made it.
"""

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import get_script_prefix, reverse, set_script_prefix

from core.errors import RequestRefused
from core.models import SubjectChange

PREFIX = re.compile(r"^/users/(?P<pk>[0-9]{1,18})(?P<rest>/.*)$")
READS = frozenset({"GET", "HEAD", "OPTIONS"})


def subject_view[View: Callable[..., Any]](view: View) -> View:
    """Mark a page view that scopes its data with subject_user(), so staff may open it under /users/<id>/.
    Put it above the other decorators: the middleware reads the mark on the view the URL resolves to."""
    view.subject_view = True  # type: ignore[attr-defined]
    return view


def subject_user(request: HttpRequest) -> User:
    """The user whose data this request reads and changes: the one under /users/<id>/ (staff only), else the
    signed-in user."""
    return getattr(request, "subject", None) or request.user  # type: ignore[return-value]


def viewing_other(request: HttpRequest) -> bool:
    """True when a staff member is looking at someone else's data."""
    subject = getattr(request, "subject", None)
    return subject is not None and subject.pk != request.user.pk


def display_name(user: User) -> str:
    return user.get_full_name() or user.get_username()


def user_prefix(user: User) -> str:
    """The path under which staff see `user`'s pages (after the site's own script prefix)."""
    return f"users/{user.pk}/"


def own_url(request: HttpRequest, url: str) -> str:
    """`url`, reversed on this page, as the signed-in person's own address: without the /users/<id> part."""
    own = getattr(request, "own_script_prefix", None)
    current = get_script_prefix()
    if own is None or not url.startswith(current):
        return url
    return own + url[len(current) :]


def subject_url(user: User, name: str, *args: Any) -> str:
    """The address of page `name` showing `user`'s data (for links from the Users page)."""
    return get_script_prefix() + user_prefix(user) + reverse(name, args=args)[len(get_script_prefix()) :]


class SubjectMiddleware:
    """Serves /users/<id>/<page> as <page> with that user as the subject; see the module's docstring."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        match = PREFIX.match(request.path_info)
        if match is None:
            return self.get_response(request)
        viewer = request.user
        if not viewer.is_authenticated:
            # The same answer for every id, so it tells nothing about which users exist.
            return redirect_to_login(request.get_full_path())
        if not viewer.is_staff:
            raise Http404("No page is at this address.")
        subject = User.objects.filter(pk=int(match["pk"])).first()
        if subject is None:
            raise Http404("No user has this id.")
        own_prefix = get_script_prefix()
        # Django caches these two on first read with the script prefix of that moment: read them before it changes.
        settings.STATIC_URL, settings.MEDIA_URL  # noqa: B018
        request.path_info = match["rest"]
        request.subject = subject  # type: ignore[attr-defined]
        request.own_script_prefix = own_prefix  # type: ignore[attr-defined]
        set_script_prefix(own_prefix + user_prefix(subject))
        try:
            response = self.get_response(request)
        finally:
            set_script_prefix(own_prefix)
        if request.method not in READS and subject.pk != viewer.pk:
            match_ = request.resolver_match
            SubjectChange.objects.create(
                staff=viewer,
                subject=subject,
                method=(request.method or "")[:7],
                path=request.path_info[:500],
                view=((match_.url_name or "") if match_ else "")[:100],
                status=response.status_code,
            )
        return response

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        if getattr(request, "subject", None) is None or getattr(view_func, "subject_view", False):
            return None
        # A page that only ever shows the signed-in person's own things (API keys, chat, health): a link to it
        # from someone else's pages leads to one's own; anything but a read is refused.
        if request.method in ("GET", "HEAD"):
            query = request.META.get("QUERY_STRING", "")
            own = request.own_script_prefix + request.path_info.lstrip("/")  # type: ignore[attr-defined]
            return HttpResponseRedirect(f"{own}?{query}" if query else own)
        raise Http404("This page cannot be opened for another user.")


def subject(request: HttpRequest) -> dict[str, Any]:
    """Template context: whose data the page shows, when it is not the viewer's own (base.html's banner)."""
    if not viewing_other(request):
        return {}
    shown: User = request.subject  # type: ignore[attr-defined]
    section = request.path_info.strip("/").split("/", 1)[0]
    own = request.own_script_prefix  # type: ignore[attr-defined]
    return {
        "subject": shown,
        "subject_name": display_name(shown),
        "own_section_url": own + (f"{section}/" if section else ""),
        "users_url": own_url(request, reverse("users")),
    }


# --- the JSON API: a staff key reads another user's data with `user=<id>` ----------------------------------------

UNKNOWN_USER = "No user with this id is visible to this key."
USER_PARAM = (
    "Staff keys only (a key whose owner is staff): read this user's data instead of the key owner's; the id is "
    "the one GET /api/v1/admin/users lists. Any other key, or an id that does not exist, gets 404."
)


class UserNotVisible(RequestRefused):
    status = 404


def api_subject(owner: User, user_id: int | None) -> User:
    """The user an API read is about: the key's owner, or (for a staff owner only) the user `user_id` names.
    Everyone else gets the same 404 for every id, so the answer tells nothing about which users exist."""
    if user_id is None or user_id == owner.pk:
        return owner
    subject = User.objects.filter(pk=user_id).first() if owner.is_staff else None
    if subject is None:
        raise UserNotVisible(UNKNOWN_USER)
    return subject
