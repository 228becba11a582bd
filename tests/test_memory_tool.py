import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memories.models import Entity, Memory
from memories.tools import ACTIONS, MemoryTool

pytestmark = pytest.mark.django_db(transaction=True)

ID = re.compile(r"ID: ([0-9a-f-]{36})")


def added_id(reply: str) -> str:
    assert reply.startswith(("✅ Memory added", "✅ 记忆已添加")), reply
    return ID.search(reply).group(1)


@pytest.fixture
def tool() -> MemoryTool:
    return MemoryTool(user_id="user123")


def test_the_tutorials_program_finds_li_si_first(tool):
    tool.run(
        {
            "action": "add",
            "content": "用户张三是一名Python开发者，专注于机器学习和数据分析",
            "memory_type": "semantic",
            "importance": 0.8,
        }
    )
    tool.run(
        {
            "action": "add",
            "content": "李四是前端工程师，擅长React和Vue.js开发",
            "memory_type": "semantic",
            "importance": 0.7,
        }
    )
    tool.run(
        {
            "action": "add",
            "content": "王五是产品经理，负责用户体验设计和需求分析",
            "memory_type": "semantic",
            "importance": 0.6,
        }
    )

    reply = tool.run({"action": "search", "query": "前端工程师"})
    lines = reply.splitlines()
    assert lines[0].startswith("🔍 找到")
    assert "李四是前端工程师" in lines[1]
    assert lines[1].startswith("1. [语义记忆]")

    # A summary carries no text to tell its language by: the tutorial asks for Chinese.
    summary = tool.run({"action": "summary", "language": "zh-hans"})
    assert "总记忆数: 3" in summary
    assert "语义记忆: 3 条" in summary


def test_user_id_names_a_mnemo_user_created_on_first_use(tool):
    user = get_user_model().objects.get(username="user123")
    assert not user.has_usable_password()
    memory_id = added_id(tool.run({"action": "add", "content": "hello"}))
    assert Memory.objects.get(pk=memory_id).user == user


def test_replies_carry_full_ids_that_update_and_remove_accept(tool):
    memory_id = added_id(tool.run({"action": "add", "content": "draft", "importance": 0.4}))
    assert tool.run(
        {"action": "update", "memory_id": memory_id, "content": "final", "importance": 0.9}
    ).startswith("✅ Memory updated")
    memory = Memory.objects.get(pk=memory_id)
    assert (memory.content, memory.importance) == ("final", 0.9)
    assert memory.edits.get().changes == {"content": ["draft", "final"], "importance": [0.4, 0.9]}
    assert tool.run({"action": "remove", "memory_id": memory_id}).startswith("✅ Memory removed")
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert tool.run({"action": "remove", "memory_id": memory_id}).startswith("⚠️ No memory to remove")


def test_unknown_action_lists_the_valid_ones(tool):
    reply = tool.run({"action": "fly"})
    assert "Unknown action: fly" in reply
    for action in ACTIONS:
        assert action in reply


@pytest.mark.parametrize(
    ("parameters", "named"),
    [
        ({"action": "add"}, "'content'"),
        ({"action": "search"}, "'query'"),
        ({"action": "update"}, "'memory_id'"),
        ({"action": "add", "content": "x", "importance": "high"}, "'importance'"),
        ({"action": "add", "content": "x", "importance": 3}, "'importance'"),
        ({"action": "add", "content": "x", "memory_type": "dream"}, "'memory_type'"),
        ({"action": "search", "query": "x", "limit": "many"}, "'limit'"),
        ({"action": "search", "query": "x", "time_range": ["yesterday", None]}, "'time_range[0]'"),
        ({"action": "forget", "strategy": "random"}, "strategy"),
    ],
)
def test_a_missing_or_wrong_parameter_is_named(tool, parameters, named):
    reply = tool.run(parameters)
    assert reply.startswith("❌"), reply
    assert named in reply
    assert Memory.objects.count() == 0


def test_a_missing_action_is_named(tool):
    assert "'action'" in tool.run({})


def test_extra_keys_are_kept_as_metadata(tool):
    memory_id = added_id(
        tool.run(
            {"action": "add", "content": "shipped v2", "memory_type": "episodic", "event_type": "release"}
        )
    )
    assert Memory.objects.get(pk=memory_id).metadata == {"event_type": "release"}


def test_working_memory_keeps_capacity_ten_evicting_the_lowest_priority(tool):
    for index in range(12):
        tool.run({"action": "add", "content": f"note {index}", "importance": 0.9 if index != 3 else 0.1})
    working = Memory.objects.filter(memory_type="working")
    assert working.count() == 10
    assert not working.filter(content="note 3").exists()  # lowest importance went first
    assert not working.filter(content="note 0").exists()  # then the oldest of equal priority


def test_working_memory_token_budget_and_oversized_items(tool):
    reply = tool.run({"action": "add", "content": "词" * 2100})
    assert reply.startswith("❌") and "最多容纳 2000 个词元" in reply  # a Chinese call gets a Chinese refusal
    assert Memory.objects.count() == 0
    for _ in range(3):
        tool.run({"action": "add", "content": "字" * 900, "importance": 0.5})
    assert sum(Memory.objects.values_list("token_count", flat=True)) <= 2000


def test_token_counts_are_right_for_chinese(tool):
    memory_id = added_id(tool.run({"action": "add", "content": "李四是前端工程师"}))
    assert Memory.objects.get(pk=memory_id).token_count == 8


def test_expired_working_memory_is_not_found(tool):
    memory_id = added_id(tool.run({"action": "add", "content": "temporary parking spot B3"}))
    Memory.objects.filter(pk=memory_id).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert "No memories found" in tool.run({"action": "search", "query": "parking spot", "min_importance": 0})


def test_forget_strategies(tool):
    low = added_id(
        tool.run({"action": "add", "content": "trivia", "memory_type": "episodic", "importance": 0.05})
    )
    old = added_id(
        tool.run({"action": "add", "content": "old news", "memory_type": "episodic", "importance": 0.5})
    )
    keep = added_id(
        tool.run({"action": "add", "content": "keeper", "memory_type": "semantic", "importance": 0.9})
    )
    Memory.objects.filter(pk=old).update(created_at=timezone.now() - timedelta(days=40))
    assert tool.run({"action": "forget"}) == "🧹 Forgot 1 memories (strategy: importance_based)"
    assert not Memory.objects.filter(pk=low).exists()
    assert tool.run({"action": "forget", "strategy": "time_based", "max_age_days": 30}).startswith(
        "🧹 Forgot 1"
    )
    assert list(Memory.objects.values_list("pk", flat=True)) == [Memory.objects.get(pk=keep).pk]


def test_consolidate_promotes_important_working_memory_and_caps_importance(tool):
    high = added_id(tool.run({"action": "add", "content": "user is allergic to peanuts", "importance": 0.95}))
    low = added_id(tool.run({"action": "add", "content": "said hi", "importance": 0.3}))
    reply = tool.run({"action": "consolidate"})
    assert reply.startswith("🔄 Consolidated 1 memories")
    promoted = Memory.objects.get(pk=high)
    assert promoted.memory_type == "episodic"
    assert promoted.importance == 1.0  # 0.95 × 1.1 capped
    assert promoted.expires_at is None
    assert Memory.objects.get(pk=low).memory_type == "working"


def test_clear_all_clears_only_the_calling_user(tool):
    other = MemoryTool(user_id="someone_else")
    other.run({"action": "add", "content": "李四在北京", "memory_type": "semantic"})
    tool.run({"action": "add", "content": "张三在上海", "memory_type": "semantic"})
    refused = tool.run({"action": "clear_all"})
    assert '"confirm": true' in refused and Memory.objects.filter(user__username="user123").count() == 1
    assert tool.run({"action": "clear_all", "confirm": True}).startswith("🧽 Cleared all memories")
    assert Memory.objects.filter(user__username="user123").count() == 0
    assert Memory.objects.filter(user__username="someone_else").count() == 1
    assert Entity.objects.filter(user__username="someone_else").exists()
    assert "李四在北京" in other.run({"action": "search", "query": "北京"})


def test_search_never_returns_another_users_memory(tool):
    MemoryTool(user_id="mallory").run(
        {"action": "add", "content": "mallory's bank PIN is 1234", "memory_type": "semantic"}
    )
    assert "No memories found" in tool.run({"action": "search", "query": "bank PIN"})


def test_semantic_memories_link_entities(tool):
    memory_id = added_id(
        tool.run(
            {"action": "add", "content": "李四是前端工程师，擅长React和Vue.js开发", "memory_type": "semantic"}
        )
    )
    names = set(Memory.objects.get(pk=memory_id).entities.values_list("name", flat=True))
    assert {"李四", "React", "Vue.js"} <= names


def test_stats_counts_by_type(tool):
    tool.run({"action": "add", "content": "a", "memory_type": "semantic"})
    tool.run({"action": "add", "content": "b", "memory_type": "episodic"})
    reply = tool.execute({"action": "stats"})
    assert reply.data["total"] == 2
    assert set(reply.data["by_type"]) == {"semantic", "episodic"}


def test_chat_copies_of_messages_are_found_in_their_own_session_or_when_asked(tool):
    from agents.agent import Agent
    from memories.actions.rules import session_for_key

    chat = session_for_key(user=tool.user, key="kitchen-chat")
    Agent(user=tool.user, session=chat).run("hello again")
    Agent(user=tool.user, session=chat).run("Where did I leave the spare bike key?")
    # An agent's own working memory is no chat copy: it stays searchable everywhere.
    tool.run({"action": "add", "content": "The spare bike key hangs by the fridge", "memory_type": "working"})

    def found(**params) -> list[str]:
        reply = tool.execute({"action": "search", "query": "spare bike key", "limit": 10, **params})
        return [result["content"] for result in reply.data["results"]]

    assert found() == ["The spare bike key hangs by the fridge"]
    assert "Where did I leave the spare bike key?" in found(include_chat_copies=True)
    assert found(session_id="kitchen-chat")[0] == "Where did I leave the spare bike key?"
    # A copy that shares nothing with the query ranks below those that match (the noise floors the no-answer
    # curve chose are low: bench/results/retrieval.md), when it comes back at all.
    with_copies = found(include_chat_copies=True)
    assert with_copies[:2] == [
        "Where did I leave the spare bike key?",
        "The spare bike key hangs by the fridge",
    ]
