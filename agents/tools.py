"""The tool registry: one Tool record per tool the chat agent, the MCP server and POST /api/v1/tools/{name} offer.

A record holds the tool's name, its description and JSON parameters (the OpenAI function schema and the MCP
inputSchema are both made from them), the function that runs it for a caller, and the API-key scope it needs.
Each of the three routes reads `agents.toolspecs.TOOLS` and nothing else: a name not in the registry is a clear
error on every route (the agent's reply to the model, a 404, an MCP error), never another tool's guess.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from core.errors import RequestRefused
from core.llm import Budget
from core.models import ApiKey, ApiKeyScope
from core.tooling import LANGUAGE_RULE, REPLY_LANGUAGES, ToolReply

# Every tool answers in English or Chinese (core.tooling.reply_language); a caller may ask for one.
LANGUAGE = {"type": "string", "enum": list(REPLY_LANGUAGES), "description": LANGUAGE_RULE}
# POST /api/v1/tools/memory and /tools/rag are Hello-Agents' tools themselves (an `action` in the body): a tool of
# the registry under one of these names could not be reached at /api/v1/tools/{name}.
RESERVED_NAMES = frozenset({"memory", "rag"})


@dataclass(frozen=True)
class ToolCaller:
    """Who calls a tool and through which route: the user it acts for, the key (None on the chat page), the
    route recorded with each write (memories.models.EditVia; None: the tool's default), the memory session its
    writes belong to, and the budget that bounds its model calls."""

    user: AbstractBaseUser
    api_key: ApiKey | None = None
    via: str | None = None
    session_key: str | None = None
    budget: Budget | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, Any]  # JSON schema of each parameter; `language` is added to every tool
    required: tuple[str, ...]
    run: Callable[[ToolCaller, dict[str, Any]], ToolReply]
    scope: ApiKeyScope = (
        ApiKeyScope.READ
    )  # the scope a key needs to call it: WRITE for a tool that changes data

    @property
    def writes(self) -> bool:
        return self.scope == ApiKeyScope.WRITE

    @property
    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {**self.properties, "language": LANGUAGE},
            "required": list(self.required),
        }

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def allowed(self, api_key: ApiKey | None) -> bool:
        """Whether this key may call the tool (no key: the chat page, acting as its logged-in user)."""
        return api_key is None or not self.writes or api_key.can_write


class UnknownTool(RequestRefused):
    status = 404


class ToolNotAllowed(RequestRefused):
    status = 403


class ToolRegistry:
    def __init__(self, tools: tuple[Tool, ...] = ()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._tools or tool.name in RESERVED_NAMES:
            raise ValueError(f"a tool named {tool.name!r} already exists")
        self._tools[tool.name] = tool
        return tool

    def unregister(self, name: str) -> None:
        del self._tools[name]

    @contextmanager
    def registered(self, tool: Tool) -> Iterator[Tool]:
        """`tool` offered for the duration of the block (a test's made-up tool)."""
        self.register(tool)
        try:
            yield tool
        finally:
            self.unregister(tool.name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool:
        """The tool of that name; UnknownTool (404) names the tools there are."""
        tool = self._tools.get(name)
        if tool is None:
            raise UnknownTool(f"No tool named {name!r}; tools: {', '.join(self._tools)}")
        return tool

    def for_key(self, api_key: ApiKey | None) -> list[Tool]:
        """The tools this key may call: every tool for a write key, the reading ones for a read key."""
        return [tool for tool in self if tool.allowed(api_key)]

    def openai_tools(self) -> list[dict[str, Any]]:
        return [tool.openai_schema() for tool in self]

    def call(self, name: str, caller: ToolCaller, arguments: dict[str, Any]) -> ToolReply:
        """Run a tool for `caller`: UnknownTool for a name not registered, ToolNotAllowed for a read-only key
        calling a tool that writes; the tool's own refusals are a reply that is not ok."""
        tool = self.get(name)
        if not tool.allowed(caller.api_key):
            raise ToolNotAllowed(
                f"This API key is read-only: {name} changes data and needs a key with the write scope."
            )
        return tool.run(caller, arguments)
