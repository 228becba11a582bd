"""The tool registry (agents.tools, agents.toolspecs.TOOLS; issue 34 item 3): the chat agent, the MCP server and
POST /api/v1/tools/{name} offer exactly its tools, an unknown name is a clear error on each route, and a tool
registered in one record is listed and callable everywhere."""

import json

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from agents.agent import Agent
from agents.mcp_server import call_tool, tools_for
from agents.tools import Tool, ToolCaller
from agents.toolspecs import TOOLS
from conversations.models import ChatMessage
from core.models import ApiKey, ApiKeyScope
from core.tooling import Params, ToolReply
from memories.actions.rules import session_for_key
from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)

EVERY_TOOL = [
    "memory_add",
    "memory_search",
    "memory_update",
    "memory_remove",
    "memory_summary",
    "rag_search",
    "rag_ask",
]


def count_words(caller: ToolCaller, arguments: dict) -> ToolReply:
    """A made-up tool: how many words a text has, for the caller."""
    text = Params(arguments).text("text", required=True)
    words = len(text.split())
    return ToolReply(True, f"{caller.user.get_username()}: {words} words", {"words": words})


WORD_COUNT = Tool(
    "word_count",
    "Count the words of a text.",
    {"text": {"type": "string"}},
    ("text",),
    count_words,
)


def post_tool(client, key: str, name: str, arguments) -> object:
    return client.post(
        f"/api/v1/tools/{name}",
        data=json.dumps(arguments),
        content_type="application/json",
        HTTP_X_API_KEY=key,
    )


def listed(client, key: str) -> list[str]:
    response = client.get("/api/v1/tools", HTTP_X_API_KEY=key)
    assert response.status_code == 200
    return [tool["name"] for tool in response.json()]


def test_every_route_offers_exactly_the_registry(client, user, write_key, fake_llm):
    assert TOOLS.names() == EVERY_TOOL
    key = ApiKey.objects.get(user=user, scope=ApiKeyScope.WRITE)
    assert [tool.name for tool in tools_for(key)] == TOOLS.names()
    assert listed(client, write_key) == TOOLS.names()
    body = client.get("/api/v1/tools", HTTP_X_API_KEY=write_key).json()
    assert [(tool["description"], tool["parameters"]) for tool in body] == [
        (tool.description, tool.parameters) for tool in TOOLS
    ]
    Agent(user=user, session=session_for_key(user=user, key="s-list")).run("Hello there.")
    offered = [function["function"]["name"] for function in fake_llm.requests[0]["tools"]]
    assert offered == TOOLS.names()
    assert fake_llm.requests[0]["tools"] == TOOLS.openai_tools()


def test_a_read_key_is_offered_and_may_call_only_the_reading_tools(client, user, read_key):
    reading = ["memory_search", "memory_summary", "rag_search", "rag_ask"]
    assert listed(client, read_key) == reading
    key = ApiKey.objects.get(user=user, scope=ApiKeyScope.READ)
    assert [tool.name for tool in tools_for(key)] == reading
    response = post_tool(client, read_key, "memory_add", {"content": "The user likes green tea."})
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "This API key is read-only: memory_add changes data and needs a key with the write scope."
    )
    assert not Memory.objects.exists()


def test_a_tool_runs_through_the_endpoint_as_through_the_tool(client, user, write_key):
    response = post_tool(
        client, write_key, "memory_add", {"content": "The user keeps bees.", "importance": 0.7}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    memory = Memory.objects.get(pk=body["data"]["id"])
    assert (memory.content, memory.importance, memory.origin, memory.session.key) == (
        "The user keeps bees.",
        0.7,
        "api",
        "api",
    )
    refused = post_tool(client, write_key, "memory_update", {})
    assert refused.status_code == 422
    assert refused.json()["detail"] == "missing required parameter 'memory_id'"


def test_an_unknown_tool_is_an_error_on_every_route(client, user, write_key, fake_llm):
    response = post_tool(client, write_key, "rag_delete_everything", {"namespace": "default"})
    assert response.status_code == 404
    assert response.json() == {
        "detail": "No tool named 'rag_delete_everything'; tools: " + ", ".join(EVERY_TOOL)
    }
    key = ApiKey.objects.get(user=user)
    with pytest.raises(MCPError) as caught:
        call_tool(key, "rag_delete_everything", {})
    assert caught.value.error.code == types.INVALID_PARAMS
    assert caught.value.error.message == (
        "No tool named 'rag_delete_everything': tools/list names the tools of this key."
    )
    fake_llm.scripted_calls = [{"name": "rag_delete_everything", "arguments": "{}"}]
    Agent(user=user, session=session_for_key(user=user, key="s-unknown")).run("Tidy up, please.")
    trace = ChatMessage.objects.get(role="assistant").tool_calls
    assert (trace[0]["ok"], trace[0]["result"]) == (
        False,
        "error: no tool named 'rag_delete_everything'; available: " + ", ".join(EVERY_TOOL),
    )
    with pytest.raises(ValueError, match="already exists"):
        TOOLS.register(Tool("memory", "Shadowed by POST /api/v1/tools/memory.", {}, (), count_words))


def test_a_registered_tool_is_listed_and_callable_everywhere(client, user, write_key, read_key, fake_llm):
    with TOOLS.registered(WORD_COUNT):
        assert listed(client, write_key)[-1] == "word_count"
        assert listed(client, read_key)[-1] == "word_count"  # it needs only the read scope
        response = post_tool(client, read_key, "word_count", {"text": "three little words"})
        assert response.status_code == 200
        assert response.json() == {"ok": True, "text": "alice: 3 words", "data": {"words": 3}}
        assert post_tool(client, read_key, "word_count", {}).status_code == 422

        key = ApiKey.objects.get(user=user, scope=ApiKeyScope.READ)
        mcp_tool = next(tool for tool in tools_for(key) if tool.name == "word_count")
        assert (mcp_tool.description, mcp_tool.input_schema) == (
            WORD_COUNT.description,
            WORD_COUNT.parameters,
        )
        assert mcp_tool.annotations.read_only_hint is True
        result = call_tool(key, "word_count", {"text": "one two"})
        assert (result.is_error, result.content[0].text, result.structured_content) == (
            False,
            "alice: 2 words",
            {"words": 2},
        )

        fake_llm.scripted_calls = [{"name": "word_count", "arguments": '{"text": "a b c d"}'}]
        Agent(user=user, session=session_for_key(user=user, key="s-count")).run("How long is it?")
        trace = ChatMessage.objects.get(role="assistant").tool_calls
        assert (trace[0]["name"], trace[0]["ok"], trace[0]["result"]) == (
            "word_count",
            True,
            "alice: 4 words",
        )
    assert "word_count" not in listed(client, write_key)
    assert post_tool(client, write_key, "word_count", {"text": "gone"}).status_code == 404
