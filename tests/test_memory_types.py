"""The memory types' policies (memories.types): every place that lists or treats types reads them, and each
policy's expiry, capacity, token budget, graph linking and recency are what the writes and the search do."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.toolspecs import TOOLS
from core.ranking import RANKING
from memories.actions.forgetting import memories_consolidate, memories_forget
from memories.actions.rules import MemoryRequestError, session_for_key
from memories.actions.write import memory_write
from memories.forms import MemoryAddForm, MemoryEditForm, MemoryFilterForm
from memories.models import Memory, MemoryEntity
from memories.scoring import Candidate, recency_score, shape, time_decay
from memories.tools import TYPE_LABELS, MemoryTool
from memories.types import EPISODIC, MEMORY_TYPES, NAMES, WORKING, MemoryType, policy_of

pytestmark = pytest.mark.django_db

CHOICES = [(policy.name, policy.label) for policy in MEMORY_TYPES]
# Names the English entity reader finds (memories.entities): a person, an organisation, a place.
WITH_ENTITIES = "Marguerite Okafor joined Initech in Winnipeg"


def _schema_enum(openapi: dict, schema: str, field: str) -> list[str]:
    prop = openapi["components"]["schemas"][schema]["properties"][field]
    for option in prop.get("anyOf", [prop]):
        if "enum" in option:
            return option["enum"]
        if option.get("type") == "array":
            return option["items"]["enum"]
    raise AssertionError(f"{schema}.{field} has no enum: {prop}")


def test_the_registry_names_each_type_once_in_order():
    assert NAMES == ("working", "episodic", "semantic", "perceptual")
    assert MemoryType.values == list(NAMES)
    assert [policy_of(name) for name in NAMES] == list(MEMORY_TYPES)


def test_the_model_forms_api_tool_specs_and_tool_list_the_registry(client, user):
    assert Memory._meta.get_field("memory_type").choices == CHOICES
    assert MemoryAddForm().fields["memory_type"].choices == CHOICES
    assert MemoryFilterForm().fields["type"].choices[1:] == CHOICES
    memory = Memory(user=user, content="x")
    assert MemoryEditForm(memory=memory).fields["memory_type"].choices == CHOICES

    openapi = client.get("/api/v1/openapi.json").json()
    for schema, field in [
        ("MemoryIn", "memory_type"),
        ("MemoryPatch", "memory_type"),
        ("SearchIn", "memory_types"),
        ("ForgetIn", "memory_types"),
        ("ConsolidateIn", "to_type"),
    ]:
        assert _schema_enum(openapi, schema, field) == list(NAMES), (schema, field)

    add = TOOLS.get("memory_add").parameters["properties"]
    search = TOOLS.get("memory_search").parameters["properties"]
    assert add["memory_type"]["enum"] == list(NAMES)
    assert search["memory_types"]["items"]["enum"] == list(NAMES)

    assert {name: str(label) for name, label in TYPE_LABELS.items()} == {
        policy.name: str(policy.noun) for policy in MEMORY_TYPES
    }
    default = [policy.name for policy in MEMORY_TYPES if policy.searched_by_default]
    assert MemoryTool(user_id=str(user.pk)).memory_types == default == ["working", "episodic", "semantic"]


def test_the_add_and_edit_pages_hand_the_script_each_types_own_fields(logged_in, user):
    expected = {policy.name: list(policy.form_fields) for policy in MEMORY_TYPES}
    assert expected["episodic"] == ["context", "outcome", "participants"]
    assert expected["perceptual"] == ["file"]
    memory = memory_write(user=user, content="the kettle is on").memory
    for url in ("/memories/add/", f"/memories/{memory.pk}/edit/"):
        html = logged_in.get(url).content.decode()
        payload = re.search(r'<script id="memory-type-fields" type="application/json">(.*?)</script>', html)
        assert payload is not None, url
        assert json.loads(payload.group(1)) == expected
    script = open("static/js/memory-form.js", encoding="utf-8").read()
    assert not any(f'"{name}"' in script for name in NAMES)  # no type list of its own


@pytest.mark.parametrize("policy", MEMORY_TYPES, ids=NAMES)
def test_a_write_expires_and_links_as_its_policy_says(user, policy):
    before = timezone.now()
    memory = memory_write(user=user, content=WITH_ENTITIES, memory_type=policy.name).memory
    if policy.ttl is None:
        assert memory.expires_at is None
    else:
        assert memory.expires_at - memory.created_at == policy.ttl
        assert memory.created_at >= before
    assert MemoryEntity.objects.filter(memory=memory).exists() is policy.links_entities


@pytest.mark.parametrize("policy", MEMORY_TYPES, ids=NAMES)
def test_a_session_keeps_as_many_as_its_policys_capacity(user, policy):
    session = session_for_key(user=user, key="capacity")
    written = 12
    for number in range(written):
        memory_write(
            user=user,
            session=session,
            content=f"note {number}: item {number * 7} goes on shelf {number + 3}",
            memory_type=policy.name,
            importance=0.1 + number / 20,  # the later ones matter more
            curate=False,
        )
    kept = Memory.objects.filter(user=user, session=session, memory_type=policy.name)
    assert kept.count() == min(written, policy.capacity or written)
    if policy.capacity is not None:
        # The lowest-priority ones went: the first written, least important.
        assert not kept.filter(content__startswith="note 0:").exists()
        assert kept.filter(content__startswith=f"note {written - 1}:").exists()


@pytest.mark.parametrize("policy", MEMORY_TYPES, ids=NAMES)
def test_one_memory_over_its_policys_token_budget_is_refused(user, policy):
    content = "word " * 2100  # over working memory's 2,000 tokens
    if policy.token_budget is None:
        assert memory_write(user=user, content=content, memory_type=policy.name).stored
    else:
        with pytest.raises(MemoryRequestError, match=str(policy.token_budget)):
            memory_write(user=user, content=content, memory_type=policy.name)
        assert not Memory.objects.filter(user=user).exists()


@pytest.mark.parametrize("policy", MEMORY_TYPES, ids=NAMES)
def test_capacity_based_forgetting_keeps_the_policys_capacity_or_the_callers(user, policy):
    for number in range(12):
        memory_write(
            user=user,
            content=f"entry {number} in ledger {number * 11}",
            memory_type=policy.name,
            importance=0.5,
            session_key=f"s{number}",  # one per session, so a write's own eviction keeps every one
            curate=False,
        )
    memories_forget(user=user, strategy="capacity_based", max_capacity=3, memory_types=[policy.name])
    assert Memory.objects.filter(user=user).count() == (policy.capacity or 3)


def test_forgetting_drops_expired_memories_of_the_types_with_a_ttl_only(user):
    for policy in MEMORY_TYPES:
        memory_write(user=user, content=f"a {policy.name} thing", memory_type=policy.name, curate=False)
    Memory.objects.filter(user=user).update(expires_at=timezone.now() - timedelta(minutes=1))
    memories_forget(user=user, strategy="importance_based", threshold=0.0)
    assert sorted(Memory.objects.filter(user=user).values_list("memory_type", flat=True)) == sorted(
        policy.name for policy in MEMORY_TYPES if policy.ttl is None
    )


@pytest.mark.parametrize("target", [WORKING, EPISODIC], ids=["to-working", "to-episodic"])
def test_consolidation_sets_the_expiry_of_the_target_type(user, target):
    source = EPISODIC if target is WORKING else WORKING
    memory_write(user=user, content=WITH_ENTITIES, memory_type=source.name, importance=0.9, curate=False)
    before = timezone.now()
    [promoted] = memories_consolidate(user=user, from_type=source.name, to_type=target.name)
    if target.ttl is None:
        assert promoted.expires_at is None
    else:
        assert before + target.ttl <= promoted.expires_at <= timezone.now() + target.ttl
    linked = MemoryEntity.objects.filter(memory=promoted).exists()
    assert linked is (source.links_entities or target.links_entities)


@pytest.mark.parametrize("policy", MEMORY_TYPES, ids=NAMES)
def test_the_search_reads_recency_by_the_policys_curve(policy):
    now = timezone.now()
    age = timedelta(days=2)
    candidate = Candidate(memory_type=policy.name, importance=0.5, created_at=now - age)
    _, parts = shape(candidate, 1.0, 0.0, now, RANKING)
    expected = time_decay(age) if policy.recency == "decay" else recency_score(age)
    assert parts["recency"] == round(expected, 4)
    assert time_decay(age) != recency_score(age)  # the two curves differ at this age
