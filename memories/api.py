"""Memories, sessions and the memory tool over the JSON API. Every query starts from the key's owner."""

from typing import Any, Literal, cast
from uuid import UUID

from django.conf import settings
from django.db.models import Count, Q
from django.http import FileResponse, HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from ninja import File, Form, Query, Router, Status, UploadedFile
from ninja.errors import HttpError
from ninja.pagination import paginate
from ninja.security import django_auth

from conversations.models import AgentSession
from core.acting import USER_PARAM, api_subject
from core.auth import API_AUTH, WRITE_AUTH, ApiRequest, require_write
from core.models import ApiKey
from core.pagination import BoundedLimitOffset
from core.tooling import ToolOut, ToolRefusalOut
from memories import cleaning
from memories.actions.access import record_access
from memories.actions.edit import memory_archive, memory_reinstate, memory_update
from memories.actions.forgetting import memories_consolidate, memories_delete, memories_forget
from memories.actions.rules import PERCEPTUAL_MODALITIES, session_for_key
from memories.actions.write import NewMemory, Written, memory_bulk_create, memory_create, memory_write
from memories.graph.api import router as graph_router
from memories.models import EditVia, Memory, Proposal
from memories.profile import user_profile
from memories.retrieval import search_memories
from memories.schemas import (
    BulkIn,
    BulkOut,
    ConsolidateIn,
    ConsolidateOut,
    DedupeIn,
    DedupeOut,
    Description,
    ForgetIn,
    ForgetOut,
    MemoryFilter,
    MemoryIn,
    MemoryOut,
    MemoryPatch,
    MemoryToolIn,
    Name,
    ProfileOut,
    ProposalOut,
    ProposalStatus,
    ScoredMemoryOut,
    SearchIn,
    SearchOut,
    SessionDetailOut,
    SessionOut,
    WrittenMemoryOut,
)
from memories.tools import MemoryTool
from memories.types import PERCEPTUAL

# The app's one router, mounted at the API's root: operations tagged otherwise (sessions, the memory tool, the
# profile) say so themselves, and the graph package's operations join under their own tag.
router = Router(tags=["memories"])
router.add_router("/", graph_router, tags=["graph"])


def _owner(request: HttpRequest):
    return cast(ApiRequest, request).auth.user


def _reader(request: HttpRequest, user_id: int | None):
    """Whose data a read is about: the key's owner, or for a staff key the user `user` names (core.acting)."""
    return api_subject(_owner(request), user_id)


def _session(request: HttpRequest, key: str | None, *, create: bool) -> AgentSession | None:
    if not key:
        return None
    if create:
        return session_for_key(user=_owner(request), key=key)
    return get_object_or_404(AgentSession, user=_owner(request), key=key)


def _written(written: Written) -> dict[str, Any]:
    return {
        "action": written.action,
        "reason": written.reason,
        "superseded": [m.pk for m in written.superseded],
    }


@router.post(
    "/memories/",
    response={201: WrittenMemoryOut, 200: WrittenMemoryOut},
    summary="Add a memory",
    auth=WRITE_AUTH,
)
def create_memory(request: HttpRequest, payload: MemoryIn):
    """Searchable as soon as this returns. `created_at` keeps an imported memory's date.

    Checked against your current memories first: 201 when a memory was stored (`write.action` `add`, or
    `supersede` when it replaces older facts, listed in `write.superseded`); 200 with the existing memory when
    it repeats one (`duplicate`: the same text; `merge`: the same fact in other words), which counts the repeat.
    """
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    data = payload.dict()
    session = _session(request, data.pop("session_id"), create=True)
    written = memory_write(user=_owner(request), session=session, via=EditVia.API, api_key=api_key, **data)
    cast(Any, written.memory).write = _written(
        written
    )  # an annotation for WrittenMemoryOut, as a queryset's would be
    return Status(201 if written.stored else 200, written.memory)


@router.post(
    "/memories/bulk", response={201: BulkOut}, summary="Add up to 1,000 memories in one call", auth=WRITE_AUTH
)
def bulk_create_memories(request: HttpRequest, payload: BulkIn):
    """All or nothing: an invalid item fails the whole call and names its position. Each item is checked as a
    single add is, also against the items before it."""
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    items = [
        NewMemory(
            content=item.content,
            memory_type=item.memory_type,
            importance=item.importance,
            session_key=item.session_id,
            metadata=item.metadata,
            created_at=item.created_at,
            context=item.context,
            outcome=item.outcome,
            participants=item.participants,
            tags=item.tags,
        )
        for item in payload.items
    ]
    written = memory_bulk_create(user=_owner(request), items=items, via=EditVia.API, api_key=api_key)
    return Status(201, {"ids": [w.memory.pk for w in written], "actions": [w.action for w in written]})


PERCEPTUAL_MODALITIES = PERCEPTUAL_MODALITIES


@router.post(
    "/memories/perceptual",
    response={201: MemoryOut},
    summary="Add a perceptual memory with its file",
    auth=WRITE_AUTH,
)
def create_perceptual_memory(
    request: HttpRequest,
    file: File[UploadedFile],
    content: Description = Form(""),  # noqa: B008 (ninja's idiom: the call declares a form field)
    importance: float = Form(0.5, ge=0.0, le=1.0),
    session_id: Name = Form(""),  # noqa: B008
):
    """Multipart upload: the file is kept with the memory and `content` (a description) is what search matches;
    without a description the file name is used. Only the text is embedded: no image or audio model runs here."""
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    limit = settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024
    assert file.size is not None  # Django's upload handlers always count it
    if file.size == 0:
        raise HttpError(422, _("the file is empty"))
    if file.size > limit:
        raise HttpError(
            413,
            _("the file is larger than MNEMO_MAX_UPLOAD_MB=%(mnemo_max_upload_mb)s MB")
            % {"mnemo_max_upload_mb": settings.MNEMO_MAX_UPLOAD_MB},
        )
    content_type = file.content_type or ""
    modality = next(
        (name for name, prefix in PERCEPTUAL_MODALITIES.items() if content_type.startswith(prefix)), "text"
    )
    memory = memory_create(
        user=_owner(request),
        content=content.strip() or f"[{modality}] {file.name}",
        memory_type=PERCEPTUAL.name,
        importance=importance,
        session=_session(request, session_id, create=True),
        metadata={"filename": file.name, "content_type": content_type, "size": file.size},
        modality=modality,
        file=file,
        via=EditVia.API,
        api_key=api_key,
    )
    return Status(201, memory)


@router.get(
    "/memories/{uuid:memory_id}/file",
    auth=[*API_AUTH, django_auth],
    summary="Download a perceptual memory's file",
)
def get_memory_file(request: HttpRequest, memory_id: UUID):
    """With an API key, or from the owner's logged-in browser session (a link on a page works)."""
    owner = request.auth.user if hasattr(request.auth, "user") else request.auth  # type: ignore[attr-defined]  # an ApiKey, or django_auth's User
    memory = get_object_or_404(Memory, pk=memory_id, user=owner)
    if not memory.file:
        raise HttpError(404, _("this memory has no file"))
    assert memory.file.name  # a FieldFile is true when it has a name
    return FileResponse(
        memory.file.open("rb"),
        as_attachment=True,
        filename=memory.metadata.get("filename") or memory.file.name.rsplit("/", 1)[-1],
    )


@router.get("/memories/", response=list[MemoryOut], summary="List memories")
@paginate(BoundedLimitOffset)
def list_memories(request: HttpRequest, filters: Query[MemoryFilter]):
    memories = Memory.objects.for_user(_reader(request, filters.user)).listed(archived=bool(filters.archived))
    return memories.select_related("session", "origin_key").filtered(
        memory_types=[filters.memory_type] if filters.memory_type else None,
        session_key=filters.session_id,
        min_importance=filters.min_importance,
        max_importance=filters.max_importance,
        since=filters.since,
        until=filters.until,
        superseded=filters.superseded,
        contains=filters.q,
        tag=filters.tag,
        origin=filters.origin,
        origin_key=filters.origin_key,
    )


def _memory(request: HttpRequest, memory_id: UUID, user_id: int | None = None) -> Memory:
    owner = _reader(request, user_id)
    return get_object_or_404(Memory.objects.select_related("session", "origin_key"), pk=memory_id, user=owner)


@router.get("/memories/{uuid:memory_id}", response=MemoryOut, summary="Get a memory")
def get_memory(request: HttpRequest, memory_id: UUID, user: int | None = Query(None, description=USER_PARAM)):
    return _memory(request, memory_id, user)


@router.patch(
    "/memories/{uuid:memory_id}",
    response=MemoryOut,
    summary="Change a memory (the edit is recorded)",
    auth=WRITE_AUTH,
)
def update_memory(request: HttpRequest, memory_id: UUID, payload: MemoryPatch):
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    memory = _memory(request, memory_id)
    changes = payload.dict(exclude_unset=True)
    archived = changes.pop("archived", None)
    changes = {field: value for field, value in changes.items() if value is not None}
    if changes:
        memory = memory_update(memory=memory, via=EditVia.API, api_key=api_key, **changes)
    if archived is not None:
        memory = memory_archive(memory=memory, via=EditVia.API, api_key=api_key, archived=archived)
    return _memory(request, memory_id)


@router.post(
    "/memories/{uuid:memory_id}/reinstate",
    response=MemoryOut,
    summary="Make a superseded fact current again",
    auth=WRITE_AUTH,
)
def reinstate_memory(request: HttpRequest, memory_id: UUID):
    """The fact that replaced it stays current too; the restore is recorded in the memory's history."""
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    memory = _memory(request, memory_id)
    if memory.superseded_by_id is None:
        raise HttpError(409, _("this memory is current: nothing replaced it"))
    memory_reinstate(memory=memory, via=EditVia.API, api_key=api_key)
    return _memory(request, memory_id)


@router.delete("/memories/{uuid:memory_id}", response={204: None}, summary="Delete a memory", auth=WRITE_AUTH)
def delete_memory(request: HttpRequest, memory_id: UUID):
    memory = _memory(request, memory_id)
    memories_delete(user=_owner(request), memory_ids=[memory.pk])
    return Status(204, None)


@router.post("/memories/search", response=SearchOut, summary="Hybrid search over all requested memory types")
def search(request: HttpRequest, payload: SearchIn):
    """Dense + lexical fused, then recency, importance (0.8 + 0.4 × importance) and working-memory decay.
    Each result carries its score parts."""
    user = _reader(request, payload.user)
    session = (
        get_object_or_404(AgentSession, user=user, key=payload.session_id) if payload.session_id else None
    )
    result = search_memories(
        user=user,
        query=payload.query,
        limit=payload.limit,
        memory_types=payload.memory_types,
        min_importance=payload.min_importance,
        session=session,
        time_range=payload.time_range,
        include_superseded=payload.include_superseded,
        include_chat_copies=payload.include_chat_copies,
        tag=payload.tag,
    )
    if user == _owner(request):  # an operator reading someone's memories does not use them
        record_access(
            user=user,
            memories=[(hit.memory, hit.score) for hit in result.hits],
            query=payload.query,
            via=EditVia.API,
            api_key=cast(ApiRequest, request).auth,
            session=session,
        )
    results = [
        ScoredMemoryOut(
            id=hit.memory.pk,
            content=hit.memory.content,
            memory_type=hit.memory.memory_type,
            importance=hit.memory.importance,
            created_at=hit.memory.created_at,
            session_id=hit.memory.session.key if hit.memory.session else None,
            superseded_by=hit.memory.superseded_by_id,
            score=hit.score,
            scores=hit.scores,
        )
        for hit in result.hits
    ]
    return {"results": results, "notice": result.notice}


@router.post("/memories/dedupe", response=DedupeOut, summary="Find duplicate and outdated memories to review")
def dedupe(request: HttpRequest, payload: DedupeIn):
    """Proposes merges (repeats) and supersedes (newer values of a fact) over your current memories, as the
    write path would have decided. A dry run lists them; otherwise they wait in the review queue (GET
    /memories/proposals) until approved or rejected. Nothing changes before that."""
    if not payload.dry_run:
        require_write(request)
    drafts = cleaning.propose(_owner(request))
    if payload.dry_run:
        proposals = [
            {
                "id": None,
                "action": d.action,
                "status": "pending",
                "reason": d.reason,
                "memory": d.memory,
                "target": d.target,
            }
            for d in drafts
        ]
        return {"proposals": proposals, "queued": 0}
    queued = cleaning.queue(_owner(request), drafts)
    pending = Proposal.objects.filter(user=_owner(request), status="pending").select_related(
        "memory", "target"
    )
    return {"proposals": list(pending), "queued": len(queued)}


@router.get("/memories/proposals", response=list[ProposalOut], summary="The review queue")
@paginate(BoundedLimitOffset)
def list_proposals(request: HttpRequest, status: ProposalStatus = "pending"):
    return Proposal.objects.filter(user=_owner(request), status=status).select_related("memory", "target")


@router.post(
    "/memories/proposals/{proposal_id}/{decision}",
    response=ProposalOut,
    summary="Approve, reject or undo a proposal",
    auth=WRITE_AUTH,
)
def decide_proposal(request: HttpRequest, proposal_id: int, decision: Literal["approve", "reject", "undo"]):
    api_key: ApiKey = request.auth  # type: ignore[attr-defined]
    proposal = get_object_or_404(Proposal, pk=proposal_id, user=_owner(request))
    if decision == "approve":
        proposal = cleaning.approve(proposal, api_key=api_key, via=EditVia.API)
    elif decision == "reject":
        proposal = cleaning.reject(proposal)
    else:
        proposal = cleaning.undo(proposal, api_key=api_key, via=EditVia.API)
    return Proposal.objects.select_related("memory", "target").get(pk=proposal.pk)


@router.post(
    "/memories/forget", response=ForgetOut, summary="Forget by importance, age or capacity", auth=WRITE_AUTH
)
def forget(request: HttpRequest, payload: ForgetIn):
    return {"forgotten": memories_forget(user=_owner(request), **payload.dict())}


@router.post(
    "/memories/consolidate",
    response=ConsolidateOut,
    summary="Promote important memories (working → episodic)",
    auth=WRITE_AUTH,
)
def consolidate(request: HttpRequest, payload: ConsolidateIn):
    data = payload.dict()
    session = _session(request, data.pop("session_id"), create=False)
    promoted = memories_consolidate(user=_owner(request), session=session, **data)
    return {"consolidated": [memory.pk for memory in promoted]}


@router.get("/memories/summary", response=ToolOut, summary="Counts per type and the most important memories")
def summary(request: HttpRequest, limit: int = Query(10, ge=1, le=100)):
    reply = MemoryTool(
        user_id=_owner(request).get_username(), api_key=cast(ApiRequest, request).auth
    ).execute({"action": "summary", "limit": limit})
    return reply.__dict__


@router.get("/sessions/", tags=["sessions"], response=list[SessionOut], summary="List sessions")
@paginate(BoundedLimitOffset)
def list_sessions(request: HttpRequest, user: int | None = Query(None, description=USER_PARAM)):
    return AgentSession.objects.for_user(_reader(request, user)).annotate(
        memory_count=Count("memories", filter=Q(memories__archived_at=None))
    )


@router.get(
    "/sessions/{uuid:session_id}",
    tags=["sessions"],
    response=SessionDetailOut,
    summary="A session with its memories",
)
def get_session(
    request: HttpRequest, session_id: UUID, user: int | None = Query(None, description=USER_PARAM)
):
    session = get_object_or_404(AgentSession, pk=session_id, user=_reader(request, user))
    memories = list(session.memories.select_related("session", "origin_key").order_by("created_at")[:1000])
    return {**SessionOut.from_orm(session).dict(), "memory_count": len(memories), "memories": memories}


@router.post(
    "/tools/memory",
    tags=["tools"],
    response={200: ToolOut, frozenset({404, 422}): ToolRefusalOut},
    summary="Hello-Agents' MemoryTool.run({...})",
)
def memory_tool(request: HttpRequest, payload: MemoryToolIn):
    """The same dict MemoryTool.run takes: {"action": "add"|"search"|"summary"|"stats"|"update"|"remove"|
    "forget"|"consolidate"|"clear_all", ...}, each parameter typed as on the REST routes. Answers {"ok", "text",
    "data"}; a refused action 422 (404: no such memory) with the same body and the reason in `detail`."""
    parameters = payload.parameters()
    if MemoryTool.writes(parameters):
        require_write(request)
    tool = MemoryTool(
        user_id=_owner(request).get_username(), api_key=cast(ApiRequest, request).auth, session_id="api"
    )
    reply = tool.execute(parameters)
    return Status(reply.status, reply.answer())


@router.get(
    "/profile", tags=["profile"], response=ProfileOut, summary="What Mnemo knows about the key's owner"
)
def get_profile(request: HttpRequest, user: int | None = Query(None, description=USER_PARAM)):
    """Who the user is (identity, work, the people they know, preferences, other facts, recent events), most
    important first, and the facts that contradict each other, to resolve: the same profile the chat answers
    "What do you know about me?" with."""
    return ProfileOut.of(user_profile(_reader(request, user)))
