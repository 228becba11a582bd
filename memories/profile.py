"""What Mnemo knows about a user: their current facts grouped by kind, most important first.

Not a similarity search: "What do you know about me?" shares no words with "用户名叫小明". The groups come from the
single-valued facts each memory states (memories.facts, indexed as Fact rows): identity (name, age, home), work
(employer, role, manager, school), people (partners and facts about other people), preferences (likes and
favourites); other facts are the remaining current semantic memories, and recent events the newest episodic ones.
Superseded, archived and expired memories are never part of it.
"""

from dataclasses import dataclass, field
from uuid import UUID

from django.contrib.auth.models import User

from memories.facts import SELF
from memories.models import Fact, Memory, MemoryType

GROUPS = {
    "identity": "Identity",
    "work": "Work",
    "people": "People",
    "preferences": "Preferences",
    "other": "Other facts",
    "recent": "Recent events",
}
_ATTRIBUTE_GROUPS = {
    "name": "identity",
    "age": "identity",
    "home": "identity",
    "employer": "work",
    "role": "work",
    "manager": "work",
    "school": "work",
    "partner": "people",
}
PER_GROUP = 8


@dataclass
class Profile:
    groups: dict[str, list[Memory]] = field(default_factory=dict)  # in GROUPS order, empty groups left out

    @property
    def sections(self) -> list[tuple[str, str, list[Memory]]]:
        """(kind, label, memories) per group, for pages."""
        return [(kind, GROUPS[kind], memories) for kind, memories in self.groups.items()]

    @property
    def empty(self) -> bool:
        return not self.groups

    def as_text(self, empty: str = "") -> str:
        """The profile as a short Markdown answer, one heading per group."""
        if self.empty:
            return empty
        lines = []
        for kind, memories in self.groups.items():
            lines.append(f"**{GROUPS[kind]}**")
            lines += [f"- {memory.content}" for memory in memories]
        return "\n".join(lines)


def _group(key: str) -> str:
    subject, attribute = key.split("|", 1)
    if subject != SELF:
        return "people"
    if attribute.startswith(("likes:", "favourite:")):
        return "preferences"
    return _ATTRIBUTE_GROUPS.get(attribute, "other")


def user_profile(user: User, per_group: int = PER_GROUP) -> Profile:
    current = Memory.objects.current().filter(user=user)
    facts = current.filter(memory_type=MemoryType.SEMANTIC).order_by(
        "-importance", "-seen_count", "-created_at"
    )
    kinds: dict[UUID, str] = {}
    for memory_id, key in Fact.objects.filter(user=user, memory__in=facts).values_list("memory_id", "key"):
        group = _group(key)
        # A memory stating facts of several kinds goes to the first group in GROUPS order.
        if memory_id not in kinds or list(GROUPS).index(group) < list(GROUPS).index(kinds[memory_id]):
            kinds[memory_id] = group
    grouped: dict[str, list[Memory]] = {kind: [] for kind in GROUPS}
    # Enough rows to fill every group; a user with thousands of facts is summarised by the most important.
    for memory in facts[: per_group * len(GROUPS) * 4]:
        bucket = grouped[kinds.get(memory.pk, "other")]
        if len(bucket) < per_group:
            bucket.append(memory)
    events = current.filter(memory_type=MemoryType.EPISODIC).order_by("-created_at")[:per_group]
    grouped["recent"] = list(events)
    return Profile({kind: memories for kind, memories in grouped.items() if memories})
