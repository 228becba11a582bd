"""An OpenAI-compatible front door to the memory-enabled agent: POST /v1/chat/completions, GET /v1/models.

Any OpenAI client works with base_url http://127.0.0.1:8000/v1 and an Mnemo API key as its api_key. The
conversation's last user message is the turn; earlier messages are the history the client keeps. The session is
the request's `user` field (or X-Mnemo-Session header), so one client conversation maps to one Mnemo session.

A turn's model calls share LLM_TURN_SECONDS, and stop when the client disconnects: a stream when its next write
fails, an answer sent whole (under gunicorn) before its next model call, streamed chunk or tool call. The stopped
turn is kept in the session with the error "cancelled: …", and its access log line says 499.
"""

import json
import time
import uuid

from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from agents.agent import Agent
from core.auth import TooManyKeyFailures, authenticate_request_key, request_key_header
from core.limits import (
    MAX_CHAT_MESSAGE_CHARS,
    MAX_CHAT_MESSAGES,
    MAX_CHAT_TOTAL_CHARS,
    InputRejected,
    check_text,
)
from core.tooling import REPLY_LANGUAGES
from memories.actions.rules import session_for_key

MODEL_ID = "mnemo-agent"


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JsonResponse:
    return JsonResponse({"error": {"message": message, "type": kind, "code": status}}, status=status)


def _key(request: HttpRequest):
    return authenticate_request_key(request, request_key_header(request))


def _unauthorized(request: HttpRequest):
    """(key, None) for a good key, else (None, the error answer)."""
    try:
        api_key = _key(request)
    except TooManyKeyFailures as exc:
        return None, _error(429, str(exc), "rate_limit_error")
    if api_key is None:
        return None, _error(
            401, "Missing or invalid API key (Authorization: Bearer <key>).", "authentication_error"
        )
    return api_key, None


@require_GET
def models(request: HttpRequest) -> JsonResponse:
    _, refused = _unauthorized(request)
    if refused:
        return refused
    return JsonResponse(
        {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "mnemo"}]}
    )


@csrf_exempt
@require_POST
def chat_completions(request: HttpRequest) -> HttpResponseBase:
    api_key, refused = _unauthorized(request)
    if refused:
        return refused
    if not api_key.can_write:
        return _error(
            403,
            "This API key is read-only, and every chat turn is kept in the session and in memory; "
            "use a key with the write scope.",
            "permission_error",
        )
    try:
        body = json.loads(request.body or b"{}")
    except json.JSONDecodeError:
        return _error(400, "The request body is not valid JSON.")
    if not isinstance(body, dict):
        return _error(400, "The request body must be a JSON object.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return _error(400, "'messages' must be a non-empty list.")
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user" or not _text(last.get("content")).strip():
        return _error(400, "The last message must be a user message with text content.")
    # The answers written without a model are in this language, by default in the last message's (README).
    language = body.get("language")
    if language is not None and language not in REPLY_LANGUAGES:
        return _error(400, f"'language' must be one of {', '.join(REPLY_LANGUAGES)}.")
    history = [
        {"role": m["role"], "content": _text(m.get("content"))}
        for m in messages[:-1]
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and _text(m.get("content"))
    ]
    try:
        text = _checked_conversation(_text(last["content"]), history)
        session_key = str(body.get("user") or request.headers.get("X-Mnemo-Session") or "openai-api")[:200]
        session = session_for_key(user=api_key.user, key=session_key)
    except InputRejected as exc:  # OpenAI answers 400 to an over-long conversation too
        return _error(400, str(exc))
    agent = Agent(user=api_key.user, session=session, api_key=api_key, request=request, language=language)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    turn = agent.turn(text, history=history)
    if body.get("stream"):
        response = StreamingHttpResponse(_sse(turn, completion_id, created), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
    result = next(event["result"] for event in turn if event["type"] == "done")
    message = result.message
    if result.cancelled:  # nobody reads this; 499 (nginx's "client closed request") tells the access log why
        return _error(499, message.error, "client_closed_request")
    if message.error:  # the turn is kept in the session with its error; the client learns it failed
        return _error(502, f"The language model failed: {message.error}", "api_error")
    return JsonResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": MODEL_ID,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": message.prompt_tokens,
                "completion_tokens": message.completion_tokens,
                "total_tokens": message.prompt_tokens + message.completion_tokens,
            },
            "mnemo": {"session_id": str(session.pk), "message_id": str(message.pk), **message.retrieved},
        },
        json_dumps_params={"ensure_ascii": False},
    )


def _checked_conversation(text: str, history: list[dict]) -> str:
    """The turn's text, once it and the history are within the chat's limits."""
    if len(history) + 1 > MAX_CHAT_MESSAGES:
        raise InputRejected(
            gettext("'messages' has %(count)s messages; the limit is %(max_chat_messages)s")
            % {"count": len(history) + 1, "max_chat_messages": MAX_CHAT_MESSAGES}
        )
    total = len(text) + sum(len(message["content"]) for message in history)
    if total > MAX_CHAT_TOTAL_CHARS:
        raise InputRejected(
            f"the messages hold {total:,} characters together; the limit is {MAX_CHAT_TOTAL_CHARS:,}"
        )
    for position, message in enumerate(history):
        check_text(message["content"], f"messages[{position}].content", MAX_CHAT_MESSAGE_CHARS)
    return check_text(text.strip(), "the last message", MAX_CHAT_MESSAGE_CHARS)


def _sse(turn, completion_id: str, created: int):
    def chunk(delta: dict, finish: str | None = None) -> str:
        payload = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for event in turn:
        if event["type"] == "delta" and event["text"]:
            yield chunk({"content": event["text"]})
    yield chunk({}, "stop")
    yield "data: [DONE]\n\n"


def _text(content) -> str:
    """OpenAI content is a string or a list of parts; only text parts matter here."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""
