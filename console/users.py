"""The operator's list of end-users: who they are and how much each holds, for the Users page and the staff API.

An agent's `user_id` becomes a Mnemo user (core.tooling.tool_user), so an install serving agents holds one user per
end-user: thousands. The list pages by name, and counts only the page's users, each figure one grouped query over
the per-user indexes (bench/console_pages.py measures it at 10,000 users).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Count, F, Func, IntegerField, Max, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce

from conversations.models import AgentSession
from core.models import ApiKey
from knowledge.models import Document
from memories.models import Memory


class ByteLength(Func):
    """A text column's length in bytes (UTF-8), not in characters: what it takes to store."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra)


@dataclass
class UserSummary:
    user: User
    memories: int = 0
    documents: int = 0
    sessions: int = 0
    api_keys: int = 0  # active (not revoked) keys
    storage_bytes: int = 0  # memory text and files, document files and their Markdown
    last_activity: datetime | None = None

    @property
    def name(self) -> str:
        return self.user.get_full_name() or self.user.get_username()


def find_users(query: str = "") -> QuerySet[User]:
    """Users whose username, name or email contains `query`, by username."""
    users = User.objects.order_by("username", "pk")
    query = query.strip()
    if query:
        users = users.filter(
            Q(username__icontains=query)
            | Q(first_name__icontains=query)
            | Q(last_name__icontains=query)
            | Q(email__icontains=query)
        )
    return users


def _grouped(queryset: QuerySet, ids: list[int], **figures) -> dict[int, dict]:
    rows = queryset.filter(user__in=ids).values("user").annotate(**figures).order_by()
    return {row["user"]: row for row in rows}


def summarize(users: Sequence[User]) -> list[UserSummary]:
    """Each user's figures, in the order given: five grouped queries, whatever the number of users."""
    ids = [user.pk for user in users]
    memory_file = Cast(KeyTextTransform("size", "metadata"), IntegerField())
    memories = _grouped(
        Memory.objects.all(),
        ids,
        n=Count("id"),
        text=Coalesce(Sum(ByteLength("content")), 0),
        files=Coalesce(Sum(memory_file, filter=~Q(file="")), 0),
        last=Max("created_at"),
    )
    documents = _grouped(
        Document.objects.all(),
        ids,
        n=Count("id"),
        bytes=Coalesce(Sum(F("size") + ByteLength("markdown")), 0),
        last=Max("created_at"),
    )
    sessions = _grouped(AgentSession.objects.all(), ids, n=Count("id"), last=Max("started_at"))
    keys = _grouped(
        ApiKey.objects.all(), ids, n=Count("id", filter=Q(revoked_at=None)), last=Max("last_used_at")
    )
    summaries = []
    for user in users:
        memory, document = memories.get(user.pk, {}), documents.get(user.pk, {})
        session, key = sessions.get(user.pk, {}), keys.get(user.pk, {})
        moments = [
            user.last_login,
            memory.get("last"),
            document.get("last"),
            session.get("last"),
            key.get("last"),
        ]
        summaries.append(
            UserSummary(
                user=user,
                memories=memory.get("n", 0),
                documents=document.get("n", 0),
                sessions=session.get("n", 0),
                api_keys=key.get("n", 0),
                storage_bytes=memory.get("text", 0) + memory.get("files", 0) + document.get("bytes", 0),
                last_activity=max((moment for moment in moments if moment is not None), default=None),
            )
        )
    return summaries
