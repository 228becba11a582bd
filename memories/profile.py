"""What Mnemo knows about a user: who they are, their work, the people they know, what they like, other facts and
recent events, most important first, and the facts that contradict each other, shown as conflicts to resolve.

Not a similarity search: "What do you know about me?" shares no words with "用户名叫小明". Each current memory is
read for who it is about (memories.subjects) and the single-valued facts it states (memories.facts):
- the user is the account's name (first and last name), the names the user's facts give them ("The user is
  Lena", "我叫小明", "用户张三是…"), and whoever a fact calls I, my, the user, 我 or 用户;
- a fact about another named person is not the user's: the profile lists that person among the people the user
  knows, with their relation to the user when a memory states it ("Marco — colleague"), never their facts;
- two names for the user, or two values of one of the user's single-valued facts (two homes), are a conflict:
  its memories are shown side by side for the user to resolve, and a fact resting on a contested name ("用户张三
  是一名开发者" when the user may be Lena) is in no group;
- identity is name, age, home and languages; work is employer, role, manager and school; preferences are likes
  and favourites; other facts are the user's remaining facts; recent events the newest events of the user, one
  line for events that repeat ("Weekly sync" every Monday);
- a memory holding a secret (a password, an API key, masked or not) is never part of it, nor are superseded,
  archived or expired memories.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from django.contrib.auth.models import User

from core import privacy
from core.text import cjk_ratio, content_words
from memories.entities import entity_key
from memories.facts import SELF, Slot, same_value, slots
from memories.models import Fact, Memory
from memories.subjects import acquaintances, self_name, subjects
from memories.types import names_where

GROUPS = {
    "identity": "Identity",
    "work": "Work",
    "people": "People you know",
    "preferences": "Preferences",
    "other": "Other facts",
    "recent": "Recent events",
}
GROUPS_ZH = {
    "identity": "身份",
    "work": "工作",
    "people": "认识的人",
    "preferences": "偏好",
    "other": "其他事实",
    "recent": "近期事件",
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
_ATTRIBUTE_LABELS = {"name": ("name", "名字"), "home": ("home", "住处"), "employer": ("employer", "工作单位")}
PER_GROUP = 8
# Where the profile reads facts and recent events: the types whose policy (memories.types) says so.
FACT_TYPES = names_where(lambda policy: policy.states_facts)
EVENT_TYPES = names_where(lambda policy: policy.event_window is not None)
# Facts read per profile: enough to fill every group when many are about other people.
FACTS_READ = 300
# Two events whose words (numbers aside) overlap this much are one recurring event.
SAME_EVENT = 0.6
# What core.privacy leaves of a masked secret: "[password masked]" (its secret kinds; personal data is no secret).
_MASKED_SECRET = re.compile(r"\[(?:api_key|password|private_key) masked\]")


@dataclass
class Acquaintance:
    """A person the user knows: their name as written, their relation to the user when a memory states it, the
    memories stating it, and the memories about them (their facts, which the profile does not show)."""

    name: str
    relation: str | None = None
    memories: list[Memory] = field(default_factory=list)  # the memories relating them to the user
    mentions: list[Memory] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.name} — {self.relation}" if self.relation else self.name


@dataclass
class Conflict:
    """Current facts that cannot all be true: one option per value, each with the memories stating it (none
    for the account's own name)."""

    kind: str  # the group it belongs in
    attribute: str
    options: list[tuple[str, list[Memory]]]

    def line(self, chinese: bool = False) -> str:
        label = _ATTRIBUTE_LABELS.get(self.attribute, (self.attribute, self.attribute))[chinese]
        said = []
        for value, memories in self.options:
            where = "; ".join(f"“{m.content}”" for m in memories) or ("账户名" if chinese else "your account")
            said.append(f"{value} ({where})")
        if chinese:
            return f"⚠ 有冲突的{label}：{' 还是 '.join(said)}？请告诉我哪个是对的，或改正错误的记忆。"
        return f"⚠ Conflicting {label}: {' or '.join(said)}? Tell me which is right, or correct the wrong memory."


@dataclass
class Profile:
    name: str = ""  # what to call the user: the account's name, or the one name their facts agree on
    groups: dict[str, list[Memory]] = field(default_factory=dict)  # in GROUPS order, empty groups left out
    people: list[Acquaintance] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    repeats: dict = field(default_factory=dict)  # event id → how many like it the profile left out

    @property
    def sections(self) -> list[tuple[str, str, list[Memory]]]:
        """(kind, label, memories) per group, for the API (pages show the outline)."""
        return [(kind, GROUPS[kind], memories) for kind, memories in self.groups.items()]

    @property
    def empty(self) -> bool:
        return not self.groups and not self.people and not self.conflicts

    def conflicts_in(self, kind: str) -> list[Conflict]:
        return [conflict for conflict in self.conflicts if conflict.kind == kind]

    def outline(self, chinese: bool = False) -> list[dict]:
        """The groups as the chat and the dashboard show them, in GROUPS order: {"kind", "label", "items"}, each
        item {"text", "memory"} (the id of the memory to link, None for a conflict), people as "name —
        relation", the conflicts in the group they belong to."""
        labels = GROUPS_ZH if chinese else GROUPS
        sections = []
        for kind in GROUPS:
            items: list[dict[str, str | None]]
            if kind == "people":
                items = [
                    {"text": person.line(), "memory": str((person.memories or person.mentions)[0].pk)}
                    for person in self.people
                ]
            else:
                items = [
                    {"text": self._line(memory, chinese), "memory": str(memory.pk)}
                    for memory in self.groups.get(kind, [])
                ]
            items += [
                {"text": conflict.line(chinese), "memory": None} for conflict in self.conflicts_in(kind)
            ]
            if items:
                sections.append({"kind": kind, "label": labels[kind], "items": items})
        return sections

    def as_text(self, empty: str = "", chinese: bool = False) -> str:
        """The outline as a short Markdown answer, one heading per group."""
        lines = []
        for section in self.outline(chinese):
            lines.append(f"**{section['label']}**")
            lines += [f"- {item['text']}" for item in section["items"]]
        return "\n".join(lines) or empty

    def _line(self, memory: Memory, chinese: bool) -> str:
        more = self.repeats.get(memory.pk, 0)
        if not more:
            return memory.content
        return (
            f"{memory.content} (另有 {more} 条相似)" if chinese else f"{memory.content} (and {more} like it)"
        )

    def memories(self) -> list[Memory]:
        """Every memory the profile shows, in order, each once: the context a model answers from."""
        seen: dict = {}
        for memory in [
            *(m for group in self.groups.values() for m in group),
            *(m for conflict in self.conflicts for _, ms in conflict.options for m in ms),
        ]:
            seen.setdefault(memory.pk, memory)
        return list(seen.values())


@dataclass
class _Reading:
    """What the profile reads from one memory."""

    memory: Memory
    slots: list[Slot]
    subject: str | None
    self_name: str | None
    acquaintances: list[tuple[str, str]]


def user_profile(user: User, per_group: int = PER_GROUP) -> Profile:
    current = Memory.objects.current().filter(user=user)
    facts = current.filter(memory_type__in=FACT_TYPES).order_by("-importance", "-seen_count", "-created_at")
    readings = _read([memory for memory in facts[:FACTS_READ] if not holds_secret(memory.content)])
    name, names, name_conflict = _names(user, readings)
    contested = {entity_key(value) for value, _ in name_conflict.options} if name_conflict else set()
    profile = Profile(name=name)
    if name_conflict:
        profile.conflicts.append(name_conflict)
    held = {m.pk for conflict in profile.conflicts for _, ms in conflict.options for m in ms}
    about_user = [
        reading
        for reading in readings
        if reading.memory.pk not in held and _whose(reading, names, contested) == SELF
    ]
    value_conflicts = _value_conflicts(about_user)
    profile.conflicts += value_conflicts
    held |= {m.pk for conflict in value_conflicts for _, ms in conflict.options for m in ms}
    grouped: dict[str, list[Memory]] = {kind: [] for kind in GROUPS}
    identity: list[_Reading] = []
    for reading in about_user:
        kind = _group(reading)
        bucket = grouped[kind]
        if reading.memory.pk not in held and len(bucket) < per_group:
            bucket.append(reading.memory)
            if kind == "identity":
                identity.append(reading)
    # Who they are in the order one introduces oneself: name, age, home, languages.
    grouped["identity"] = [reading.memory for reading in sorted(identity, key=_identity_rank)]
    profile.people = _people(readings, names, contested, held)[:per_group]
    grouped["people"] = _unique(m for person in profile.people for m in person.memories)[:per_group]
    grouped["recent"] = _recent_events(profile, current, names, contested, per_group)
    profile.groups = {kind: memories for kind, memories in grouped.items() if memories}
    return profile


def _read(memories: list[Memory]) -> list[_Reading]:
    whose = subjects([memory.content for memory in memories])
    return [
        _Reading(
            memory, _slots(memory.content), who, self_name(memory.content), acquaintances(memory.content)
        )
        for memory, who in zip(memories, whose, strict=True)
    ]


@lru_cache(maxsize=4096)
def _slots(text: str) -> list[Slot]:
    """memories.facts.slots, kept: the profile reads every fact it shows on every page view. The lists are
    never changed."""
    return slots(text)


@lru_cache(maxsize=4096)
def holds_secret(text: str) -> bool:
    """A password or key, as written or as privacy masking left it: no part of a profile."""
    return bool(_MASKED_SECRET.search(text) or privacy.find_secrets(text))


# --- who the user is -------------------------------------------------------------------------------------------


def _names(user: User, readings: list[_Reading]) -> tuple[str, set[str], Conflict | None]:
    """What to call the user, the keys of the names they go by, and the conflict when their account and facts
    disagree (then they are called by their login name, and go by none of the names until it is resolved)."""
    options: list[tuple[str, list[Memory]]] = []

    def claim(value: str, memory: Memory | None) -> None:
        for index, (known, memories) in enumerate(options):
            if same_value(entity_key(known), entity_key(value)):
                # The longer form names more of them ("Lena Kowalski" over "Lena").
                options[index] = (value if len(value) > len(known) else known, memories)
                if memory is not None:
                    memories.append(memory)
                return
        options.append((value, [memory] if memory is not None else []))

    account = user.get_full_name().strip()
    if account:
        claim(account, None)
    for reading in readings:
        for slot in reading.slots:
            if slot.subject == SELF and slot.attribute == "name":
                claim(_as_written(slot.value, reading.memory.content), reading.memory)
        if reading.self_name:
            claim(reading.self_name, reading.memory)
    if len(options) > 1:
        return user.get_username(), set(), Conflict("identity", "name", options)
    if not options:
        return user.get_username(), set(), None
    [(name, _)] = options
    keys = {entity_key(name)} | (
        {entity_key(name).split()[0]} if " " in name else set()
    )  # Lena of Lena Kowalski
    return name, keys, None


def _as_written(value: str, text: str) -> str:
    """A case-folded slot value as the memory writes it ("lena" → "Lena")."""
    start = text.casefold().find(value)
    return text[start : start + len(value)] if start >= 0 else value


def _whose(reading: _Reading, names: set[str], contested: set[str]) -> str | None:
    """SELF for the user's facts (a subject named as the user is the user); a person's key for another's; None
    for a fact resting on a contested name, which belongs to no one until the conflict is resolved."""
    who = reading.subject
    if who is None or who == SELF:
        return SELF
    key = entity_key(who)
    if key in contested:
        return None
    if key in names:
        return SELF
    return key


# --- the user's facts ------------------------------------------------------------------------------------------


def _group(reading: _Reading) -> str:
    """The first group in GROUPS order among the user's slots in the memory; "people" for one that only relates
    the user to someone ("Marco is my colleague"); "other" for the rest."""
    order = list(GROUPS)
    kinds = [_slot_group(slot) for slot in reading.slots if slot.subject == SELF]
    if not kinds and reading.acquaintances:
        return "people"
    return min(kinds, key=order.index, default="other")


_IDENTITY_ORDER = ("name", "age", "home", "speaks:")


def _identity_rank(reading: _Reading) -> int:
    ranks = [
        index
        for slot in reading.slots
        for index, attribute in enumerate(_IDENTITY_ORDER)
        if slot.subject == SELF and slot.attribute.startswith(attribute)
    ]
    return min(ranks, default=len(_IDENTITY_ORDER))


def _slot_group(slot: Slot) -> str:
    if slot.attribute.startswith("speaks:"):
        return "identity"
    if slot.attribute.startswith(("likes:", "favourite:")):
        return "preferences"
    return _ATTRIBUTE_GROUPS.get(slot.attribute, "other")


def _value_conflicts(readings: list[_Reading]) -> list[Conflict]:
    """Two current memories giving one of the user's single-valued facts different values (curation supersedes
    the older when it sees both, but not across an import, an edit or a model's decision to keep both)."""
    by_key: dict[str, list[tuple[str, Memory]]] = {}
    for reading in readings:
        for slot in reading.slots:
            if slot.subject == SELF and slot.attribute != "name":
                by_key.setdefault(slot.attribute, []).append((slot.value, reading.memory))
    conflicts = []
    for attribute, stated in by_key.items():
        options: list[tuple[str, list[Memory]]] = []
        for value, memory in stated:
            match = next((option for option in options if same_value(option[0], value)), None)
            if match is None:
                options.append((value, [memory]))
            elif memory not in match[1]:
                match[1].append(memory)
        if len(options) > 1:
            kind = _slot_group(Slot(SELF, attribute, ""))
            conflicts.append(
                Conflict(kind, attribute, [(_as_written(v, ms[0].content), ms) for v, ms in options])
            )
    return conflicts


# --- the people the user knows ---------------------------------------------------------------------------------


def _people(readings: list[_Reading], names: set[str], contested: set[str], held: set) -> list[Acquaintance]:
    people: dict[str, Acquaintance] = {}

    def person(name: str) -> Acquaintance:
        key = entity_key(name)
        known = key if key in people else next((k for k in people if same_value(k, key)), None)
        if known is None:
            people[key] = Acquaintance(name)
            return people[key]
        if len(key) > len(known):  # "Kofi Mensah" over "Kofi"
            people[key] = people.pop(known)
            people[key].name = name
        return people[key]

    for reading in readings:
        if reading.memory.pk in held:
            continue
        for name, relation in reading.acquaintances:
            if entity_key(name) in names | contested:
                continue
            found = person(name)
            found.relation = found.relation or relation
            found.memories.append(reading.memory)
        whose = _whose(reading, names, contested)
        if whose not in (None, SELF) and not reading.acquaintances:
            person(_as_written(whose, reading.memory.content)).mentions.append(reading.memory)
    # A relation the user states makes a person; a name only facts are about may be a company or a place.
    not_people = _not_people({key for key, p in people.items() if p.relation is None}, readings)
    ranked = [p for key, p in people.items() if key not in not_people]
    # The user's stated relations first, then the people their facts mention most.
    return sorted(ranked, key=lambda p: (p.relation is None, -len(p.mentions)))


# Where a fact names a place or an organisation: "I work at Acme", "Ana moved to Porto".
_PLACES_AND_ORGANISATIONS = frozenset({"employer", "school", "home", "car"})


def _not_people(names: set[str], readings: list[_Reading]) -> set[str]:
    """Names the facts use as a place or an organisation ("The user works at Kestrel Labs" makes "Kestrel Labs
    hired two interns" no one's fact). The entity graph's types are no help here: spaCy's small model calls
    many a first name an ORG."""
    named = {
        slot.value
        for reading in readings
        for slot in reading.slots
        if slot.attribute in _PLACES_AND_ORGANISATIONS
    }
    return names & named


def _unique(memories: Iterable[Memory]) -> list[Memory]:
    return list({memory.pk: memory for memory in memories}.values())


# --- recent events ---------------------------------------------------------------------------------------------


def _recent_events(profile: Profile, current, names: set[str], contested: set[str], per_group: int) -> list:
    """The user's newest events, one line for events that repeat ("Weekly sync …" every week), counting the
    others on it; events about another named person are theirs."""
    shown: list[tuple[Memory, set[str]]] = []
    events = current.filter(memory_type__in=EVENT_TYPES).order_by("-created_at")[: per_group * 6]
    events = [memory for memory in events if not holds_secret(memory.content)]
    for memory, who in zip(events, subjects([memory.content for memory in events]), strict=True):
        if _whose(_Reading(memory, [], who, None, []), names, contested) != SELF:
            continue
        words = {word for word in content_words(memory.content) if not word.isdigit()}
        like = next((first for first, seen in shown if _overlap(words, seen) >= SAME_EVENT), None)
        if like is not None:
            profile.repeats[like.pk] = profile.repeats.get(like.pk, 0) + 1
        elif len(shown) < per_group:
            shown.append((memory, words))
    return [memory for memory, _ in shown]


def _overlap(one: set[str], other: set[str]) -> float:
    return len(one & other) / len(one | other) if one and other else 0.0


def answers_in_chinese(text: str) -> bool:
    """Whether to answer a message in Chinese: most of its letters are."""
    return cjk_ratio(text) >= 0.5


# --- one fact ----------------------------------------------------------------------------------------------------

STATED_FACTS = 3


def facts_stating(user: User, subject: str, attribute: str) -> list[Memory]:
    """The current facts stating one slot (memories.facts) of the user or of a named person, most important
    first: what answers "Where do I work?" (user, employer). An attribute ending in ":" takes the family
    ("speaks:" for every language)."""
    key = f"{subject}|{attribute}"
    stated = Fact.objects.filter(user=user)
    stated = stated.filter(key__startswith=key) if attribute.endswith(":") else stated.filter(key=key)
    memories = (
        Memory.objects.current()
        .filter(user=user, memory_type__in=FACT_TYPES, pk__in=stated.values("memory_id"))
        .order_by("-importance", "-seen_count", "-created_at")
    )
    return [memory for memory in memories[: STATED_FACTS * 2] if not holds_secret(memory.content)][
        :STATED_FACTS
    ]
