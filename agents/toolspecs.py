"""The tools the chat agent, the MCP server and POST /api/v1/tools/{name} offer: the registry's records.

Each tool is one action of MemoryTool or RAGTool; its JSON schema lists that action's parameters with the
Hello-Agents defaults in the descriptions (OpenAI schemas carry no defaults of their own). Calling it runs
`tool.execute({"action": …, **arguments})`, so the agent, the MCP server, the API and the Python tools share one
implementation. A tool is added here, as one record, with its tests (agents.tools says what a record holds).
"""

from collections.abc import Callable
from typing import Any

from agents.tools import Tool, ToolCaller, ToolRegistry
from core.models import ApiKeyScope
from core.tooling import ToolReply
from knowledge.tools import WRITE_ACTIONS as RAG_WRITES
from knowledge.tools import RAGTool
from memories.tools import WRITE_ACTIONS as MEMORY_WRITES
from memories.tools import MemoryTool
from memories.types import NAMES as MEMORY_TYPE_NAMES

MEMORY_TYPES = list(MEMORY_TYPE_NAMES)  # from their policies (memories.types)


def _memory(action: str) -> Callable[[ToolCaller, dict[str, Any]], ToolReply]:
    def run(caller: ToolCaller, arguments: dict[str, Any]) -> ToolReply:
        tool = MemoryTool(
            user_id=caller.user.get_username(),
            session_id=caller.session_key,
            api_key=caller.api_key,
            via=caller.via,
        )
        return tool.execute({**arguments, "action": action})

    return run


def _rag(action: str) -> Callable[[ToolCaller, dict[str, Any]], ToolReply]:
    def run(caller: ToolCaller, arguments: dict[str, Any]) -> ToolReply:
        # No server paths over any of these routes: documents come as uploads.
        tool = RAGTool(user_id=caller.user.get_username(), allow_file_paths=False, budget=caller.budget)
        return tool.execute({**arguments, "action": action})

    return run


def _scope(action: str, writes: frozenset[str]) -> ApiKeyScope:
    return ApiKeyScope.WRITE if action in writes else ApiKeyScope.READ


# The registry: the only list of tools, in the order they are offered.
TOOLS = ToolRegistry(
    (
        Tool(
            "memory_add",
            "Save a memory about the user. Use memory_type 'semantic' for lasting facts the user states about "
            "themselves (name, job, preferences), 'episodic' for events.",
            {
                "content": {"type": "string", "description": "The memory, as a full sentence."},
                "memory_type": {"type": "string", "enum": MEMORY_TYPES, "description": "Default: working."},
                "importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "Default: 0.5."},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Labels to find it by later (memory_search's tag filter).",
                },
            },
            ("content",),
            _memory("add"),
            _scope("add", MEMORY_WRITES),
        ),
        Tool(
            "memory_search",
            "Search the user's memories.",
            {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Default: 5."},
                "memory_types": {"type": "array", "items": {"type": "string", "enum": MEMORY_TYPES}},
                "min_importance": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "Default: 0.1.",
                },
                "include_superseded": {
                    "type": "boolean",
                    "description": "Also return facts a newer fact replaced (history). Default: false.",
                },
                "include_chat_copies": {
                    "type": "boolean",
                    "description": "Also return the working-memory copies of chat messages from other "
                    "conversations. Default: false.",
                },
                "tag": {"type": "string", "description": "Only memories carrying this tag."},
            },
            ("query",),
            _memory("search"),
            _scope("search", MEMORY_WRITES),
        ),
        Tool(
            "memory_update",
            "Correct a memory by its full id.",
            {
                "memory_id": {"type": "string"},
                "content": {"type": "string"},
                "importance": {"type": "number", "minimum": 0, "maximum": 1},
            },
            ("memory_id",),
            _memory("update"),
            _scope("update", MEMORY_WRITES),
        ),
        Tool(
            "memory_remove",
            "Delete a memory by its full id.",
            {"memory_id": {"type": "string"}},
            ("memory_id",),
            _memory("remove"),
            _scope("remove", MEMORY_WRITES),
        ),
        Tool(
            "memory_summary",
            "Counts per memory type and the most important memories.",
            {"limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Default: 10."}},
            (),
            _memory("summary"),
            _scope("summary", MEMORY_WRITES),
        ),
        Tool(
            "rag_search",
            "Search the user's knowledge base (uploaded documents).",
            {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Default: 5."},
                "namespace": {"type": "string", "description": "Default: default."},
            },
            ("query",),
            _rag("search"),
            _scope("search", RAG_WRITES),
        ),
        Tool(
            "rag_ask",
            "Answer a question from the knowledge base with numbered citations.",
            {
                "question": {"type": "string"},
                "namespace": {"type": "string", "description": "Default: default."},
            },
            ("question",),
            _rag("ask"),
            _scope("ask", RAG_WRITES),
        ),
    )
)
