"""POST /mcp: Mnemo's MCP server (agents.mcp_server) over streamable HTTP, inside the Django process.

One process owns the embedded stores and gunicorn serves Django over WSGI, so MCP cannot be a server of its own;
the official SDK's streamable HTTP transport is ASGI. Each POST is therefore handed to the SDK's
StreamableHTTPSessionManager in stateless JSON mode through asgiref's async_to_sync, and the manager's ASGI answer
becomes the Django response. Stateless fits a server authenticated by API keys: every request carries its key
and is checked here, nothing is kept between requests, and any worker thread can answer any of them. Without a
session there is nothing to stream on GET or to end with DELETE, so those answer 405, as the transport allows.
"""

from collections.abc import MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents.mcp_server import mcp_server
from core.auth import TooManyKeyFailures, authenticate_request_key, request_key_header
from core.llm import Budget

# The key is checked here; the SDK never needs to see it.
_KEY_HEADERS = {b"authorization", b"x-api-key"}


def _refusal(status: int, message: str) -> JsonResponse:
    """A JSON-RPC error without an id, as the SDK answers errors at the HTTP level; MCP clients show the message."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": message}}
    return JsonResponse(error, status=status)


@csrf_exempt  # authenticated by an API key in a header, never by a cookie
@require_POST
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    try:
        api_key = authenticate_request_key(request, request_key_header(request))
    except TooManyKeyFailures as exc:
        return _refusal(429, str(exc))
    if api_key is None:
        response: HttpResponse = _refusal(
            401, "Missing, wrong or revoked API key: send Authorization: Bearer <key> (or X-API-Key: <key>)."
        )
        response["WWW-Authenticate"] = 'Bearer realm="mnemo"'
        return response
    server = mcp_server(api_key, Budget.for_request(request))
    status, headers, body = async_to_sync(_serve)(server, _asgi_scope(request), request.body)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.lower() != "content-length":  # Django sets its own
            response[name] = value
    return response


def _asgi_scope(request: HttpRequest) -> dict[str, Any]:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [(name, value) for name, value in headers if name not in _KEY_HEADERS],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.META.get("SERVER_NAME", ""), int(request.META.get("SERVER_PORT") or 0)),
    }


async def _serve(
    server: Server, scope: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request through the SDK's transport: (status, headers, body) of its answer."""
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
    answer: dict[str, Any] = {"status": 500, "headers": [], "body": bytearray()}
    answered = anyio.Event()
    body_sent = False

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client "disconnects" only once it has its answer
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")
            if not message.get("more_body", False):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return answer["status"], answer["headers"], bytes(answer["body"])
