"""Tags and sources: each memory's tags and the route it was written through, shown, filtered and counted."""

import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from agents.agent import Agent
from conversations.models import AgentSession, ChatMessage
from core.services import api_key_create
from memories import facets
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import Memory
from memories.tools import MemoryTool

pytestmark = pytest.mark.django_db

HTMX_TABLE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "memory-table"}


def listed(client, query: str) -> list[str]:
    response = client.get(reverse("memory_list") + query, **HTMX_TABLE)
    assert response.status_code == 200
    return [memory.content for memory in response.context["page"].memories]


def api_list(api, query: str) -> list[str]:
    response = api("get", f"/memories/?{query}")
    assert response.status_code == 200, response.content
    return [item["content"] for item in response.json()["items"]]


# --- where a memory came from --------------------------------------------------------------------------------


def test_each_route_records_how_a_memory_was_written(logged_in, user, api, chat_completions):
    api("post", "/memories/", {"content": "Sent by an agent over the API", "memory_type": "semantic"})
    logged_in.post(
        reverse("memory_add"),
        {"memory_type": "semantic", "content": "Typed on the page", "importance": "0.5"},
    )
    MemoryTool(user_id="alice").run(
        {"action": "add", "content": "Added from Python", "memory_type": "semantic"}
    )
    Agent(user=user, session=session_for_key(user=user, key="chat-1")).run("I live in Lisbon.")
    response = chat_completions({"messages": [{"role": "user", "content": "I work at Zephyr Labs."}]})
    assert response.status_code == 200
    origins = {
        m.content: (m.origin, m.origin_key.name if m.origin_key else None)
        for m in Memory.objects.filter(memory_type="semantic")
    }
    assert origins["Sent by an agent over the API"] == ("api", "agent")
    assert origins["Typed on the page"] == ("page", None)
    assert origins["Added from Python"] == ("tool", None)
    chat = [origin for content, origin in origins.items() if "Lisbon" in content]
    openai = [origin for content, origin in origins.items() if "Zephyr" in content]
    assert chat == [("chat", None)] and openai == [("openai", "agent")]


def test_rows_and_the_detail_page_show_the_source_and_tags(logged_in, user, write_key):
    key = api_key_create(user=user, name="support-bot", scope="write")[0]
    memory = memory_create(
        user=user,
        content="Refund promised",
        memory_type="episodic",
        tags=["billing", "vip"],
        via="api",
        api_key=key,
    )
    row = logged_in.get(reverse("memory_list")).content.decode()
    assert f'href="/memories/?origin=api&amp;origin_key={key.pk}"' in row
    assert ">API · support-bot</a>" in row
    assert (
        '<a class="tag label" href="/memories/?tag=billing" title="Show the memories tagged billing">billing</a>'
        in row
    )
    detail = logged_in.get(reverse("memory_detail", args=[memory.pk])).content.decode()
    assert ">API · support-bot</a>" in detail
    assert 'href="/memories/?tag=vip"' in detail


def test_the_browser_filters_by_source_and_key(logged_in, user):
    bot = api_key_create(user=user, name="bot", scope="write")[0]
    other = api_key_create(user=user, name="other", scope="write")[0]
    memory_create(user=user, content="from bot", memory_type="semantic", via="api", api_key=bot)
    memory_create(user=user, content="from other", memory_type="semantic", via="mcp", api_key=other)
    memory_create(user=user, content="from page", memory_type="semantic", via="page")
    assert listed(logged_in, "?origin=mcp") == ["from other"]
    assert listed(logged_in, f"?origin_key={bot.pk}") == ["from bot"]
    assert listed(logged_in, "?origin=page") == ["from page"]
    assert listed(logged_in, "?origin=nonsense") == [
        "from page",
        "from other",
        "from bot",
    ]  # invalid: left out
    page = logged_in.get(reverse("memory_list")).content.decode()
    assert f'<option value="{bot.pk}">bot</option>' in page


def test_the_key_filter_offers_only_the_owners_keys(logged_in, user, other_user):
    theirs = api_key_create(user=other_user, name="theirs", scope="write")[0]
    memory_create(user=other_user, content="not mine", memory_type="semantic", via="api", api_key=theirs)
    assert listed(logged_in, f"?origin_key={theirs.pk}") == []
    assert "theirs" not in logged_in.get(reverse("memory_list")).content.decode()


def test_the_api_filters_and_returns_the_source(api, user, write_key):
    bot = api_key_create(user=user, name="bot", scope="write")[0]
    api("post", "/memories/", {"content": "via the key", "memory_type": "semantic"})
    memory_create(user=user, content="via mcp", memory_type="semantic", via="mcp", api_key=bot)
    assert api_list(api, "origin=mcp") == ["via mcp"]
    assert api_list(api, f"origin_key={bot.pk}") == ["via mcp"]
    [item] = api("get", "/memories/?origin=api").json()["items"]
    assert (item["origin"], item["origin_key_name"]) == ("api", "agent")
    assert api("get", "/memories/?origin=carrier-pigeon").status_code == 422


# --- tags ------------------------------------------------------------------------------------------------------


def test_a_tag_filter_matches_the_whole_tag_only(logged_in, api, user):
    memory_create(user=user, content="alpha", memory_type="semantic", tags=["work"])
    memory_create(user=user, content="beta", memory_type="semantic", tags=["workshop", "home"])
    memory_create(user=user, content="gamma", memory_type="semantic", tags=['say "hi"'])
    memory_create(user=user, content="delta", memory_type="semantic")
    assert listed(logged_in, "?tag=work") == ["alpha"]
    assert listed(logged_in, "?tag=home") == ["beta"]
    assert listed(logged_in, "?tag=say+%22hi%22") == ["gamma"]
    assert listed(logged_in, "?tag=wor") == []
    assert api_list(api, "tag=work") == ["alpha"]
    assert api_list(api, "tag=nothing") == []
    page = logged_in.get(reverse("memory_list") + "?tag=work", **HTMX_TABLE)
    assert page.context["page"].total == 1


def test_search_filters_by_tag_on_the_page_and_in_the_api(
    logged_in, api, user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        memory_create(
            user=user, content="the budget review moved to Lisbon", memory_type="episodic", tags=["finance"]
        )
        memory_create(user=user, content="the team trip moved to Lisbon", memory_type="episodic")
    response = logged_in.get(reverse("memory_list") + "?q=moved+to+Lisbon", **HTMX_TABLE)
    assert len(response.context["hits"]) == 2
    response = logged_in.get(reverse("memory_list") + "?q=moved+to+Lisbon&tag=finance", **HTMX_TABLE)
    assert [hit.memory.content for hit in response.context["hits"]] == ["the budget review moved to Lisbon"]
    found = api(
        "post", "/memories/search", {"query": "moved to Lisbon", "tag": "finance", "limit": 10}
    ).json()
    assert [hit["content"] for hit in found["results"]] == ["the budget review moved to Lisbon"]


def test_bulk_all_matching_honours_the_tag_filter(logged_in, user):
    for i in range(3):
        memory_create(user=user, content=f"tagged {i}", memory_type="semantic", tags=["old"])
    memory_create(user=user, content="untagged", memory_type="semantic")
    response = logged_in.post(reverse("memories_bulk") + "?tag=old", {"action": "archive", "scope": "all"})
    assert response.status_code == 302
    archived = set(Memory.objects.exclude(archived_at=None).values_list("content", flat=True))
    assert archived == {"tagged 0", "tagged 1", "tagged 2"}


# --- the dashboard's counts ---------------------------------------------------------------------------------------


def test_the_dashboard_counts_memories_per_tag_and_per_source(logged_in, user, other_user):
    bot = api_key_create(user=user, name="bot", scope="write")[0]
    memory_create(
        user=user, content="one", memory_type="semantic", tags=["travel", "work"], via="api", api_key=bot
    )
    memory_create(user=user, content="two", memory_type="semantic", tags=["travel"], via="page")
    memory_create(user=user, content="three", memory_type="semantic", via="page")
    memory_create(user=other_user, content="theirs", memory_type="semantic", tags=["travel"], via="page")
    assert facets.tag_counts(user) == [("travel", 2), ("work", 1)]
    assert facets.tag_counts(user, newest=1) == []  # the newest memory ("three") has no tags
    assert facets.tag_counts(user, newest=2) == [("travel", 1)]
    assert [(s.label, s.count) for s in facets.source_counts(user)] == [("page", 2), ("API · bot", 1)]
    html = logged_in.get(reverse("dashboard")).content.decode()
    assert (
        '<a class="tag label" href="/memories/?tag=travel">travel</a> <meter min="0" max="3" value="2"></meter> 2'
        in html
    )
    assert f'href="/memories/?origin=api&amp;origin_key={bot.pk}">API · bot</a>' in html


# --- the migration's backfill ------------------------------------------------------------------------------------


class _AppsToday:
    """The app registry as memories 0010 saw it, on today's tables: sessions and chat messages were memories'
    models then and are conversations' now (issue 34)."""

    def get_model(self, app_label: str, model_name: str):
        if (app_label, model_name.lower()) in {("memories", "agentsession"), ("memories", "chatmessage")}:
            app_label = "conversations"
        return apps.get_model(app_label, model_name)


def test_the_migration_knows_what_it_can_of_older_memories(user):
    key = api_key_create(user=user, name="old-agent", scope="write")[0]
    mcp = AgentSession.objects.create(user=user, key="mcp")
    chat = session_for_key(user=user, key="chat-9")
    message = ChatMessage.objects.create(session=chat, role="user", content="hi")
    rows = {
        "api": Memory(user=user, content="a", sources=[{"via": "api", "api_key": key.pk}]),
        "mcp": Memory(user=user, content="b", session=mcp, sources=[{"via": "api", "api_key": key.pk}]),
        "openai": Memory(
            user=user, content="c", source_message=message, sources=[{"via": "api", "api_key": key.pk}]
        ),
        "chat": Memory(user=user, content="d", source_message=message),
        "page": Memory(user=user, content="e", sources=[{"via": "page"}], mirror_state="synced"),
        "gone key": Memory(user=user, content="f", sources=[{"via": "api", "api_key": 99999}]),
        "nothing": Memory(user=user, content="g", tags=["x"], mirror_state="synced"),
    }
    Memory.objects.bulk_create(rows.values())
    migration = importlib.import_module("memories.migrations.0010_memory_origin")
    migration.backfill(_AppsToday(), None)
    found = {name: Memory.objects.get(pk=row.pk) for name, row in rows.items()}
    assert {name: (m.origin, m.origin_key_id) for name, m in found.items()} == {
        "api": ("api", key.pk),
        "mcp": ("mcp", key.pk),
        "openai": ("openai", key.pk),
        "chat": ("chat", None),
        "page": ("page", None),
        "gone key": ("api", None),
        "nothing": ("system", None),
    }
    assert found["nothing"].mirror_state == "pending"  # re-mirrored, so its tags reach the vector payload
    assert found["page"].mirror_state == "synced"  # no tags: nothing to re-mirror
