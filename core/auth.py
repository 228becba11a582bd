"""API-key authentication for the JSON API: `X-API-Key: <key>` or `Authorization: Bearer <key>`."""

from datetime import timedelta
from typing import cast

from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from ninja.errors import HttpError
from ninja.security import APIKeyHeader, HttpBearer

from core import ratelimits
from core.models import ApiKey


class ApiRequest(HttpRequest):
    """A request past the API's key auth, for the type checker: ninja sets `auth` to what `authenticate`
    returned, an ApiKey here (a router with `auth=None` would leave it unset). The endpoints take the plain
    HttpRequest and cast where they read the key."""

    auth: ApiKey


# Writing last_used_at on every request would turn each read into a write; a minute's precision is enough.
LAST_USED_PRECISION = timedelta(minutes=1)


def authenticate_api_key(raw_key: str) -> ApiKey | None:
    parts = ApiKey.split(raw_key or "")
    if parts is None:
        return None
    prefix, secret = parts
    try:
        # get(), not first(): the prefix is unique, and first() would have the ORM build an ORDER BY on the
        # model's ordering for every request (0.1 of the no-op request's 1.1 ms in process).
        api_key = ApiKey.objects.active().select_related("user").get(prefix=prefix)
    except ApiKey.DoesNotExist:
        return None
    if not api_key.matches(secret) or not api_key.user.is_active:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_PRECISION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


class TooManyKeyFailures(Exception):
    """This address sent too many wrong keys (core.ratelimits): its wrong keys get 429 until the window passes;
    a valid key is still accepted."""

    message = "Too many requests with a wrong API key from this address. Wait a minute and try again."


def authenticate_request_key(request: HttpRequest, raw_key: str) -> ApiKey | None:
    """The key a request sends; a wrong one is counted per address and, over the rate, raises
    TooManyKeyFailures. A valid key is never refused for what other clients at its address did."""
    api_key = authenticate_api_key(raw_key)
    if api_key is not None or not raw_key:
        return api_key
    if ratelimits.api_key_failures_blocked(request):
        raise TooManyKeyFailures(TooManyKeyFailures.message)
    ratelimits.record_api_key_failure(request)
    return None


def request_key_header(request: HttpRequest) -> str:
    """The raw key a request sends outside ninja: `Authorization: Bearer <key>`, else `X-API-Key: <key>`."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip()
    return request.headers.get("X-API-Key", "")


READ_ONLY = gettext_noop("This API key is read-only; create a key with the write scope to change data.")


def _ninja_key(request: HttpRequest, raw_key: str, *, write: bool) -> ApiKey | None:
    try:
        api_key = authenticate_request_key(request, raw_key)
    except TooManyKeyFailures as exc:
        raise HttpError(429, str(exc)) from None
    if write and api_key is not None and not api_key.can_write:
        raise HttpError(403, gettext(READ_ONLY))
    return api_key


class ApiKeyHeaderAuth(APIKeyHeader):
    """`X-API-Key`; with `write=True` only a key with the write scope passes (a read-only one gets 403)."""

    param_name = "X-API-Key"

    def __init__(self, *, write: bool = False) -> None:
        super().__init__()
        self.write = write

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return _ninja_key(request, key or "", write=self.write)


class BearerKeyAuth(HttpBearer):
    """`Authorization: Bearer`; `write` as for ApiKeyHeaderAuth. One class per header, whatever the scope, so
    the API docs show one pair of security schemes and one "Authorize"."""

    def __init__(self, *, write: bool = False) -> None:
        super().__init__()
        self.write = write

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return _ninja_key(request, token, write=self.write)


API_AUTH = [ApiKeyHeaderAuth(), BearerKeyAuth()]
# For every operation that changes data: `@router.post(..., auth=WRITE_AUTH)`.
WRITE_AUTH = [ApiKeyHeaderAuth(write=True), BearerKeyAuth(write=True)]


def require_write(request: HttpRequest) -> ApiKey:
    """The request's key, which must carry the write scope (403 otherwise): for the few endpoints whose body
    decides whether they write (a tool's action, a dedupe that is not a dry run); the others say WRITE_AUTH."""
    api_key = cast(ApiRequest, request).auth
    if not api_key.can_write:
        raise HttpError(403, gettext(READ_ONLY))
    return api_key
