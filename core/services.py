from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from core.models import ApiKey, ApiKeyScope


@transaction.atomic
def api_key_create(*, user: User, name: str, scope: str = ApiKeyScope.WRITE) -> tuple[ApiKey, str]:
    """Create a key; returns it with the full secret, which is never stored and cannot be shown again."""
    if scope not in ApiKeyScope.values:
        raise ValueError(f"scope must be one of {', '.join(ApiKeyScope.values)}")
    raw_key, prefix, hashed = ApiKey.generate()
    api_key = ApiKey.objects.create(
        user=user, name=name.strip() or "API key", prefix=prefix, hashed_secret=hashed, scope=scope
    )
    return api_key, raw_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key
