"""API-key authentication for the JSON API: `X-API-Key: <key>` or `Authorization: Bearer <key>`."""

from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import HttpError
from ninja.security import APIKeyHeader, HttpBearer

from core import ratelimits
from core.models import ApiKey

# Writing last_used_at on every request would turn each read into a write; a minute's precision is enough.
LAST_USED_PRECISION = timedelta(minutes=1)


def authenticate_api_key(raw_key: str) -> ApiKey | None:
    parts = ApiKey.split(raw_key or "")
    if parts is None:
        return None
    prefix, secret = parts
    api_key = ApiKey.objects.active().select_related("user").filter(prefix=prefix).first()
    if api_key is None or not api_key.matches(secret) or not api_key.user.is_active:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_PRECISION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


class TooManyKeyFailures(Exception):
    """This address sent too many wrong keys (core.ratelimits); every key is refused until the window passes."""

    message = "Too many requests with a wrong API key from this address. Wait a minute and try again."


def authenticate_request_key(request: HttpRequest, raw_key: str) -> ApiKey | None:
    """The key a request sends, with wrong keys counted per address; raises TooManyKeyFailures over the rate."""
    if ratelimits.api_key_blocked(request):
        raise TooManyKeyFailures(TooManyKeyFailures.message)
    api_key = authenticate_api_key(raw_key)
    if api_key is None and raw_key:
        ratelimits.record_api_key_failure(request)
    return api_key


def request_key_header(request: HttpRequest) -> str:
    """The raw key a request sends outside ninja: `Authorization: Bearer <key>`, else `X-API-Key: <key>`."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip()
    return request.headers.get("X-API-Key", "")


def _ninja_key(request: HttpRequest, raw_key: str) -> ApiKey | None:
    try:
        return authenticate_request_key(request, raw_key)
    except TooManyKeyFailures as exc:
        raise HttpError(429, str(exc)) from None


class ApiKeyHeaderAuth(APIKeyHeader):
    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return _ninja_key(request, key or "")


class BearerKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return _ninja_key(request, token)


API_AUTH = [ApiKeyHeaderAuth(), BearerKeyAuth()]


def require_write(request: HttpRequest) -> ApiKey:
    """The request's key, which must carry the write scope (403 otherwise)."""
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not api_key.can_write:
        raise HttpError(403, "This API key is read-only; create a key with the write scope to change data.")
    return api_key
