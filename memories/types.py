"""The memory types: one policy record per type, the one place that says how a type behaves.

Every place that treats types differently reads the record instead of naming a type: the model's choices
(`MemoryType`), the API's and the tool specs' enums, expiry and per-session capacity on write
(memories.actions), entity linking, curation's duplicate scope and fact handling, the shaping of a search
(memories.scoring), the profile, the forms and the add/edit page script (`form_payload`, through json_script).
Adding a type is adding its record to `MEMORY_TYPES` (and a migration for the changed choices).

Ranking numbers stay in core.ranking.RankingConfig; a policy names which shaping applies to its type, never a
number of its own.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from django.db import models
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

# How a search's recency part reads a memory's age (memories.scoring): Hello-Agents' working-memory decay
# (0.95 per 6 hours, floor 0.1), or 1/(1 + days).
Recency = Literal["decay", "age"]


@dataclass(frozen=True)
class MemoryTypePolicy:
    #: The stored value, in the API, the tools and the URLs.
    name: str
    #: The type's name for people (choices, pages).
    label: str | Promise
    #: The type in a tool's reply ("working memory").
    noun: str | Promise
    #: A new memory expires this long after it is written (None: kept until forgotten); a change of type into it
    #: restarts the clock, and forgetting drops expired ones in every strategy.
    ttl: timedelta | None = None
    #: Per session, the most memories of this type kept: a write evicts the lowest-priority ones past it
    #: (importance × decay), and capacity-based forgetting keeps this many (None: the caller's max_capacity).
    capacity: int | None = None
    #: Per session, the most tokens its memories hold together (eviction), and so the most one may hold.
    token_budget: int | None = None
    #: A write reads the text for entities and relations and links them into the graph.
    links_entities: bool = False
    #: Its memories are facts: their subject/attribute slots are indexed, a newer value supersedes, near
    #: duplicates merge; a search returns them through the graph alone; the profile reads its facts from them.
    states_facts: bool = False
    #: An exact repeat counts as one only within the same session.
    repeats_per_session: bool = False
    #: An event: an exact repeat counts as one only this close in time, and the profile lists it among recent
    #: events (None: not an event).
    event_window: timedelta | None = None
    #: A promotion into it (consolidation) queues what it repeats or outdates for review (memories.cleaning).
    reviewed_on_promotion: bool = False
    #: How a search's recency part reads its age.
    recency: Recency = "age"
    #: The add/edit form's fields that only this type shows (the others show for every type); "file": it keeps
    #: an uploaded file.
    form_fields: tuple[str, ...] = ()
    #: MemoryTool searches it when the caller names no types (Hello-Agents' default leaves perceptual out).
    searched_by_default: bool = True

    @property
    def keeps_file(self) -> bool:
        return "file" in self.form_fields


# Hello-Agents' MemoryConfig defaults for working memory.
WORKING = MemoryTypePolicy(
    name="working",
    label=_("working"),
    noun=_("working memory"),
    ttl=timedelta(minutes=120),
    capacity=10,
    token_budget=2000,
    repeats_per_session=True,
    recency="decay",
)
EPISODIC = MemoryTypePolicy(
    name="episodic",
    label=_("episodic"),
    noun=_("episodic memory"),
    links_entities=True,
    repeats_per_session=True,
    event_window=timedelta(minutes=10),
    reviewed_on_promotion=True,
    form_fields=("context", "outcome", "participants"),
)
SEMANTIC = MemoryTypePolicy(
    name="semantic",
    label=_("semantic"),
    noun=_("semantic memory"),
    links_entities=True,
    states_facts=True,
    reviewed_on_promotion=True,
)
# Perceptual notes describe files: too little text about the world to feed the graph.
PERCEPTUAL = MemoryTypePolicy(
    name="perceptual",
    label=_("perceptual"),
    noun=_("perceptual memory"),
    form_fields=("file",),
    searched_by_default=False,
)

#: Every type, in the order choices and summaries list them.
MEMORY_TYPES: tuple[MemoryTypePolicy, ...] = (WORKING, EPISODIC, SEMANTIC, PERCEPTUAL)
POLICIES: dict[str, MemoryTypePolicy] = {policy.name: policy for policy in MEMORY_TYPES}
NAMES: tuple[str, ...] = tuple(POLICIES)

# The model's choices, built from the records. Dynamic, so type checkers see its members as Any; code that means
# one type names it (MemoryType.WORKING), code that means a behaviour asks the policy.
MemoryType = models.TextChoices(  # type: ignore[call-overload]
    "MemoryType", [(policy.name.upper(), (policy.name, policy.label)) for policy in MEMORY_TYPES]
)


def policy_of(memory_type: str) -> MemoryTypePolicy:
    """The policy of a stored type name (KeyError for a name that is none: callers validate input first)."""
    return POLICIES[memory_type]


def names_where(test: Callable[[MemoryTypePolicy], bool]) -> list[str]:
    """The names of the types whose policy passes `test`, in registry order."""
    return [policy.name for policy in MEMORY_TYPES if test(policy)]


def form_payload() -> dict[str, list[str]]:
    """For the add/edit page script (json_script): per type, the form fields only that type shows."""
    return {policy.name: list(policy.form_fields) for policy in MEMORY_TYPES}
