"""The operator's API: the end-users of this Mnemo and what each holds, for keys whose owner is staff.

One user's memories, sessions and profile are read through the usual endpoints with `user=<id>` (core.acting).
"""

from datetime import datetime

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext, gettext_noop
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from console.users import UserSummary, find_users, summarize
from core.pagination import MAX_OFFSET

router = Router(tags=["admin"])
STAFF_ONLY = gettext_noop("This endpoint needs an API key whose owner is staff.")


class UserOut(Schema):
    id: int
    username: str
    name: str = Field(description="The full name, or the username when there is none.")
    email: str
    is_staff: bool
    is_active: bool
    date_joined: datetime
    memories: int
    documents: int
    sessions: int
    api_keys: int = Field(description="Keys that are not revoked.")
    storage_bytes: int = Field(description="Memory text and files, document files and their Markdown.")
    last_activity: datetime | None = Field(
        description="The latest of: sign-in, API key use, memory, session or document added."
    )


class UserPageOut(Schema):
    count: int
    items: list[UserOut]


def _out(summary: UserSummary) -> dict:
    user = summary.user
    return {
        "id": user.pk,
        "username": user.get_username(),
        "name": summary.name,
        "email": user.email,
        "is_staff": user.is_staff,
        "is_active": user.is_active,
        "date_joined": user.date_joined,
        "memories": summary.memories,
        "documents": summary.documents,
        "sessions": summary.sessions,
        "api_keys": summary.api_keys,
        "storage_bytes": summary.storage_bytes,
        "last_activity": summary.last_activity,
    }


def _require_staff(request: HttpRequest) -> None:
    if not request.auth.user.is_staff:  # type: ignore[attr-defined]
        raise HttpError(403, gettext(STAFF_ONLY))


@router.get("/admin/users", response=UserPageOut, summary="List users (staff keys only)")
def list_users(
    request: HttpRequest,
    q: str = Query("", max_length=200, description="Part of a username, name or email."),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    """Every user, by username, with what each holds. `count` is the number matching `q`."""
    _require_staff(request)
    users = find_users(q)
    return {
        "count": users.count(),
        "items": [_out(s) for s in summarize(list(users[offset : offset + limit]))],
    }


@router.get("/admin/users/{int:user_id}", response=UserOut, summary="One user (staff keys only)")
def get_user(request: HttpRequest, user_id: int):
    """Read their memories with GET /api/v1/memories/?user=<id>, their sessions with GET /api/v1/sessions/?user=<id>,
    their profile with GET /api/v1/profile?user=<id>, and search them with POST /api/v1/memories/search and
    `"user": <id>`."""
    _require_staff(request)
    return _out(summarize([get_object_or_404(User, pk=user_id)])[0])
