"""The chat pages: the sessions list, one session's conversation, and its answers streamed as Server-Sent Events.

Every query starts from request.user; the turn itself runs in agents.agent, which stores both messages. The page
works without JavaScript: the form POSTs to chat_send, which runs the whole turn and redirects back. With
static/js/chat.js the same form is posted to chat_stream instead, whose `text/event-stream` body carries the
answer as it is generated (`delta`), each tool call (`tool`), and finally the finished message rendered by the
same partial the page uses (`done`), so a streamed answer and a reloaded one look the same.
"""

import json
import logging
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext
from django.views.decorators.http import require_GET, require_POST

from agents.agent import Agent, saved_records, session_end, undo_saved
from agents.forms import MessageForm
from conversations.models import AgentSession, ChatMessage, ChatRole
from core.pages import AuthenticatedHttpRequest
from knowledge.models import Chunk
from knowledge.views import chunk_url
from memories.actions.rules import session_for_key
from memories.models import Memory

logger = logging.getLogger(__name__)

SESSIONS_PER_PAGE = 50
SIDEBAR_SESSIONS = 15
MESSAGES_SHOWN = 200
SESSION_TEMPLATE = "agents/chat_session.html"
UNEXPECTED_FAILURE = gettext_noop(
    "The answer failed unexpectedly. Your message was kept; reload the page and try again."
)
_CITATION = re.compile(r"\[(\d{1,3})\]")


# --- sessions ------------------------------------------------------------------------------------------------


def _sessions(user) -> QuerySet[AgentSession]:
    """The user's sessions, newest first, each with its first user message and its number of messages."""
    first = (
        ChatMessage.objects.filter(session=OuterRef("pk"), role=ChatRole.USER)
        .order_by("created_at")
        .values("content")[:1]
    )
    return (
        AgentSession.objects.for_user(user)
        .annotate(first_message=Subquery(first), message_count=Count("messages"))
        .order_by("-started_at", "key")
    )


def _labelled(sessions: Iterable[AgentSession]) -> list[AgentSession]:
    """A session's name on the page: a title of its own, else its first message, else its key."""
    sessions = list(sessions)
    for session in sessions:
        own_title = session.title if session.title != session.key else ""
        # The label is for this page only, so it rides on the session to the template, not on the model.
        cast(Any, session).label = own_title or getattr(session, "first_message", None) or session.key
    return sessions


def _session(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> AgentSession:
    return get_object_or_404(AgentSession.objects.for_user(request.user), pk=pk)


def _session_url(session: AgentSession, message: ChatMessage | None = None) -> str:
    url = reverse("chat_session", args=[session.pk])
    return f"{url}#message-{message.pk}" if message else url


@login_required
@require_GET
def chat(request: AuthenticatedHttpRequest) -> HttpResponse:
    page = Paginator(_sessions(request.user), SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "sessions": _labelled(page),
        "llm_configured": bool(settings.LLM_BASE_URL),
    }
    return render(request, "agents/chat.html", context)


@login_required
@require_POST
def chat_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    # Microseconds keep two quick clicks from landing in the same session.
    session = session_for_key(user=request.user, key=f"chat-{timezone.now():%Y%m%d-%H%M%S-%f}")
    return redirect("chat_session", pk=session.pk)


# --- one session -------------------------------------------------------------------------------------------


@dataclass
class CitedChunk:
    n: int
    chunk: Chunk | None  # None when the passage has since been deleted
    url: str = ""


@dataclass
class SavedItem:
    memory_id: str
    memory: Memory | None  # None once undone (or expired from working memory)
    undone: bool = False  # just undone by this request
    action: str = "add"  # what the turn's write did (memories.curation)
    superseded: list[Memory] = field(default_factory=list)  # the facts it replaced


def _uuids(values: Iterable[str]) -> set[uuid.UUID]:
    ids = set()
    for value in values:
        try:
            ids.add(uuid.UUID(str(value)))
        except ValueError:
            continue
    return ids


def _answer_html(message: ChatMessage, passages: int) -> SafeString:
    """The answer escaped, with each [n] of a cited passage made a link to it."""

    def link(match: re.Match) -> str:
        n = int(match.group(1))
        return f'<a href="#c-{message.pk}-{n}">[{n}]</a>' if 1 <= n <= passages else match.group(0)

    return mark_safe(_CITATION.sub(link, escape(message.content)))  # noqa: S308 - escaped first


def _profile_outline(outline: object) -> list[dict]:
    """The profile an answer showed (memories.profile.Profile.outline), as stored; anything else is none."""
    if not isinstance(outline, list):
        return []
    return [
        section
        for section in outline
        if isinstance(section, dict)
        and isinstance(section.get("label"), str)
        and isinstance(section.get("items"), list)
    ]


def _trace(calls: object) -> list[dict]:
    """The stored tool calls with their arguments pretty-printed when they are JSON."""
    trace = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        arguments = str(call.get("arguments") or "")
        try:
            arguments = json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
        except ValueError:
            pass  # malformed JSON from the model: shown as it was written
        trace.append(
            {
                "name": str(call.get("name") or "?"),
                "ok": call.get("ok") is True,
                "arguments": arguments,
                "result": str(call.get("result") or ""),
            }
        )
    return trace


def _cite(user, chat_messages: list[ChatMessage]) -> list[ChatMessage]:
    """Attach each assistant message's citations, saved memories and trace: two queries for the whole page."""
    answers = [m for m in chat_messages if m.role == ChatRole.ASSISTANT]
    memory_ids: set[uuid.UUID] = set()
    chunk_ids: set[uuid.UUID] = set()
    for message in answers:
        retrieved = message.retrieved if isinstance(message.retrieved, dict) else {}
        saved = saved_records(message)
        memory_ids |= _uuids(retrieved.get("memories", [])) | _uuids(item["id"] for item in saved)
        memory_ids |= _uuids(pk for item in saved for pk in item["superseded"])
        chunk_ids |= _uuids(retrieved.get("chunks", []))
    memories = {str(pk): m for pk, m in Memory.objects.for_user(user).in_bulk(memory_ids).items()}
    chunks = {
        str(pk): c
        for pk, c in Chunk.objects.for_user(user).select_related("document").in_bulk(chunk_ids).items()
    }
    # What follows is for this page only, so it rides on each message to the template, not on the model.
    shown: list[Any] = answers
    for message in shown:
        retrieved = message.retrieved if isinstance(message.retrieved, dict) else {}
        message.retrieval_only = bool(retrieved.get("retrieval_only"))
        message.cited_memories = [
            (str(memory_id), memories.get(str(memory_id))) for memory_id in retrieved.get("memories", [])
        ]
        message.cited_chunks = []
        for n, chunk_id in enumerate(retrieved.get("chunks", []), 1):
            chunk = chunks.get(str(chunk_id))
            url = chunk_url(chunk.pk, chunk.document_id, chunk.ordinal) if chunk else ""
            message.cited_chunks.append(CitedChunk(n, chunk, url))
        message.saved_items = [
            SavedItem(
                item["id"],
                memories.get(item["id"]),
                action=item["action"],
                superseded=[memories[pk] for pk in item["superseded"] if pk in memories],
            )
            for item in saved_records(message)
        ]
        message.trace = _trace(message.tool_calls)
        message.profile = _profile_outline(retrieved.get("profile"))
        if message.profile:
            # "What do you know about me?": the groups under their headings replace the flat list of memories.
            message.cited_memories = []
        if message.retrieval_only and (message.cited_memories or message.cited_chunks or message.profile):
            # The stored answer lists every memory and passage (what API clients read); the page lists them
            # once, below, with their links and excerpts, so the bubble keeps only its first line.
            message.answer_html = escape(message.content.split("\n", 1)[0])
        else:
            message.answer_html = _answer_html(message, len(message.cited_chunks))
    return chat_messages


def _session_context(request: AuthenticatedHttpRequest, session: AgentSession, form: MessageForm) -> dict:
    newest_first = list(
        session.messages.filter(role__in=[ChatRole.USER, ChatRole.ASSISTANT]).order_by("-created_at")[
            : MESSAGES_SHOWN + 1
        ]
    )
    shown = newest_first[:MESSAGES_SHOWN][::-1]
    return {
        "session": session,
        "chat_messages": _cite(request.user, shown),
        "truncated": len(newest_first) > MESSAGES_SHOWN,
        "messages_shown": MESSAGES_SHOWN,
        "sessions": _labelled(_sessions(request.user)[:SIDEBAR_SESSIONS]),
        "form": form,
        "llm_configured": bool(settings.LLM_BASE_URL),
    }


@login_required
@require_GET
def chat_session(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    session = _labelled([get_object_or_404(_sessions(request.user), pk=pk)])[0]
    return render(request, SESSION_TEMPLATE, _session_context(request, session, MessageForm()))


# --- a turn --------------------------------------------------------------------------------------------------


@login_required
@require_POST
def chat_send(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Without JavaScript: run the whole turn, then show the session at the new answer."""
    session = _session(request, pk)
    if session.ended_at:
        messages.error(request, _("This session has ended: start a new chat to go on."))
        return redirect(_session_url(session))
    form = MessageForm(request.POST)
    if not form.is_valid():
        session = _labelled([get_object_or_404(_sessions(request.user), pk=pk)])[0]
        return render(request, SESSION_TEMPLATE, _session_context(request, session, form), status=422)
    try:
        result = Agent(user=request.user, session=session, request=request).run(form.cleaned_data["text"])
    except Exception:  # provider failures are answers already; anything else must not become a 500 page
        logger.exception("chat turn failed in session %s", session.pk)
        messages.error(request, _(UNEXPECTED_FAILURE))
        return redirect(_session_url(session))
    return redirect(_session_url(session, result.message))


def _event(name: str, payload: dict) -> str:
    # JSON keeps newlines in the model's text out of the SSE framing (a data line ends at a newline).
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _turn_events(request: AuthenticatedHttpRequest, agent: Agent, text: str) -> Iterator[str]:
    # A comment line first, so the browser gets the response head while retrieval runs.
    yield ": answering\n\n"
    try:
        for event in agent.turn(text):
            if event["type"] == "delta" and event["text"]:
                yield _event("delta", {"text": event["text"]})
            elif event["type"] == "tool":
                call = event["call"]
                yield _event("tool", {"name": call["name"], "ok": call["ok"]})
            elif event["type"] == "done":
                message = event["result"].message
                html = render_to_string(
                    f"{SESSION_TEMPLATE}#assistant-message",
                    {"message": _cite(request.user, [message])[0]},
                    request=request,
                )
                yield _event("done", {"id": str(message.pk), "html": html.strip()})
    except Exception:  # the response has started, so a failure can only be reported inside the stream
        logger.exception("chat turn failed in session %s", agent.session.pk)
        yield _event("error", {"message": _(UNEXPECTED_FAILURE)})


@login_required
@require_POST
def chat_stream(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponseBase:
    """With chat.js: the same form, answered as Server-Sent Events (delta…, tool…, done)."""
    session = _session(request, pk)
    if session.ended_at:
        return HttpResponse(
            "This session has ended: start a new chat to go on.",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    form = MessageForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            " ".join(map(str, form.errors["text"])), status=422, content_type="text/plain; charset=utf-8"
        )
    agent = Agent(user=request.user, session=session, request=request)
    response = StreamingHttpResponse(
        _turn_events(request, agent, form.cleaned_data["text"]),
        content_type="text/event-stream; charset=utf-8",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the answer back until it ends
    return response


# --- after a turn ------------------------------------------------------------------------------------------


@login_required
@require_POST
def chat_undo(
    request: AuthenticatedHttpRequest, pk: uuid.UUID, message_pk: uuid.UUID, memory_pk: uuid.UUID
) -> HttpResponse:
    """Delete a memory that this answer's turn saved; only those (the message records them) can be undone."""
    session = _session(request, pk)
    message = get_object_or_404(
        ChatMessage.objects.filter(session=session, role=ChatRole.ASSISTANT), pk=message_pk
    )
    memory_id = str(memory_pk)
    record = next((item for item in saved_records(message) if item["id"] == memory_id), None)
    if record is None:
        raise Http404("This turn did not save that memory.")
    undone = undo_saved(user=request.user, message=message, memory_id=memory_id)
    if request.htmx:
        item = SavedItem(memory_id, None, undone=True, action=record["action"])
        return render(request, f"{SESSION_TEMPLATE}#saved-item", {"message": message, "item": item})
    messages.success(request, _("Undone.") if undone else _("There was nothing left to undo."))
    return redirect(_session_url(session, message))


@login_required
@require_POST
def chat_end(request: AuthenticatedHttpRequest, pk: uuid.UUID) -> HttpResponse:
    session = _session(request, pk)
    if session.ended_at:
        messages.info(request, _("This session had already ended."))
        return redirect(_session_url(session))
    consolidated = session_end(user=request.user, session=session)
    ended = ngettext(
        "Session ended: %(count)d important working memory consolidated into episodic memory.",
        "Session ended: %(count)d important working memories consolidated into episodic memory.",
        consolidated,
    )
    messages.success(request, ended % {"count": consolidated})
    return redirect(_session_url(session))
