from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agents.models import AgentSession
from core.text import count_tokens
from memories.models import Memory, MemoryType

WORKING_MEMORY_TTL = timedelta(minutes=120)  # Hello-Agents' working memory TTL


def session_for_key(*, user: AbstractBaseUser, key: str) -> AgentSession:
    session, _ = AgentSession.objects.get_or_create(user=user, key=key, defaults={"title": key})
    return session


@transaction.atomic
def memory_create(
    *,
    user: AbstractBaseUser,
    content: str,
    memory_type: str = MemoryType.WORKING,
    importance: float = 0.5,
    session: AgentSession | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: datetime | None = None,
) -> Memory:
    if memory_type not in MemoryType.values:
        raise ValueError(f"memory_type must be one of {', '.join(MemoryType.values)}")
    if not content.strip():
        raise ValueError("content must not be empty")
    if not 0.0 <= importance <= 1.0:
        raise ValueError("importance must be between 0 and 1")
    created_at = created_at or timezone.now()
    return Memory.objects.create(
        user=user,
        session=session,
        memory_type=memory_type,
        content=content.strip(),
        importance=importance,
        metadata=metadata or {},
        token_count=count_tokens(content),
        created_at=created_at,
        expires_at=created_at + WORKING_MEMORY_TTL if memory_type == MemoryType.WORKING else None,
    )
