"""The memory and knowledge tool actions offered to the LLM as OpenAI function tools.

Each function is one action of MemoryTool or RAGTool; its JSON schema lists that action's parameters with the
Hello-Agents defaults in the descriptions (OpenAI schemas carry no defaults of their own). Calling a function runs
`tool.execute({"action": …, **arguments})`, so the agent, the Python tools and the API share one implementation.
"""

from typing import Any

from core.tooling import LANGUAGE_RULE, REPLY_LANGUAGES

MEMORY_TYPES = ["working", "episodic", "semantic", "perceptual"]


# Every tool answers in English or Chinese (core.tooling.reply_language); a caller may ask for one.
LANGUAGE = {"type": "string", "enum": list(REPLY_LANGUAGES), "description": LANGUAGE_RULE}


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {**properties, "language": LANGUAGE},
                "required": required,
            },
        },
    }


# (function name) -> (tool, action, schema)
FUNCTIONS: dict[str, tuple[str, str, dict]] = {
    "memory_add": (
        "memory",
        "add",
        _function(
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
            ["content"],
        ),
    ),
    "memory_search": (
        "memory",
        "search",
        _function(
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
            ["query"],
        ),
    ),
    "memory_update": (
        "memory",
        "update",
        _function(
            "memory_update",
            "Correct a memory by its full id.",
            {
                "memory_id": {"type": "string"},
                "content": {"type": "string"},
                "importance": {"type": "number", "minimum": 0, "maximum": 1},
            },
            ["memory_id"],
        ),
    ),
    "memory_remove": (
        "memory",
        "remove",
        _function(
            "memory_remove",
            "Delete a memory by its full id.",
            {"memory_id": {"type": "string"}},
            ["memory_id"],
        ),
    ),
    "memory_summary": (
        "memory",
        "summary",
        _function(
            "memory_summary",
            "Counts per memory type and the most important memories.",
            {"limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Default: 10."}},
            [],
        ),
    ),
    "rag_search": (
        "rag",
        "search",
        _function(
            "rag_search",
            "Search the user's knowledge base (uploaded documents).",
            {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Default: 5."},
                "namespace": {"type": "string", "description": "Default: default."},
            },
            ["query"],
        ),
    ),
    "rag_ask": (
        "rag",
        "ask",
        _function(
            "rag_ask",
            "Answer a question from the knowledge base with numbered citations.",
            {
                "question": {"type": "string"},
                "namespace": {"type": "string", "description": "Default: default."},
            },
            ["question"],
        ),
    ),
}


def openai_tools() -> list[dict]:
    return [schema for _, _, schema in FUNCTIONS.values()]
