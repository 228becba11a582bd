"""The memory-enabled agent behind the chat page and /v1/chat/completions.

One turn: store the user's message → capture it in working memory (and, without an LLM, the facts it states)
→ retrieve memories and knowledge → answer (the LLM with tool calls, bounded rounds; or, with no LLM, the
retrieved passages, labelled retrieval-only) → store the answer with its tool trace, citations, tokens and
latency. `turn()` yields events as they happen so the page and the API can stream.

The model calls and tool rounds share one Budget (core.llm): LLM_TURN_SECONDS, and only while the request's client
waits. A turn whose client went away stops before its next model call, chunk or tool call, and its answer is kept
with the error saying so (`cancelled` on the result), so nothing more is asked, stored or spent for nobody.
"""

import json
import logging
import re
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils import timezone, translation
from django.utils.translation import gettext_noop

from agents.answers import (
    FIRST_PERSON,
    about_the_user_first,
    asks,
    profile_answer,
    retrieval_only_answer,
    told_answer,
)
from agents.tools import ToolCaller
from agents.toolspecs import TOOLS
from conversations.models import AgentSession, ChatMessage, ChatRole
from core import privacy
from core.disconnect import ClientGone
from core.disk import DiskFull
from core.limits import MAX_QUERY_CHARS
from core.llm import Budget, Completion, LLMError, ToolCall, get_llm
from core.models import ApiKey, PrivacySettings
from core.stored_text import Text
from knowledge.search import ChunkHit, search_chunks
from memories.actions import access, forgetting, rules, write
from memories.facts import SELF
from memories.models import CHAT_ORIGIN, EditVia, Memory, MemoryType
from memories.profile import Profile, answers_in_chinese, facts_stating, user_profile
from memories.retrieval import MemoryHit, search_memories
from memories.statements import statements
from memories.subjects import asked_slot
from memories.types import names_where

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 4
HISTORY_MESSAGES = 12
CONTEXT_MEMORIES = 5
CONTEXT_CHUNKS = 3
CONSOLIDATE_AFTER = 3  # important working memories in a session before they move to episodic memory
IMPORTANT_TURN = re.compile(r"记住|重要|别忘|remember|important|don't forget|do not forget", re.IGNORECASE)
SYSTEM_PROMPT = (
    "You are Mnemo's assistant, an agent with long-term memory and a knowledge base. Answer in the user's "
    "language. When the user states a lasting fact about themselves (name, job, preferences), save it with "
    "memory_add as a semantic memory. Use memory_search and rag_search when the context below is not enough. "
    "Cite knowledge passages as [n]."
)
CANCELLED = "cancelled: the client went away before the answer was ready"
# Stored in place of a refused message (English, with its key: the chat page shows it translated).
NOT_STORED = gettext_noop("[Not stored: %(reason)s.]")
# Asking what Mnemo knows about oneself, in English or Chinese.
ABOUT_ME = re.compile(
    r"\bwhat (?:do|did) you (?:know|remember) about me\b|\btell me (?:what you know )?about (?:me|myself)\b"
    r"|\bwho am i\b|\bwhat have you (?:learned|learnt) about me\b"
    r"|你对我(?:了解|知道)|你(?:都)?知道(?:关于)?我(?:的)?(?:什么|哪些|多少)|关于我你(?:都)?知道|你记得我(?:的)?(?:什么|哪些)|我是谁",
    re.IGNORECASE,
)


@dataclass
class TurnResult:
    message: ChatMessage
    text: str
    memories: list[MemoryHit] = field(default_factory=list)
    chunks: list[ChunkHit] = field(default_factory=list)
    saved: list[dict] = field(default_factory=list)
    cancelled: bool = False  # the client went away: the answer stopped where it was


class Agent:
    def __init__(
        self,
        *,
        user: User,
        session: AgentSession,
        api_key: ApiKey | None = None,
        request: HttpRequest | None = None,
        language: str | None = None,
    ):
        """`request`: the HTTP request the turn answers, whose client going away stops the turn. `language`:
        "en" or "zh-hans" for the answers written without a model; by default the language of each message."""
        self.user = user
        self.language = language
        self.session = session
        self.api_key = api_key
        self.request = request
        self.llm = get_llm()

    # --- the turn -----------------------------------------------------------------------------------------

    def turn(self, text: str, history: list[dict] | None = None) -> Iterator[dict]:
        """Yield {"type": "delta", "text"} while answering, then {"type": "done", "result": TurnResult}."""
        started = time.perf_counter()
        # Secrets and personal data go by the user's privacy settings before anything is stored or sent to the
        # model; a refused message is replaced by the reason, and nothing from it is captured.
        with translation.override("en"):  # the reason is stored in the message: stored text stays English
            screened = privacy.screen(text, PrivacySettings.policies_for(self.user))
        text = Text(NOT_STORED, reason=screened.refused) if screened.refused else screened.text
        user_message = ChatMessage.objects.create(session=self.session, role=ChatRole.USER, content=text)
        saved = [] if screened.refused else self._capture(text, user_message)
        # A search reads a bounded query; a long message usually ends with what it asks.
        query = text[-MAX_QUERY_CHARS:]
        chinese = self.language == "zh-hans" if self.language else answers_in_chinese(text)
        # "What do you know about me?" shares no words with the facts that answer it: the profile does.
        profile = user_profile(self.user) if ABOUT_ME.search(text) else None
        # Without a model, what a message stated is said back; a statement that asks nothing is answered by that
        # alone, with nothing looked up for it.
        told = self._told(saved) if self.llm is None else []
        statement = bool(told) and not asks(text)
        memories: list[MemoryHit] = []
        chunks: list[ChunkHit] = []
        if profile is not None:
            memories = [MemoryHit(m, m.importance) for m in profile.memories()]
        elif not statement:
            memories = self._memories(query, asked=user_message, fresh=len(saved))
            chunks = self._chunks(query)
        assistant = ChatMessage(session=self.session, role=ChatRole.ASSISTANT)
        if self.llm is None:
            # Not around the yield: the consumer of this generator runs in its own request's language.
            with translation.override("zh-hans" if chinese else "en"):
                if profile is not None:
                    answer = profile_answer(profile, chinese)
                elif statement:
                    answer = told_answer(told, chinese)
                else:
                    answer = retrieval_only_answer(memories, chunks, told, chinese)
            yield {"type": "delta", "text": answer}
        else:
            answer = yield from self._llm_answer(
                text, history, memories, chunks, assistant, user_message, saved, profile
            )
        # The stored answer holds no secret either: a model may repeat one from an earlier turn of the client's.
        assistant.content = self._screened(answer, answering=True)
        assistant.retrieved = {
            "memories": [str(hit.memory.pk) for hit in memories],
            "chunks": [str(hit.chunk.pk) for hit in chunks],
            "saved": saved,
            "asked": str(user_message.pk),  # the user's message: the source its repeats were counted with
            "privacy": screened.record(),
            "retrieval_only": self.llm is None,
        }
        if profile is not None and self.llm is None:
            # The page shows the groups under their headings, each memory linked (a model words its own answer).
            assistant.retrieved["profile"] = profile.outline(chinese)
        assistant.latency_ms = round((time.perf_counter() - started) * 1000)
        assistant.save()
        self._consolidate_if_due()
        cancelled = assistant.error == CANCELLED
        result = TurnResult(assistant, assistant.content, memories, chunks, saved, cancelled)
        yield {"type": "done", "result": result}

    def _screened(self, text: str, answering: bool = False) -> str:
        """`text` by the user's privacy settings: a refused message becomes the reason; in an answer, what the
        settings refuse is masked instead (the answer is Mnemo's own, and is stored either way)."""
        policies = PrivacySettings.policies_for(self.user)
        if answering:
            policies = {
                category: privacy.MASK if action == privacy.REFUSE else action
                for category, action in policies.items()
            }
        with translation.override("en"):  # as in turn(): the reason goes into stored text
            screened = privacy.screen(text, policies)
        return Text(NOT_STORED, reason=screened.refused) if screened.refused else screened.text

    def run(self, text: str, history: list[dict] | None = None) -> TurnResult:
        for event in self.turn(text, history):
            if event["type"] == "done":
                return event["result"]
        raise RuntimeError("the turn ended without a result")

    # --- memory capture -----------------------------------------------------------------------------------

    def _capture(self, text: str, message: ChatMessage) -> list[dict]:
        """The turn goes to working memory; the lasting facts it states (offline, when no LLM chooses), each as
        a third-person statement, to semantic memory, where repeats are counted and newer values supersede.
        Returns what each write did, for the page to show with Undo."""
        saved: list[dict] = []
        asking = text.rstrip().endswith(("?", "？"))
        # A question is context for this conversation only: never important enough to be consolidated.
        importance = 0.3 if asking else 0.8 if IMPORTANT_TURN.search(text) else 0.5
        try:
            try:
                self._keep(
                    saved,
                    text[:4000],
                    MemoryType.WORKING,
                    importance,
                    message,
                    metadata={"origin": CHAT_ORIGIN},
                )
            except rules.MemoryRequestError as exc:
                logger.info("turn not kept in working memory: %s", exc)
            if self.llm is None:
                for statement in statements(text):
                    self._keep(saved, statement, MemoryType.SEMANTIC, 0.8, message)
        except DiskFull as exc:  # the conversation goes on; nothing more is stored until there is room
            logger.warning("turn not kept in memory: %s", exc)
        return saved

    def _keep(
        self,
        saved: list[dict],
        content: str,
        memory_type: str,
        importance: float,
        message,
        metadata: dict | None = None,
    ) -> None:
        written = write.memory_write(
            user=self.user,
            content=content,
            memory_type=memory_type,
            importance=importance,
            metadata=metadata,
            session=self.session,
            source_message=message,
            via=self._via,
            api_key=self.api_key,
        )
        saved.append(capture_record(written.memory.pk, written.action, [m.pk for m in written.superseded]))

    def _told(self, saved: list[dict]) -> list[tuple[Memory, str, list[Memory]]]:
        """The facts this turn stated, as saved: (memory, what the write did, the facts it replaced). The
        working-memory copy of the message is no fact."""
        ids = [item["id"] for item in saved] + [pk for item in saved for pk in item["superseded"]]
        found = Memory.objects.filter(user=self.user, memory_type=MemoryType.SEMANTIC).in_bulk(ids)
        rows = {str(pk): memory for pk, memory in found.items()}
        return [
            (rows[item["id"]], item["action"], [rows[pk] for pk in item["superseded"] if pk in rows])
            for item in saved
            if item["id"] in rows
        ]

    @property
    def _via(self) -> str:
        # Only the OpenAI-compatible endpoint runs the agent with a key; the chat page runs it as its user.
        return EditVia.OPENAI if self.api_key else EditVia.CHAT

    def _consolidate_if_due(self) -> None:
        important = Memory.objects.filter(
            user=self.user,
            session=self.session,
            memory_type=MemoryType.WORKING,
            importance__gte=0.7,
            archived_at=None,
        ).count()
        if important >= CONSOLIDATE_AFTER:
            forgetting.memories_consolidate(user=self.user, session=self.session, importance_threshold=0.7)

    # --- retrieval ----------------------------------------------------------------------------------------

    def _memories(self, text: str, *, asked: ChatMessage, fresh: int = 0) -> list[MemoryHit]:
        """Memories that answer the message, never those the message itself just created: the facts a turn
        states are stored before retrieval, and a search for the message finds them first."""
        result = search_memories(
            user=self.user,
            query=text,
            limit=CONTEXT_MEMORIES + fresh,  # room for the turn's own memories, which are dropped below
            memory_types=names_where(lambda policy: policy.ttl is None),  # working memory is the prompt's own
            min_importance=0.1,
            require_match=True,  # only memories above the search's relevance floor go into an answer
        )
        # What is related enough is the search's to say (its floors, core.ranking), not a second threshold here.
        found = [hit for hit in result.hits if hit.memory.source_message_id != asked.pk]
        # The facts stating what the question asks ("Where do I work?": the user's employer) lead, found or not:
        # the search ranks by words and meaning, and Marco's employer matches "work" as well as the user's.
        slot = asked_slot(text)
        stated = [] if slot is None else facts_stating(self.user, *slot)
        stated = [memory for memory in stated if memory.source_message_id != asked.pk]
        lead = [MemoryHit(memory, 1.0, {"stated": 1.0}) for memory in stated]
        rest = [hit for hit in found if hit.memory.pk not in {memory.pk for memory in stated}]
        if (slot is not None and slot[0] == SELF) or FIRST_PERSON.search(text):
            rest = about_the_user_first(rest)
        hits = (lead + rest)[:CONTEXT_MEMORIES]
        access.record_access(
            user=self.user,
            memories=[(hit.memory, hit.score) for hit in hits],
            query=text,
            via=self._via,
            api_key=self.api_key,
            session=self.session,
        )
        return hits

    def _chunks(self, text: str) -> list[ChunkHit]:
        from knowledge.models import Document

        namespaces = sorted(set(Document.objects.filter(user=self.user).values_list("namespace", flat=True)))
        if not namespaces:
            return []
        return search_chunks(user=self.user, query=text, namespaces=namespaces, limit=CONTEXT_CHUNKS).hits

    # --- the LLM loop -------------------------------------------------------------------------------------

    def _llm_answer(
        self, text, history, memories, chunks, assistant, user_message, saved, profile
    ) -> Generator[dict, None, str]:
        assert self.llm is not None  # only the model's answer comes through here
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._system_prompt(memories, chunks, profile)}
        ]
        if history is not None:  # the client's earlier turns reach the model as screened as this one
            history = [
                {**message, "content": self._screened(message["content"])}
                if isinstance(message.get("content"), str)
                else message
                for message in history
            ]
        messages += history if history is not None else self._history(user_message)
        messages.append({"role": "user", "content": text})
        trace: list[dict] = []
        answer = ""
        budget = Budget.for_request(self.request)
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            offer_tools = round_number < MAX_TOOL_ROUNDS  # the last round must answer in words
            try:
                stream = self.llm.stream(
                    messages, tools=TOOLS.openai_tools() if offer_tools else None, budget=budget
                )
                completion = yield from _relay(stream)
            except ClientGone:
                assistant.error = CANCELLED
                break
            except LLMError as exc:
                assistant.error = str(exc)
                answer = f"⚠️ The language model failed: {exc}"
                yield {"type": "delta", "text": answer}
                break
            assistant.prompt_tokens += completion.prompt_tokens
            assistant.completion_tokens += completion.completion_tokens
            if not completion.tool_calls:
                answer = completion.text
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": completion.text or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in completion.tool_calls
                    ],
                }
            )
            try:
                for call in completion.tool_calls:
                    if budget.gone():  # nobody waits for what the tool would find or store
                        raise ClientGone
                    outcome = self._call_tool(call, user_message, saved, budget)
                    trace.append(outcome)
                    yield {"type": "tool", "call": outcome}
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome["result"]})
            except ClientGone:
                assistant.error = CANCELLED
                break
        assistant.tool_calls = trace
        return answer

    def _call_tool(
        self, call: ToolCall, user_message: ChatMessage, saved: list[dict], budget: Budget
    ) -> dict:
        outcome: dict[str, Any] = {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "ok": False,
            "result": "",
        }
        if call.name not in TOOLS:
            outcome["result"] = f"error: no tool named {call.name!r}; available: {', '.join(TOOLS.names())}"
            return outcome
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
        except (json.JSONDecodeError, ValueError) as exc:
            outcome["result"] = (
                f"error: the arguments were not a valid JSON object ({exc}); call the tool again"
            )
            return outcome
        caller = ToolCaller(self.user, self.api_key, self._via, self.session.key, budget)
        try:
            reply = TOOLS.call(call.name, caller, arguments)
        except ClientGone:
            raise
        except Exception as exc:  # a failing tool is reported to the model and the user, never a 500
            logger.exception("tool %s failed", call.name)
            outcome["result"] = f"error: the tool failed ({exc.__class__.__name__}: {exc})"
            return outcome
        outcome["ok"], outcome["result"] = reply.ok, reply.text
        if call.name == "memory_add" and reply.ok:  # what the turn saved, for the page's Undo
            memory_id = reply.data["id"]
            if reply.data["action"] in ("add", "supersede"):
                Memory.objects.filter(pk=memory_id).update(source_message=user_message)
            saved.append(capture_record(memory_id, reply.data["action"], reply.data["superseded"]))
        return outcome

    def _history(self, current: ChatMessage) -> list[dict]:
        earlier = (
            ChatMessage.objects.filter(session=self.session, role__in=[ChatRole.USER, ChatRole.ASSISTANT])
            .exclude(pk=current.pk)
            .order_by("-created_at")[:HISTORY_MESSAGES]
        )
        return [{"role": m.role, "content": m.content} for m in reversed(earlier) if m.content]

    def _system_prompt(
        self, memories: list[MemoryHit], chunks: list[ChunkHit], profile: Profile | None = None
    ) -> str:
        parts = [SYSTEM_PROMPT, f"Today is {timezone.now():%Y-%m-%d}. User: {self.user.get_username()}."]
        working = Memory.objects.filter(
            user=self.user, session=self.session, memory_type=MemoryType.WORKING, archived_at=None
        ).order_by("-created_at")[:10]
        if working:
            parts.append(
                "Working memory (this conversation):\n"
                + "\n".join(f"- {m.content}" for m in reversed(working))
            )
        if profile is not None:
            parts.append(
                "What you know about the user (answer with these groups and headings; a conflict is for the "
                f"user to resolve, not for you to pick):\n{profile.as_text('(nothing yet)')}"
            )
        elif memories:
            parts.append(
                "Relevant memories:\n"
                + "\n".join(f"- ({hit.memory.memory_type}) {hit.memory.content}" for hit in memories)
            )
        if chunks:
            parts.append(
                "Knowledge passages:\n"
                + "\n".join(f"[{i}] {hit.source}: {hit.chunk.text[:800]}" for i, hit in enumerate(chunks, 1))
            )
        return "\n\n".join(parts)


def _relay(stream) -> Generator[dict, None, Completion]:
    """Pass the LLM's text deltas on as events and return the finished completion."""
    while True:
        try:
            delta = next(stream)
        except StopIteration as finished:
            return finished.value
        yield {"type": "delta", "text": delta}


def capture_record(memory_id, action: str, superseded) -> dict:
    """What one write of a turn did, kept on the answer (retrieved["saved"]) for the page and for Undo."""
    return {"id": str(memory_id), "action": action, "superseded": [str(pk) for pk in superseded]}


def saved_records(message: ChatMessage) -> list[dict]:
    """The answer's capture records; answers from before curation kept only the ids of memories they added."""
    saved = message.retrieved.get("saved", []) if isinstance(message.retrieved, dict) else []
    return [capture_record(item, "add", []) if isinstance(item, str) else item for item in saved]


def undo_saved(*, user: User, message: ChatMessage, memory_id: str) -> bool:
    """Undo what this chat turn did to a memory (only its own writes: the message records them): a new memory
    is deleted and what it superseded is current again; a repeat is uncounted."""
    record = next((item for item in saved_records(message) if item["id"] == memory_id), None)
    if record is None:
        return False
    return write.memory_write_undo(
        user=user,
        memory_id=memory_id,
        action=record["action"],
        superseded=record["superseded"],
        source_message_id=message.retrieved.get("asked"),
    )


def session_end(*, user: User, session: AgentSession) -> int:
    """Close a session: its important working memories become episodic memories."""
    session.ended_at = timezone.now()
    session.save(update_fields=["ended_at"])
    return len(forgetting.memories_consolidate(user=user, session=session, importance_threshold=0.7))
