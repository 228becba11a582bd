"""The model's side of curation (memories.curation, with an LLM configured): mem0's update phase. The model sees
the new fact and the current facts it might repeat or contradict, numbered so that no id can be invented, and
answers add / update / supersede / ignore as JSON, validated here before anything is trusted."""

import json
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from core.limits import MAX_CONTENT_CHARS
from core.llm import LLMClient

DECISION_PROMPT = (
    "You keep a user's long-term memory clean. You get the user's current memories, numbered, and one new "
    "memory. Decide what to do with the new memory and reply with JSON only: "
    '{"decision": "add" | "update" | "supersede" | "ignore", "targets": [numbers], "text": "...", '
    '"reason": "one short sentence"}. '
    "add: it is new information (keep both). "
    "ignore: it says nothing the target does not already say (same fact, maybe other words or language). "
    "update: it is the same fact as the target with more detail; text is the one merged memory, in the "
    "target's language. "
    "supersede: it replaces the targets because the facts changed (a new employer, home, name, preference, "
    "relationship...); the targets stay as history. "
    "targets: the numbers of the memories concerned (none for add)."
)


class _ModelDecision(BaseModel):
    decision: str = Field(pattern="^(add|update|supersede|ignore)$")
    targets: list[int] = Field(default_factory=list, max_length=20)
    text: str | None = Field(None, max_length=MAX_CONTENT_CHARS)
    reason: str = Field("", max_length=1000)


class _Stated(Protocol):
    content: str


def ask_model[M: _Stated](llm: LLMClient, new: str, shown: Sequence[M]) -> tuple[_ModelDecision, list[M]]:
    """The model's choice for the new text against the memories `shown`, and the ones it targets.
    Raises ValueError (or pydantic's ValidationError, a ValueError) on a reply that is not a valid decision."""
    listing = "\n".join(f"{i}. {item.content}" for i, item in enumerate(shown))
    reply = llm.ask(DECISION_PROMPT, f"Current memories:\n{listing}\n\nNew memory: {new}", temperature=0.0)
    payload = reply.strip()
    if payload.startswith("```"):
        payload = payload.strip("`").removeprefix("json").strip()
    choice = _ModelDecision.model_validate(json.loads(payload))
    return choice, [shown[i] for i in dict.fromkeys(choice.targets) if 0 <= i < len(shown)]
