"""The chat agent's answers when no LLM is configured, built from what the turn found and saved.

- "What do you know about me?": the profile (memories.profile), under its headings.
- A statement: what was saved, said back ("Noted, I'll remember: you live in Bergen; you prefer rooibos.").
- Anything else: the best matching memory first, as a sentence to the user when it is about them ("You work at
  Lumen Bank as a risk analyst."), then the other memories and the knowledge passages.
"""

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from knowledge.search import ChunkHit
from memories.facts import SELF
from memories.models import Memory
from memories.profile import Profile
from memories.retrieval import MemoryHit
from memories.subjects import asked_slot, second_person, subject, subjects

# The answers are worded in the active language (the agent turns in the message's, agents.agent.reply_language).
RETRIEVAL_ONLY = gettext_lazy("Retrieval-only answer (no LLM is configured):")

# A message that asks something: a question mark, or a question word or request opening one of its sentences.
QUESTION = re.compile(
    r"[?？]|(?:^|[.!。！]\s*)(?:what|where|who|whom|whose|which|when|why|how|do|does|did|is|are|can|could|would|"
    r"will|should|tell me|show me|find|search|list|remind me)\b|什么|哪|谁|吗|呢|怎么|多少|几[岁个点号天次]|是否|能不能"
    r"|告诉我",
    re.IGNORECASE,
)
# A message about its author: "I", "my", "me", "我".
FIRST_PERSON = re.compile(r"\b(?:I|my|me|mine|myself)\b|我(?!们)", re.IGNORECASE)


def profile_answer(profile: Profile, chinese: bool = False) -> str:
    if profile.empty:
        if chinese:
            return f"{RETRIEVAL_ONLY} 我对你还一无所知：告诉我一些关于你的事，我会记住。"
        return (
            f"{RETRIEVAL_ONLY} I don't know anything about you yet: tell me about yourself and I'll remember."
        )
    opening = "这是我知道的关于你的事：" if chinese else "here is what I know about you."
    return f"{RETRIEVAL_ONLY} {opening}\n{profile.as_text(chinese=chinese)}"


def told_answer(told: list[tuple[Memory, str, list[Memory]]], chinese: bool = False) -> str:
    """What a statement saved, said back: "Noted, I'll remember: you live in Porto; you prefer tea."."""
    new: list[str] = []
    known: list[str] = []
    for memory, action, replaced in told:
        said = _clause(memory.content)
        if replaced:
            before = "、".join(_clause(m.content) for m in replaced)
            said += f"（不再是：{before}）" if chinese else f" (no longer: {before})"
        (known if action in ("duplicate", "merge") else new).append(said)
    parts = []
    if chinese:
        parts += [f"记下了：{'；'.join(new)}。"] if new else []
        parts += [f"这些我已经知道：{'；'.join(known)}。"] if known else []
    else:
        parts += [f"Noted, I'll remember: {'; '.join(new)}."] if new else []
        parts += [f"I already knew: {'; '.join(known)}."] if known else []
    return f"{RETRIEVAL_ONLY} {' '.join(parts)}"


def _clause(fact: str) -> str:
    said = second_person(fact).rstrip("。.!?！？")
    return said[:1].lower() + said[1:] if said[:1].isascii() else said


def retrieval_only_answer(
    memories: list[MemoryHit],
    chunks: list[ChunkHit],
    told: list[tuple[Memory, str, list[Memory]]] | None = None,
    chinese: bool = False,
) -> str:
    """The best matching memory first, as a sentence to the user when it is about them ("You work at Acme as a
    data engineer."), then the others and the knowledge passages; what the message stated, acknowledged."""
    acknowledged = told_answer(told, chinese).removeprefix(str(RETRIEVAL_ONLY)) if told else ""
    if not memories and not chunks:
        nothing = _("nothing in your memories or knowledge base matches this yet.")
        return f"{RETRIEVAL_ONLY}{acknowledged} {nothing}"
    lines = []
    if memories:
        best = memories[0].memory
        lead = second_person(best.content) if subject(best.content) == SELF else best.content
        lines.append(f"{RETRIEVAL_ONLY}{acknowledged} {lead}")
        if len(memories) > 1:
            lines.append(_("Also in your memories:"))
            lines += [f"- {hit.memory.content}" for hit in memories[1:]]
    else:
        lines.append(f"{RETRIEVAL_ONLY}{acknowledged}")
    if chunks:
        lines.append(_("From your knowledge base:"))
        lines += [f"[{i}] {hit.source}: {hit.chunk.text[:300]}" for i, hit in enumerate(chunks, 1)]
    return "\n".join(lines)


def asks(text: str) -> bool:
    """Whether a message asks something (a question mark, a question word, a request), not only states."""
    return bool(QUESTION.search(text)) or asked_slot(text) is not None


def about_the_user_first(hits: list[MemoryHit]) -> list[MemoryHit]:
    """For a question about the user: their own memories before those about other named people, each side in
    the search's order."""
    whose = subjects([hit.memory.content for hit in hits])
    others = [hit for hit, who in zip(hits, whose, strict=True) if who not in (None, SELF)]
    return [hit for hit in hits if hit not in others] + others
