"""The registry's tools over the JSON API: GET /api/v1/tools lists them, POST /api/v1/tools/{name} runs one.

The same tools, schemas and functions as the chat agent and the MCP server (agents.toolspecs.TOOLS). Hello-Agents'
own tools, with an `action` in the body, stay at POST /api/v1/tools/memory and /tools/rag (memories.api,
knowledge.api); their paths come first, so no registry tool may take those names (agents.tools.RESERVED_NAMES).
"""

from typing import Any, cast

from django.http import HttpRequest
from ninja import Body, Router, Status

from agents.schemas import ToolSpecOut
from agents.tools import ToolCaller
from agents.toolspecs import TOOLS
from core.auth import ApiRequest
from core.llm import Budget
from core.tooling import ToolOut, ToolRefusalOut

router = Router(tags=["tools"])
# The memory session that memories written through these routes belong to, as for POST /api/v1/tools/memory.
MEMORY_SESSION = "api"


@router.get("/tools", response=list[ToolSpecOut], summary="The tools this key may call")
def list_tools(request: HttpRequest):
    """Every tool for a key with the write scope, the reading ones for a read-only key: the names, descriptions
    and JSON parameters the chat agent and the MCP server offer."""
    api_key = cast(ApiRequest, request).auth
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters, "writes": t.writes}
        for t in TOOLS.for_key(api_key)
    ]


@router.post(
    "/tools/{name}",
    response={200: ToolOut, frozenset({403, 404, 422}): ToolRefusalOut},
    summary="Run one tool by name",
)
def call_tool(request: HttpRequest, name: str, arguments: dict[str, Any] = Body(...)):  # noqa: B008
    """The tool's arguments as a JSON object (its `parameters` in GET /api/v1/tools). Answers {"ok", "text",
    "data"}; a refused call 422 (404: no such memory) with the same body and the reason in `detail`. A name GET
    /api/v1/tools does not list is a 404, a tool that writes called with a read-only key a 403."""
    api_key = cast(ApiRequest, request).auth
    caller = ToolCaller(api_key.user, api_key, None, MEMORY_SESSION, Budget.for_request(request))
    reply = TOOLS.call(name, caller, arguments)
    return Status(reply.status, reply.answer())
