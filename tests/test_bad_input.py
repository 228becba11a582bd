"""Bad input on every write path gets a clear 4xx that names the rule, and stores nothing (issue 12)."""

import re

import pytest

from conversations.models import AgentSession, ChatMessage
from core.limits import MAX_CHAT_MESSAGE_CHARS, MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_SHORT_TEXT_CHARS
from memories.entities import ENTITY_TEXT_LIMIT, extract
from memories.models import Memory

pytestmark = pytest.mark.django_db

LONE_SURROGATE = "\ud800"

# (what is wrong, the create body, words the error must contain)
BAD_MEMORIES = [
    ("a lone surrogate in English content", {"content": f"Ana likes tea {LONE_SURROGATE}"}, "unicode"),
    ("a lone surrogate in Chinese content", {"content": f"用户喜欢喝茶{LONE_SURROGATE}"}, "unicode"),
    ("NUL in content", {"content": "Ana likes\x00 tea"}, "U+0000"),
    ("NUL in Chinese content", {"content": "用户\x00喜欢喝茶"}, "U+0000"),
    ("a control character", {"content": "Ana \x1b[31m likes tea"}, "U+001B"),
    (
        "a surrogate in a metadata value",
        {"content": "tea", "metadata": {"source": LONE_SURROGATE}},
        "metadata",
    ),
    ("a surrogate in a metadata key", {"content": "tea", "metadata": {LONE_SURROGATE: 1}}, "metadata"),
    ("NUL in context", {"content": "用户喜欢喝茶", "context": "早上\x00"}, "context"),
    ("content over its cap", {"content": "x" * (MAX_CONTENT_CHARS + 1)}, "100,000"),
    ("context over its cap", {"content": "tea", "context": "长" * (MAX_SHORT_TEXT_CHARS + 1)}, "2,000"),
    ("metadata over its cap", {"content": "tea", "metadata": {"blob": "y" * 20_000}}, "16,384"),
    (
        "metadata nested too deep",
        {"content": "tea", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
        "deeper",
    ),
    ("too many tags", {"content": "tea", "tags": [f"t{i}" for i in range(101)]}, "at most 100"),
    (
        "a participant over its cap",
        {"content": "tea", "participants": ["名" * 201]},
        "at most 200 characters",
    ),
]


@pytest.mark.parametrize(("case", "body", "expected"), BAD_MEMORIES, ids=[case[0] for case in BAD_MEMORIES])
def test_a_bad_memory_is_422_naming_the_rule_and_nothing_is_stored(api, case, body, expected):
    response = api("post", "/memories/", body)
    assert response.status_code == 422, response.content
    assert expected.replace(",", "") in response.content.decode().replace(",", ""), response.content
    assert Memory.objects.count() == 0


def test_a_bad_edit_is_422_and_the_memory_keeps_its_content(api):
    memory_id = api("post", "/memories/", {"content": "用户喜欢喝茶"}).json()["id"]
    response = api("patch", f"/memories/{memory_id}", {"content": f"用户喜欢喝咖啡{LONE_SURROGATE}"})
    assert response.status_code == 422
    response = api("patch", f"/memories/{memory_id}", {"metadata": {"note": "a\x00b"}})
    assert response.status_code == 422
    memory = api("get", f"/memories/{memory_id}").json()
    assert (memory["content"], memory["metadata"]) == ("用户喜欢喝茶", {})


def test_bulk_with_a_bad_field_names_its_item_and_stores_nothing(api):
    items = [{"content": "Ana likes tea"}, {"content": "Kofi likes coffee", "tags": ["ok", "bad\x00"]}]
    response = api("post", "/memories/bulk", {"items": items})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "payload", "items", 1, "tags", 1] and "U+0000" in error["msg"]
    assert Memory.objects.count() == 0


def test_bulk_import_keeps_every_episodic_field(api):
    item = {
        "content": "Team retro about the launch",
        "memory_type": "episodic",
        "context": "Friday afternoon",
        "outcome": "ship on Monday",
        "participants": ["Ana", "Kofi"],
        "tags": ["launch", "复盘"],
    }
    [memory_id] = api("post", "/memories/bulk", {"items": [item]}).json()["ids"]
    stored = api("get", f"/memories/{memory_id}").json()
    assert {field: stored[field] for field in item} == item


def test_the_memory_tool_refuses_bad_content_as_a_failed_reply(api):
    for content in (f"用户喜欢{LONE_SURROGATE}", "x" * (MAX_CONTENT_CHARS + 1)):
        response = api("post", "/tools/memory", {"action": "add", "content": content})
        reply = response.json()
        assert response.status_code == 422 and reply["ok"] is False and "content" in reply["text"]
        assert "content" in reply["detail"][0]["loc"]
    assert Memory.objects.count() == 0


# Each once answered 500 on the tool routes, several with a read key (issue 33).
TOOL_CALLS = [
    ("/tools/memory", {"action": "add", "content": "tea", "created_at": 1e20}, "created_at"),
    ("/tools/memory", {"action": "add", "content": "tea", "created_at": "0000-01-01"}, "created_at"),
    ("/tools/memory", {"action": "search", "query": "tea", "time_range": [-1e15, None]}, "time_range"),
    (
        "/tools/memory",
        {"action": "search", "query": "tea", "time_range": {"start": "0000-01-01"}},
        "time_range",
    ),
    ("/tools/memory", {"action": ["add"]}, "action"),
    ("/tools/memory", {"action": {"add": True}}, "action"),
    ("/tools/rag", {"action": ["search"]}, "action"),
    ("/tools/rag", {"action": {"search": 1}}, "action"),
    ("/tools/memory", {"action": "add", "content": "tea", "context": 5}, "context"),
    ("/tools/memory", {"action": "add", "content": "tea", "modality": "hologram"}, "modality"),
    ("/tools/memory", {"action": "search", "query": "tea", "limit": "5"}, "limit"),
    ("/tools/memory", {"action": "add", "content": "tea", "importance": "0.5"}, "importance"),
    ("/tools/memory", {"action": "add", "content": "tea", "note": "a\x00b"}, "metadata"),
    ("/tools/rag", {"action": "add_text", "text": f"RAG {LONE_SURROGATE}"}, "text"),
    ("/tools/rag", {"action": "ask", "query": "tea", "include_citations": "yes"}, "include_citations"),
    ("/tools/rag", {"action": "search", "query": "tea", "namespace": ["a"]}, "namespace"),
]


@pytest.mark.parametrize(
    ("path", "body", "named"), TOOL_CALLS, ids=[f"{p} {b}"[:60] for p, b, _ in TOOL_CALLS]
)
def test_the_tool_routes_answer_422_naming_the_parameter_never_500(api, read_key, path, body, named):
    for key in (None, read_key):
        response = api("post", path, body, key=key)
        assert response.status_code == 422, response.content
        reply = response.json()
        assert reply["ok"] is False and named in reply["text"] and reply["detail"]
    assert (Memory.objects.count(), AgentSession.objects.count()) == (0, 0)


def test_a_refused_tool_add_leaves_no_empty_session(api):
    # Refused by the service (working memory's token budget), after the parameters passed the schema.
    response = api("post", "/tools/memory", {"action": "add", "content": "词" * 2100, "session_id": "notes"})
    # The call is in Chinese, so the refusal is too (core.tooling.reply_language).
    assert response.status_code == 422 and "最多容纳 2000 个词元" in response.json()["detail"]
    assert (
        api("post", "/tools/memory", {"action": "update", "memory_id": "nope", "content": "x"}).status_code
        == 404
    )
    assert not AgentSession.objects.exists()
    added = api("post", "/tools/memory", {"action": "add", "content": "用户喜欢喝茶", "session_id": "notes"})
    assert added.status_code == 200 and list(AgentSession.objects.values_list("key", flat=True)) == ["notes"]


def test_the_python_tools_refuse_the_same_values_with_a_reply(user):
    from knowledge.tools import RAGTool
    from memories.tools import MemoryTool

    memory, rag = MemoryTool(user_id="alice"), RAGTool(user_id="alice")
    for parameters in (
        {"action": "add", "content": "tea", "created_at": 1e20},
        {"action": "add", "content": "tea", "created_at": "0000-01-01"},
        {"action": "search", "query": "tea", "time_range": [-1e15, None]},
        {"action": ["add"]},
        {"action": {"add": 1}},
    ):
        assert memory.run(parameters).startswith("❌"), parameters
    assert rag.run({"action": ["search"]}).startswith("❌")
    assert not AgentSession.objects.exists()


def test_a_search_query_over_its_cap_is_refused_quickly_on_every_route(api, logged_in):
    api("post", "/memories/", {"content": "Ana works at Acme", "memory_type": "semantic"})
    huge = "Ana works at Acme and " * 50_000  # ~1 MB: once held a worker past gunicorn's timeout
    response = api("post", "/memories/search", {"query": huge})
    assert response.status_code == 422
    reply = api("post", "/tools/memory", {"action": "search", "query": huge}).json()
    assert reply["ok"] is False and f"{MAX_QUERY_CHARS}" in reply["text"]
    response = api("post", "/knowledge/search", {"query": huge})
    assert response.status_code == 422 and str(MAX_QUERY_CHARS) in response.content.decode()
    # At the cap a search still runs.
    assert api("post", "/memories/search", {"query": "Acme " * (MAX_QUERY_CHARS // 5)}).status_code == 200


def test_entity_extraction_reads_a_bounded_part_of_a_long_memory():
    english = "Alice works with Bob on Mnemo in Berlin and likes Python " * 1_700  # 100,000 characters
    chinese = "张三在北京工作李四是工程师" * 7_700
    for text in (english, chinese):
        extraction = extract(text)
        assert extraction.mentions  # the opening is still read
        # ... and nothing past it (the bound, not a stopwatch, keeps a long memory cheap)
        assert extraction == extract(text[:ENTITY_TEXT_LIMIT])
        assert extract(text[:ENTITY_TEXT_LIMIT] + " Zygmunt works with Quentin") == extraction


def test_destructive_calls_need_an_explicit_body_and_run_nothing_without_one(api, user):
    api("post", "/memories/", {"content": "用户喜欢喝茶", "importance": 0.05})
    for body in ([None, None], {}, None):
        assert api("post", "/memories/forget", body).status_code in (400, 422)
        assert api("post", "/memories/consolidate", body).status_code in (400, 422)
    reply = api("post", "/tools/memory", {"action": "clear_all"}).json()
    assert reply["ok"] is False and "confirm" in reply["text"]
    assert Memory.objects.count() == 1


OUT_OF_RANGE = [
    ("post", "/memories/forget", {"strategy": "time_based", "max_age_days": 1.79e308}),
    ("post", "/memories/forget", {"strategy": "capacity_based", "max_capacity": 10**30}),
    ("get", "/memories/?limit=100000000000000000000&offset=100000000000000000000", None),
    ("get", "/memories/?offset=9223372036854775808", None),
    ("get", "/sessions/?limit=100000000000000000000", None),
    ("get", "/entities?offset=9223372036854775808", None),
    ("get", "/documents?offset=9223372036854775808", None),
    ("post", "/memories/", {"content": "Ana likes tea", "created_at": "9999-12-31T23:59:59Z"}),
    ("post", "/memories/", {"content": "用户喜欢喝茶", "created_at": "0001-01-01T00:00:00Z"}),
    ("post", "/memories/bulk", {"items": [{"content": "tea", "created_at": "9999-12-31T23:59:59Z"}]}),
]


@pytest.mark.parametrize(
    ("method", "path", "body"), OUT_OF_RANGE, ids=[f"{m} {p} {b}"[:70] for m, p, b in OUT_OF_RANGE]
)
def test_numbers_and_dates_out_of_range_are_422_never_500(api, method, path, body):
    api("post", "/memories/", {"content": "kept", "importance": 0.05})
    response = api(method, path, body)
    assert response.status_code == 422, response.content
    assert Memory.objects.count() == 1


def test_the_tool_refuses_out_of_range_numbers_and_dates(api):
    for parameters in (
        {"action": "forget", "strategy": "time_based", "max_age_days": 1e300},
        {"action": "add", "content": "tea", "created_at": "9999-12-31T23:59:59"},
    ):
        reply = api("post", "/tools/memory", parameters).json()
        assert reply["ok"] is False, reply


def test_the_chat_endpoint_caps_messages_and_stores_nothing_when_over(chat_completions):
    too_long = {"messages": [{"role": "user", "content": "我" * (MAX_CHAT_MESSAGE_CHARS + 1)}]}
    response = chat_completions(too_long)
    assert response.status_code == 400 and "8,000" in response.json()["error"]["message"]
    too_many = {"messages": [{"role": "user", "content": "hi"}] * 201}
    assert "limit is 200" in chat_completions(too_many).json()["error"]["message"]
    surrogate = {"messages": [{"role": "user", "content": f"hello {LONE_SURROGATE}"}]}
    assert chat_completions(surrogate).status_code == 400
    assert chat_completions(["not", "an", "object"]).status_code == 400
    assert (Memory.objects.count(), ChatMessage.objects.count()) == (0, 0)


def test_a_read_only_key_cannot_chat_because_a_turn_writes(chat_completions, read_key):
    response = chat_completions(
        {"messages": [{"role": "user", "content": "I live in Lisbon."}]}, key=read_key
    )
    assert response.status_code == 403 and "read-only" in response.json()["error"]["message"]
    assert (Memory.objects.count(), ChatMessage.objects.count()) == (0, 0)


def test_a_body_that_is_not_an_object_is_422_and_changes_nothing(api):
    memory_id = api("post", "/memories/", {"content": "用户喜欢喝茶"}).json()["id"]
    for path in (f"/memories/{memory_id}", "/memories/dedupe"):
        method = "patch" if path.startswith(f"/memories/{memory_id}") else "post"
        response = api(method, path, [None, None])
        assert response.status_code == 422 and "JSON object" in response.content.decode(), response.content
    assert api("get", f"/memories/{memory_id}").json()["content"] == "用户喜欢喝茶"


# A value of another JSON type, which pydantic's lax mode would coerce, against what the schema says.
COERCED = [
    ("post", "/memories/search", {"query": "tea", "include_superseded": 0}, "include_superseded"),
    ("post", "/memories/search", {"query": "tea", "limit": "5"}, "limit"),
    ("post", "/memories/search", {"query": "tea", "limit": True}, "limit"),
    ("post", "/memories/forget", {"strategy": "capacity_based", "max_capacity": False}, "max_capacity"),
    ("post", "/memories/", {"content": "tea", "created_at": 0}, "created_at"),
    ("post", "/memories/", {"content": "tea", "importance": "0.5"}, "importance"),
    ("get", "/memories/?until=0.5", None, "until"),
    ("get", "/memories/?archived=1", None, "archived"),
    ("post", "/knowledge/search", {"query": "tea", "namespaces": [""]}, "namespaces"),
    ("get", "/entities?entity_type=FRIEND", None, "entity_type"),
    ("get", "/memories/?q=a%01b", None, "U+0001"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "named"), COERCED, ids=[f"{m} {p} {b}"[:70] for m, p, b, _ in COERCED]
)
def test_a_value_of_another_type_than_documented_is_422(api, method, path, body, named):
    api("post", "/memories/", {"content": "kept", "importance": 0.05})
    response = api(method, path, body)
    assert response.status_code == 422, response.content
    assert named in response.content.decode()
    assert Memory.objects.count() == 1


def test_the_schema_states_the_caps_and_characters_the_service_enforces(client):
    schema = client.get("/api/v1/openapi.json").json()
    memory_in = schema["components"]["schemas"]["MemoryIn"]["properties"]
    assert memory_in["content"]["maxLength"] == MAX_CONTENT_CHARS
    assert memory_in["context"]["maxLength"] == MAX_SHORT_TEXT_CHARS
    pattern = re.compile(memory_in["content"]["pattern"])
    assert (
        pattern.match("用户喜欢喝茶\n\tAna")
        and not pattern.match("Ana\x00")
        and not pattern.match("\x1b[31m")
    )
    assert memory_in["created_at"]["anyOf"][0]["pattern"].startswith("^(000[2-9]")
    assert schema["components"]["schemas"]["SearchIn"]["properties"]["limit"]["maximum"] == 100


def test_a_body_over_the_limit_is_413_as_json_on_the_api_and_a_page_elsewhere(client, write_key):
    body = b'{"content": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    response = client.post(
        "/api/v1/memories/", data=body, content_type="application/json", HTTP_X_API_KEY=write_key
    )
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "The request body is over 10 MiB (files go as multipart uploads, up to MNEMO_MAX_UPLOAD_MB)."
    }
    page = client.post(
        "/login/",
        data=b"username=" + b"a" * (11 * 1024 * 1024),
        content_type="application/x-www-form-urlencoded",
    )
    assert page.status_code == 413 and page["Content-Type"].startswith("text/html")
    assert not Memory.objects.exists()
