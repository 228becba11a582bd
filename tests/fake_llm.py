"""A small OpenAI-compatible chat server on 127.0.0.1 for tests: the only faked component (no real LLM here).

Its replies follow simple rules so tests can script a conversation: a user stating their name and job gets a
`memory_add` tool call; after a tool result it confirms; otherwise it answers from the "Relevant memories"
section of the system prompt the agent sent. `mode` switches to failure scripts: "slow" (sleeps past the client's
timeout), "drip" (a long answer streamed a word every 0.3 s, so no single read times out),
"malformed_tool_call" (broken JSON arguments once), "error" (HTTP 500), "tool_loop" (a new fact to save after every
tool result, so a turn uses all its tool rounds). `delay` makes every reply wait that many seconds first.
"""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.served import serve_in_background

NAME_AND_JOB = re.compile(r"my name is (\w+).*?(?:i work as|i am) ((?:an? )?[\w ]+?)[.!]?$", re.IGNORECASE)


class FakeLLM:
    def __init__(self):
        self.mode = "normal"
        self.delay = 0.0
        self.requests: list[dict] = []
        self.malformed_sent = False
        self.streams_abandoned = 0  # streams whose reader (Mnemo) closed the connection before the end
        self.abandoned = threading.Event()  # set when a stream is abandoned: wait on it rather than poll
        self.chunks_sent = 0  # stream chunks written, over all requests
        # Replies to the memory-curation prompt (memories.curation), in order; {"decision": "add"} when empty.
        self.curation_replies: list[str] = []
        self.curation_prompts: list[str] = []
        # Tool calls to make, in order: the next user message gets the first ({"name", "arguments"}), whatever it says.
        self.scripted_calls: list[dict] = []
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        serve_in_background(self.server)
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # --- the scripted model ------------------------------------------------------------------------------

    def reply(self, body: dict) -> dict:
        """{"content": str} or {"tool_calls": [{"name", "arguments"}]}."""
        messages = body["messages"]
        last = messages[-1]
        if messages[0]["role"] == "system" and messages[0]["content"].startswith(
            "You keep a user's long-term"
        ):
            self.curation_prompts.append(last["content"])
            return {
                "content": self.curation_replies.pop(0) if self.curation_replies else '{"decision": "add"}'
            }
        if last["role"] == "user" and self.scripted_calls:
            return {"tool_calls": [self.scripted_calls.pop(0)]}
        if self.mode == "tool_loop":
            rounds = sum(message["role"] == "tool" for message in messages)
            arguments = json.dumps({"content": f"Loop fact number {rounds + 1}.", "memory_type": "semantic"})
            return {"tool_calls": [{"name": "memory_add", "arguments": arguments}]}
        if last["role"] == "tool":
            return {"content": f"Done: {last['content'][:80]}"}
        user_text = last.get("content") or ""
        if self.mode == "drip":
            return {"content": " ".join(["slowly"] * 40)}
        if self.mode == "malformed_tool_call" and not self.malformed_sent:
            self.malformed_sent = True
            return {"tool_calls": [{"name": "memory_add", "arguments": '{"content": "unterminated'}]}
        if self.mode == "tool_call" or (match := NAME_AND_JOB.search(user_text)):
            if self.mode == "tool_call":
                fact = user_text
            else:
                fact = f"The user's name is {match.group(1)} and they work as {match.group(2).strip()}."
            arguments = json.dumps({"content": fact, "memory_type": "semantic", "importance": 0.9})
            return {"tool_calls": [{"name": "memory_add", "arguments": arguments}]}
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        section = system.split("Relevant memories:\n", 1)
        if len(section) == 2:
            first = section[1].split("\n")[0].split(") ", 1)[-1]
            return {"content": f"From what I remember: {first}"}
        return {"content": "I don't know yet."}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "fake-model", "object": "model", "owned_by": "t"}],
                        },
                    )
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(body)
                time.sleep(fake.delay)
                if fake.mode == "slow":
                    time.sleep(3)
                if fake.mode == "error":
                    self._json(500, {"error": {"message": "the fake model is down", "type": "server_error"}})
                    return
                reply = fake.reply(body)
                if body.get("stream"):
                    self._stream(reply)
                else:
                    self._json(200, _completion(reply))

            def _stream(self, reply: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for chunk in _chunks(reply):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        fake.chunks_sent += 1
                        if fake.mode == "drip":
                            time.sleep(0.3)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    fake.streams_abandoned += 1
                    fake.abandoned.set()

        return Handler


def _completion(reply: dict) -> dict:
    message: dict = {"role": "assistant", "content": reply.get("content")}
    finish = "stop"
    if "tool_calls" in reply:
        finish = "tool_calls"
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for i, c in enumerate(reply["tool_calls"])
        ]
    return {
        "id": "fake-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _chunks(reply: dict):
    base = {"id": "fake-1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model"}
    if "tool_calls" in reply:
        for i, call in enumerate(reply["tool_calls"]):
            half = len(call["arguments"]) // 2
            for part, name in ((call["arguments"][:half], call["name"]), (call["arguments"][half:], None)):
                function = {"arguments": part, **({"name": name} if name else {})}
                tool_call = {
                    "index": i,
                    "function": function,
                    **({"id": f"call_{i}", "type": "function"} if name else {}),
                }
                yield {
                    **base,
                    "choices": [{"index": 0, "delta": {"tool_calls": [tool_call]}, "finish_reason": None}],
                }
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    else:
        for word in re.findall(r"\S+\s*", reply["content"]):
            yield {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield {**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
