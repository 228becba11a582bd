"""A request answered whole stops when its client disconnects: gunicorn as `make run` serves it, a scripted LLM
that takes 2 s a call and asks for a tool after every answer, and a client that leaves after 1 s."""

import json
import socket
import time

import httpx
import pytest
from django.http import HttpRequest

from core.disconnect import client_gone
from tests.fake_llm import FakeLLM
from tests.served import ServedInstance

TURN_SECONDS = 60
STATE = """
import json
from memories.models import ChatMessage, Memory
answer = ChatMessage.objects.get(session__key={session!r}, role="assistant")
print(json.dumps({{
    "error": answer.error,
    "latency_ms": answer.latency_ms,
    "tool_calls": len(answer.tool_calls),
    "facts": Memory.objects.filter(source_message__session__key={session!r}, memory_type="semantic").count(),
}}))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with FakeLLM() as fake:
        llm = {"LLM_BASE_URL": fake.url, "LLM_API_KEY": "test", "LLM_MODEL": "fake-model"}
        instance = ServedInstance(
            tmp_path_factory.mktemp("disconnect"), {**llm, "LLM_TURN_SECONDS": str(TURN_SECONDS)}
        )
        key = instance.set_up("alice")
        instance.start()
        # One turn first, so the worker has its embedding models loaded before the timed ones.
        httpx.post(
            f"{instance.url}/v1/chat/completions",
            json=chat("Hello", "warm-up"),
            headers=bearer(key),
            timeout=120,
        )
        yield instance, key, fake
        instance.stop()


def chat(text: str, session: str) -> dict:
    return {"model": "mnemo-agent", "user": session, "messages": [{"role": "user", "content": text}]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def chat_calls(fake: FakeLLM, session_text: str) -> int:
    """The model calls of the turn that asked `session_text` (not the memory curation's own prompts)."""
    return sum(
        body["messages"][0]["content"].startswith("You are Mnemo's assistant")
        and any(m["role"] == "user" and m["content"] == session_text for m in body["messages"])
        for body in fake.requests
    )


def turn_state(instance: ServedInstance, session: str) -> dict:
    return json.loads(instance.manage("shell", "-c", STATE.format(session=session)).strip().splitlines()[-1])


def test_a_turn_stops_when_its_client_disconnects(served):
    instance, key, fake = served
    fake.mode, fake.delay = "tool_loop", 2.0  # five calls: 10 s, each asking to store a fact
    text = "Keep saving facts, please."
    body = json.dumps(chat(text, "s-gone")).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", instance.port)) as client:
        client.sendall(head + body)
        time.sleep(1)  # the client leaves while the first model call is still thinking
    time.sleep(6)  # time for two more model calls, had the turn gone on
    assert chat_calls(fake, text) <= 1  # none after the one under way when the client left
    state = turn_state(instance, "s-gone")
    assert state["error"] == "cancelled: the client went away before the answer was ready"
    assert state["tool_calls"] == 0 and state["facts"] == 0  # the tool the model asked for never ran
    assert state["latency_ms"] < 5_000 < TURN_SECONDS * 1000
    assert time.monotonic() - started < TURN_SECONDS


def test_the_same_turn_runs_all_its_rounds_for_a_client_that_waits(served):
    instance, key, fake = served
    fake.mode, fake.delay = "tool_loop", 0.5
    text = "Keep saving facts, and I will wait."
    response = httpx.post(
        f"{instance.url}/v1/chat/completions", json=chat(text, "s-waits"), headers=bearer(key), timeout=120
    )
    assert response.status_code == 200
    assert chat_calls(fake, text) == 5  # four tool rounds and the last one
    state = turn_state(instance, "s-waits")
    assert state["error"] == "" and state["tool_calls"] == 5 and state["facts"] >= 1


def calls_about(fake: FakeLLM, text: str) -> int:
    return sum(any(text in str(m.get("content")) for m in body["messages"]) for body in fake.requests)


def leave_after_one_second(instance: ServedInstance, path: str, headers: str, payload: dict) -> None:
    body = json.dumps(payload).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", instance.port)) as client:
        client.sendall(head + body)
        time.sleep(1)  # the client leaves while the first model call is still thinking


def test_an_mcp_rag_ask_stops_when_its_client_disconnects(served):
    """Advanced search asks the model twice before searching (query expansion, then a hypothetical answer):
    the second call never starts once the MCP client has gone."""
    instance, key, fake = served
    fake.mode, fake.delay = "normal", 2.0
    question = "Which vendor supplies the office chairs?"
    call = {"name": "rag_ask", "arguments": {"question": question, "enable_advanced_search": True}}
    leave_after_one_second(
        instance,
        "/mcp",
        f"X-API-Key: {key}\r\nAccept: application/json, text/event-stream\r\n",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    )
    time.sleep(5)  # time for the second call and more, had the request gone on
    assert calls_about(fake, question) == 1


def test_the_same_mcp_rag_ask_asks_both_questions_for_a_client_that_waits(served):
    instance, key, fake = served
    fake.mode, fake.delay = "normal", 0.2
    question = "Which vendor supplies the desks?"
    call = {"name": "rag_ask", "arguments": {"question": question, "enable_advanced_search": True}}
    response = httpx.post(
        f"{instance.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        headers={"X-API-Key": key, "Accept": "application/json, text/event-stream"},
        timeout=60,
    )
    assert response.status_code == 200 and response.json()["result"]["isError"] is False
    assert calls_about(fake, question) == 2


def test_client_gone_reads_the_socket_without_consuming_it():
    server, client = socket.socketpair()
    request = HttpRequest()
    assert client_gone(request) is False  # not under gunicorn: no socket to ask
    request.META["gunicorn.socket"] = server
    assert client_gone(request) is False  # connected and quiet
    client.sendall(b"G")
    assert client_gone(request) is False  # bytes waiting are not a goodbye, and stay unread
    assert server.recv(1) == b"G"
    client.close()
    assert client_gone(request) is True
    server.close()
