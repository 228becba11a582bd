"""API-key authentication for the JSON API: `X-API-Key: <key>` or `Authorization: Bearer <key>`."""

from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import HttpError
from ninja.security import APIKeyHeader, HttpBearer

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


class ApiKeyHeaderAuth(APIKeyHeader):
    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return authenticate_api_key(key or "")


class BearerKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return authenticate_api_key(token)


API_AUTH = [ApiKeyHeaderAuth(), BearerKeyAuth()]


def require_write(request: HttpRequest) -> ApiKey:
    """The request's key, which must carry the write scope (403 otherwise)."""
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not api_key.can_write:
        raise HttpError(403, "This API key is read-only; create a key with the write scope to change data.")
    return api_key
