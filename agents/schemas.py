"""The agents app's API types (agents.api)."""

from typing import Any

from ninja import Schema


class ToolSpecOut(Schema):
    """A tool of the registry as GET /api/v1/tools lists it: what the chat agent and the MCP server offer."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments POST /api/v1/tools/{name} takes
    writes: bool  # whether it changes data, and so needs a key with the write scope
