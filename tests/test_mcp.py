"""The MCP server at /mcp, driven by the official MCP client (ClientSession over streamable HTTP) against Mnemo
served as `make run` serves it: gunicorn on the embedded defaults, in its own data folder."""

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from agents.toolspecs import TOOLS
from tests.served import ServedInstance

READ_TOOLS = ["memory_search", "memory_summary", "rag_search", "rag_ask"]
GUIDE = (
    "# Heron deployment guide\n\n"
    "## Backups\n\nHeron snapshots its ledger every 6 hours to the cold bucket named heron-vault.\n\n"
    "## Restores\n\nA restore replays the newest snapshot, then the write-ahead journal since it."
)


class Served:
    """One gunicorn for the module, with alice's write, read and revoked keys and bob's write key."""

    def __init__(self, instance: ServedInstance):
        self.instance = instance
        self.mcp_url = f"{instance.url}/mcp"
        self.alice = instance.set_up("alice")
        self.alice_read = self._key("alice", "read", "--scope", "read")
        self.alice_revoked = self._key("alice", "revoked")
        instance.manage(
            "shell",
            "-c",
            "from core.models import ApiKey; from core.services import api_key_revoke; "
            "api_key_revoke(api_key=ApiKey.objects.get(name='revoked'))",
        )
        instance.manage(
            "shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('bob')"
        )
        self.bob = self._key("bob", "bob")

    def _key(self, username: str, name: str, *options: str) -> str:
        return (
            self.instance.manage("create_api_key", username, "--name", name, *options)
            .strip()
            .splitlines()[-1]
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    instance = ServedInstance(tmp_path_factory.mktemp("mcp"))
    served = Served(instance)
    instance.start()
    yield served
    instance.stop()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def in_session(url: str, key: str, work):
    """Open a new MCP session with `key`, initialize it and return `await work(session)`."""

    async def run():
        async with (
            httpx2.AsyncClient(headers=bearer(key), timeout=120) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await work(session)

    # Once a browser test has run, Playwright's sync API keeps an event loop running on this thread, and a second
    # loop cannot start here: the client gets a thread, and a loop, of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, run).result()


def refused(match: str) -> pytest.RaisesGroup:
    """What a refused request raises out of the client: the MCPError, inside the client's task groups."""
    return pytest.RaisesGroup(pytest.RaisesExc(MCPError, match=match), flatten_subgroups=True)


def call(url: str, key: str, name: str, arguments: dict):
    async def work(session):
        return await session.call_tool(name, arguments)

    return in_session(url, key, work)


def read_resource(url: str, key: str, uri: str):
    async def work(session):
        return json.loads((await session.read_resource(uri)).contents[0].text)

    return in_session(url, key, work)


def add_memory(served: Served, key: str, content: str, memory_type: str = "semantic") -> str:
    result = call(served.mcp_url, key, "memory_add", {"content": content, "memory_type": memory_type})
    assert result.is_error is False, result.content
    return result.structured_content["id"]


def found_ids(served: Served, key: str, query: str) -> list[str]:
    result = call(served.mcp_url, key, "memory_search", {"query": query, "limit": 20})
    assert result.is_error is False, result.content
    return [hit["id"] for hit in result.structured_content["results"]]


def listed_tools(served: Served, key: str):
    async def work(session):
        return (await session.list_tools()).tools

    return in_session(served.mcp_url, key, work)


def test_a_write_key_gets_every_tool_with_the_schema_the_agent_uses(served):
    tools = listed_tools(served, served.alice)
    assert [tool.name for tool in tools] == TOOLS.names()
    for tool in tools:
        function = TOOLS.get(tool.name).openai_schema()["function"]
        assert (tool.description, tool.input_schema) == (function["description"], function["parameters"])
    assert {tool.name for tool in tools if not tool.annotations.read_only_hint} == {
        "memory_add",
        "memory_update",
        "memory_remove",
    }


def test_a_read_key_gets_only_the_reading_tools(served):
    assert [tool.name for tool in listed_tools(served, served.alice_read)] == READ_TOOLS


def test_a_read_key_calling_a_write_tool_is_refused_and_nothing_is_written(served):
    content = f"The read key tried to store the word {uuid.uuid4().hex}."
    with refused("read-only: memory_add changes data"):
        call(served.mcp_url, served.alice_read, "memory_add", {"content": content})
    assert found_ids(served, served.alice, content) == []


def test_a_memory_added_in_one_session_is_found_from_a_new_one(served):
    memory_id = add_memory(served, served.alice, "Alice's cat Pumpernickel is afraid of vacuum cleaners.")
    # A new client, a new session and the read key: only the stored memory links the two.
    assert found_ids(served, served.alice_read, "Which animal is afraid of vacuum cleaners?")[0] == memory_id


def test_a_bad_argument_is_a_tool_error_the_model_can_read(served):
    result = call(served.mcp_url, served.alice, "memory_add", {"content": "x", "importance": 7})
    assert result.is_error is True
    assert "importance" in result.content[0].text


def test_rag_ask_answers_from_a_document_with_citations(served):
    added = httpx.post(
        f"{served.instance.url}/api/v1/tools/rag",
        headers={"X-API-Key": served.alice},
        json={"action": "add_text", "text": GUIDE, "document_id": "heron-guide"},
        timeout=120,
    )
    assert added.status_code == 200 and added.json()["ok"] is True, added.text

    answer = call(
        served.mcp_url, served.alice_read, "rag_ask", {"question": "Where does Heron keep its snapshots?"}
    )
    assert answer.is_error is False, answer.content
    citations = answer.structured_content["citations"]
    assert citations[0]["document_title"] == "heron-guide"
    assert "heron-vault" in answer.structured_content["answer"]
    assert "[1] heron-guide" in answer.content[0].text

    search = call(served.mcp_url, served.alice_read, "rag_search", {"query": "heron-vault cold bucket"})
    assert search.structured_content["results"][0]["document_title"] == "heron-guide"
    # bob's knowledge base is his own: the same question finds nothing
    assert (
        call(served.mcp_url, served.bob, "rag_search", {"query": "heron-vault"}).structured_content["results"]
        == []
    )


def test_the_profile_and_recent_memories_are_resources(served):
    memory_id = add_memory(served, served.alice, "I work at Zephyr Labs as a rocket engineer.")

    async def work(session):
        return [resource.uri for resource in (await session.list_resources()).resources]

    assert in_session(served.mcp_url, served.alice_read, work) == [
        "mnemo://profile",
        "mnemo://memories/recent",
    ]
    profile = read_resource(served.mcp_url, served.alice_read, "mnemo://profile")
    work_facts = next(group for group in profile["groups"] if group["kind"] == "work")
    assert memory_id in [memory["id"] for memory in work_facts["memories"]]
    recent = read_resource(served.mcp_url, served.alice_read, "mnemo://memories/recent")
    assert recent[0]["id"] == memory_id


def test_another_key_never_sees_the_first_users_memories(served):
    secret = "Alice's locker code at the Oakridge gym is 4471."
    memory_id = add_memory(served, served.alice, secret)
    assert memory_id in found_ids(served, served.alice, "Oakridge gym locker code")

    assert memory_id not in found_ids(served, served.bob, "Oakridge gym locker code")
    assert secret not in json.dumps(read_resource(served.mcp_url, served.bob, "mnemo://memories/recent"))
    assert secret not in json.dumps(read_resource(served.mcp_url, served.bob, "mnemo://profile"))
    removed = call(served.mcp_url, served.bob, "memory_remove", {"memory_id": memory_id})
    assert removed.is_error is True
    assert memory_id in found_ids(served, served.alice, "Oakridge gym locker code")


@pytest.mark.parametrize("which", ["wrong", "revoked", "missing"])
def test_a_wrong_revoked_or_missing_key_is_refused(served, which):
    # The wrong key has alice's prefix with another secret.
    key = {"wrong": served.alice[:-4] + "AAAA", "revoked": served.alice_revoked, "missing": ""}[which]
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(served.mcp_url, headers=bearer(key), json=request, timeout=30)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "API key" in response.json()["error"]["message"]
    with refused("Missing, wrong or revoked API key"):
        in_session(served.mcp_url, key, lambda session: session.list_tools())


def test_the_x_api_key_header_works_too_and_only_post_is_served(served):
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"X-API-Key": served.alice_read, "Accept": "application/json, text/event-stream"}
    response = httpx.post(served.mcp_url, headers=headers, json=request, timeout=30)
    assert response.status_code == 200
    assert [tool["name"] for tool in response.json()["result"]["tools"]] == READ_TOOLS
    assert httpx.get(served.mcp_url, headers=headers, timeout=30).status_code == 405


def test_memory_search_leaves_out_the_chat_copies_of_messages_unless_asked(served):
    for text in ("hi", "Where do I keep the canoe paddles?"):
        chatted = httpx.post(
            f"{served.instance.url}/v1/chat/completions",
            headers=bearer(served.alice),
            json={"model": "mnemo-agent", "messages": [{"role": "user", "content": text}], "user": "lake"},
            timeout=120,
        )
        assert chatted.status_code == 200, chatted.text
    fact = add_memory(served, served.alice, "The canoe paddles hang in the boathouse rafters.")

    def contents(arguments: dict) -> list[str]:
        result = call(served.mcp_url, served.alice_read, "memory_search", {"limit": 20, **arguments})
        return [hit["content"] for hit in result.structured_content["results"]]

    found = contents({"query": "where do I keep the canoe paddles"})
    assert found == ["The canoe paddles hang in the boathouse rafters."] and fact
    asked = contents({"query": "where do I keep the canoe paddles", "include_chat_copies": True})
    assert "Where do I keep the canoe paddles?" in asked and "hi" not in asked


def test_the_profile_resource_lists_people_and_conflicts(served):
    add_memory(served, served.alice, "Wendell is my landlord.")
    profile = read_resource(served.mcp_url, served.alice_read, "mnemo://profile")
    assert {"name", "groups", "people", "conflicts"} <= set(profile)
    assert {"name": "Wendell", "relation": "landlord"}.items() <= next(
        person for person in profile["people"] if person["name"] == "Wendell"
    ).items()


def test_memory_search_filters_by_tag_and_memories_record_they_came_through_mcp(served):
    tagged = call(
        served.mcp_url,
        served.alice,
        "memory_add",
        {"content": "The quarterly report is due on Friday.", "memory_type": "semantic", "tags": ["finance"]},
    )
    assert tagged.is_error is False, tagged.content
    plain = add_memory(served, served.alice, "The quarterly garden party is on Friday.")
    both = found_ids(served, served.alice, "quarterly Friday")
    assert tagged.structured_content["id"] in both and plain in both
    result = call(
        served.mcp_url, served.alice, "memory_search", {"query": "quarterly Friday", "tag": "finance"}
    )
    assert [hit["id"] for hit in result.structured_content["results"]] == [tagged.structured_content["id"]]
    recent = read_resource(served.mcp_url, served.alice_read, "mnemo://memories/recent")
    mine = next(memory for memory in recent if memory["id"] == plain)
    assert (mine["origin"], mine["origin_key_name"]) == ("mcp", "tests")


def test_tools_answer_in_the_language_of_the_call(served):
    chinese = call(
        served.mcp_url, served.alice, "memory_add", {"content": "孙七的猫叫团子", "memory_type": "semantic"}
    )
    assert chinese.content[0].text == f"✅ 记忆已添加 (ID: {chinese.structured_content['id']})"
    english = call(served.mcp_url, served.alice, "memory_add", {"content": "Sun Qi's cat is called Tuanzi"})
    assert english.content[0].text == f"✅ Memory added (ID: {english.structured_content['id']})"
    asked = call(served.mcp_url, served.alice, "memory_summary", {"language": "zh-hans"})
    assert asked.content[0].text.startswith("📊 记忆系统摘要\n总记忆数: ")
    refused = call(served.mcp_url, served.alice, "memory_summary", {"language": "fr"})
    assert refused.is_error is True
    assert "'language' must be one of en, zh-hans" in refused.content[0].text
