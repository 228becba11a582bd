"""Mnemo over the Model Context Protocol: the memory and knowledge tools and two resources, for one API key.

The tools are the registry's (agents.toolspecs.TOOLS), the functions the chat agent offers its LLM: an MCP
tool's name, description and inputSchema are the record's name, description and parameters, and calling it runs
the record's function, as the agent and POST /api/v1/tools/{name} do. A read-only key is offered, and may call,
only the tools whose record needs no write scope.
The resources are the key owner's profile and their most recent current memories, in the API's JSON shapes.

Everything is scoped to the key's owner. agents.mcp_view serves this at /mcp.
"""

import json
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from agents.tools import ToolCaller, ToolNotAllowed, UnknownTool
from agents.toolspecs import TOOLS
from core.disconnect import ClientGone
from core.llm import Budget
from core.models import ApiKey
from memories.models import EditVia, Memory
from memories.profile import user_profile
from memories.schemas import MemoryOut, ProfileOut

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Mnemo keeps the user's memories and knowledge base. Search memories before answering questions about the "
    "user, save lasting facts they state with memory_add, and answer from their documents with rag_ask, citing "
    "its numbered sources. Read mnemo://profile for what is known about the user."
)
# The memory session that memories written over MCP belong to, as "api" is for POST /api/v1/tools/memory.
MEMORY_SESSION = "mcp"
PROFILE_URI = "mnemo://profile"
RECENT_URI = "mnemo://memories/recent"
RECENT_MEMORIES = 20
RESOURCES = [
    types.Resource(
        uri=PROFILE_URI,
        name="profile",
        title="What Mnemo knows about you",
        description="Who you are: your facts grouped by kind (identity, work, the people you know, preferences, "
        "other facts, recent events), most important first, and the facts that contradict each other; the same "
        "JSON as GET /api/v1/profile.",
        mime_type="application/json",
    ),
    types.Resource(
        uri=RECENT_URI,
        name="recent-memories",
        title="Recent memories",
        description=f"Your {RECENT_MEMORIES} newest current memories (not archived, expired or superseded), "
        "newest first, as GET /api/v1/memories lists them.",
        mime_type="application/json",
    ),
]


def tools_for(api_key: ApiKey) -> list[types.Tool]:
    """The tools this key may call: every tool for a write key, the reading ones for a read key."""
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.parameters,
            annotations=types.ToolAnnotations(read_only_hint=not tool.writes),
        )
        for tool in TOOLS.for_key(api_key)
    ]


def call_tool(
    api_key: ApiKey, name: str, arguments: dict[str, Any], budget: Budget | None = None
) -> types.CallToolResult:
    """Run one tool for the key's owner. A tool's own refusal (a bad parameter, an unknown id) is a result with
    isError set, for the model to read and correct; a tool the key may not call is a protocol error.
    `budget` bounds rag_ask's model calls, and stops them when the request's client has left."""
    caller = ToolCaller(api_key.user, api_key, EditVia.MCP, MEMORY_SESSION, budget)
    try:
        reply = TOOLS.call(name, caller, arguments)
    except UnknownTool:
        raise MCPError(
            types.INVALID_PARAMS, f"No tool named {name!r}: tools/list names the tools of this key."
        ) from None
    except ToolNotAllowed as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None
    except ClientGone:
        # Nobody reads this result: the client left, so the model calls still to come are never made.
        logger.info("MCP tool %s stopped: the client went away", name)
        return types.CallToolResult(
            content=[types.TextContent(text=f"error: {name} stopped: the client went away")], is_error=True
        )
    except Exception:
        # Reported to the model as a failed call, as the chat agent does; the details stay in the log.
        logger.exception("MCP tool %s failed", name)
        return types.CallToolResult(
            content=[
                types.TextContent(text=f"error: the tool {name} failed on the server; the error is logged")
            ],
            is_error=True,
        )
    return types.CallToolResult(
        content=[types.TextContent(text=reply.text)],
        structured_content=json.loads(json.dumps(reply.data, cls=DjangoJSONEncoder)),
        is_error=not reply.ok,
    )


def read_resource(api_key: ApiKey, uri: str) -> str:
    """The resource's JSON text for the key's owner."""
    owner = api_key.user
    if uri == PROFILE_URI:
        return ProfileOut.model_validate(ProfileOut.of(user_profile(owner))).model_dump_json()
    if uri == RECENT_URI:
        recent = (
            Memory.objects.current()
            .for_user(owner)
            .select_related("session", "origin_key")
            .order_by("-created_at")[:RECENT_MEMORIES]
        )
        return json.dumps([MemoryOut.from_orm(memory).model_dump(mode="json") for memory in recent])
    raise MCPError(types.INVALID_PARAMS, f"No resource {uri!r}: resources/list names them.")


def mcp_server(api_key: ApiKey, budget: Budget | None = None) -> Server:
    """The MCP server one request talks to, bound to the key that request authenticated with and to that
    request's LLM budget (core.llm.Budget.for_request).

    The handlers run in the SDK's event loop; the ORM work goes back to the request's own thread (and so its
    database connection) through sync_to_async.
    """

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools_for(api_key))

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await sync_to_async(call_tool)(api_key, params.name, params.arguments or {}, budget)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = await sync_to_async(read_resource)(api_key, params.uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=text)]
        )

    return Server(
        "mnemo",
        title="Mnemo",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=list_resources,
        on_read_resource=on_read_resource,
    )
