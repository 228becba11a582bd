"""memories.profile: what Mnemo knows about the user, grouped, with the people they know and the conflicts."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.demo import DEMO_MEMORIES
from memories.actions.write import memory_write
from memories.models import Memory
from memories.profile import user_profile

pytestmark = pytest.mark.django_db


def remember(user, *contents, memory_type="semantic", curate=True):
    return [
        memory_write(user=user, content=content, memory_type=memory_type, curate=curate).memory
        for content in contents
    ]


def groups(api) -> dict[str, list[str]]:
    return {g["kind"]: [m["content"] for m in g["memories"]] for g in api("get", "/profile").json()["groups"]}


def test_the_profile_is_about_the_user_with_the_people_they_know_as_relations(api, user, other_user):
    remember(
        user,
        "The user is Henrik",
        "I live in Bergen",
        "I speak Norwegian and German",
        "I work at Fjordline as a ship engineer",
        "Sigrid is my sister",
        "Sigrid works at Equinor",
        "Olav lives in Oslo",
        "I love cloudberries",
        "The user has a dog named Troll",
    )
    remember(other_user, "Sigrid is my manager", "I live in Narvik")

    assert groups(api) == {
        "identity": ["The user is Henrik", "I live in Bergen", "I speak Norwegian and German"],
        "work": ["I work at Fjordline as a ship engineer"],
        "people": ["Sigrid is my sister"],
        "preferences": ["I love cloudberries"],
        "other": ["The user has a dog named Troll"],
    }
    body = api("get", "/profile").json()
    assert body["name"] == "Henrik"
    # Sigrid's employer and Olav's home are theirs: the people group lists them, not their facts.
    assert [(p["name"], p["relation"]) for p in body["people"]] == [("Sigrid", "sister"), ("Olav", None)]
    assert body["conflicts"] == []


def test_the_profile_in_chinese_reads_the_same_groups(api, user):
    remember(
        user,
        "我叫林晓",
        "我住在厦门",
        "我会说闽南话和英语",
        "我在网易做产品经理",
        "孙磊是我的同学",
        "孙磊在阿里巴巴工作",
        "我最喜欢的水果是芒果",
    )
    assert groups(api) == {
        "identity": ["我叫林晓", "我住在厦门", "我会说闽南话和英语"],
        "work": ["我在网易做产品经理"],
        "people": ["孙磊是我的同学"],
        "preferences": ["我最喜欢的水果是芒果"],
    }
    profile = user_profile(user)
    assert profile.name == "林晓"
    assert profile.as_text(chinese=True).splitlines()[:4] == [
        "**身份**",
        "- 我叫林晓",
        "- 我住在厦门",
        "- 我会说闽南话和英语",
    ]
    assert "- 孙磊 — 同学" in profile.as_text(chinese=True)


def test_the_tutorials_zhang_san_is_a_conflict_for_a_user_named_otherwise(api, user):
    user.first_name = "Amara"
    user.save()
    for content, memory_type, importance in DEMO_MEMORIES:
        memory_write(user=user, content=content, memory_type=memory_type, importance=importance)
    remember(user, "The user lives in Kumasi")

    body = api("get", "/profile").json()
    [conflict] = body["conflicts"]
    assert (conflict["kind"], conflict["attribute"]) == ("identity", "name")
    assert [(o["value"], [m["content"] for m in o["memories"]]) for o in conflict["options"]] == [
        ("Amara", []),
        ("张三", ["用户张三是一名Python开发者，专注于机器学习和数据分析"]),
    ]
    shown = groups(api)
    # 张三's work and his model training are nobody's until the conflict is resolved; 李四 and 王五 are people.
    assert shown == {
        "identity": ["The user lives in Kumasi"],
        "preferences": ["The user prefers short answers with code examples."],
    }
    assert [p["name"] for p in body["people"]] == ["李四", "王五"]
    text = user_profile(user).as_text()
    assert "⚠ Conflicting name: Amara (your account) or 张三 (“用户张三是一名Python开发者" in text
    assert "推荐模型" not in text


def test_for_the_user_the_demo_is_about_zhang_san_is_who_they_are(user):
    for content, memory_type, importance in DEMO_MEMORIES:
        memory_write(user=user, content=content, memory_type=memory_type, importance=importance)
    profile = user_profile(user)
    assert profile.name == "张三" and profile.conflicts == []
    assert [m.content for m in profile.groups["work"]] == [
        "用户张三是一名Python开发者，专注于机器学习和数据分析"
    ]
    assert [m.content for m in profile.groups["recent"]] == [
        "张三今天完成了推荐模型的第一版训练，准确率达到了85%"
    ]


def test_two_names_from_facts_and_two_homes_are_conflicts_not_both(user):
    remember(user, "用户陈静是一名护士", "The user is Priya", "I live in Pune", "用户住在厦门", curate=False)
    profile = user_profile(user)
    conflicts = {c.attribute: [v for v, _ in c.options] for c in profile.conflicts}
    # Of equal importance, the newest first.
    assert conflicts == {"name": ["Priya", "陈静"], "home": ["厦门", "Pune"]}
    assert profile.groups == {} and profile.name == "alice"
    text = profile.as_text()
    assert text.startswith(
        "**Identity**\n- ⚠ Conflicting name: Priya (“The user is Priya”) or 陈静 (“用户陈静是一名护士”)"
    )
    assert "- ⚠ Conflicting home: 厦门 (“用户住在厦门”) or Pune (“I live in Pune”)?" in text


def test_secrets_and_other_peoples_events_stay_out_and_repeats_are_one_line(user, settings):
    remember(user, "My gym locker PIN: 8812", "I cycle to work")
    Memory.objects.create(
        user=user, content="api_key=sk-proj-Q3x9Lm2Vt8Rb7Kw4Zp6Yc1Nd5", memory_type="semantic"
    )
    start = timezone.now() - timedelta(days=60)
    for week in range(6):
        event = remember(user, f"Standup with the deck crew on day {week * 7 + 1}", memory_type="episodic")[0]
        Memory.objects.filter(pk=event.pk).update(created_at=start + timedelta(days=7 * week))
    remember(user, "Tomasz repaired the tandem bike", "Picked up the new passport", memory_type="episodic")

    profile = user_profile(user)
    assert [m.content for m in profile.groups["other"]] == ["I cycle to work"]
    recent = profile.groups["recent"]
    assert [m.content for m in recent] == [
        "Picked up the new passport",
        "Standup with the deck crew on day 36",
    ]
    assert "- Standup with the deck crew on day 36 (and 5 like it)" in profile.as_text()
    assert profile.people == []  # Tomasz's event is his: the people the user knows come from their facts


def test_the_dashboard_shows_the_groups_people_and_conflicts(logged_in, user):
    remember(user, "Ingrid is my cousin", "Ingrid lives in Tromsø", "I work at Lumen Bank")
    remember(user, "I live in Bergen", "我住在厦门", curate=False)
    body = logged_in.get("/").content.decode()
    assert "<h3>People you know</h3>" in body and "Ingrid — cousin</a>" in body
    assert (
        '<li class="conflict">⚠ Conflicting home: 厦门 (“我住在厦门”) or Bergen (“I live in Bergen”)?' in body
    )
    assert "Ingrid lives in Tromsø" not in body.split("profile-heading")[1].split("</section>")[0]
