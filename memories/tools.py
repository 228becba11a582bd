"""MemoryTool: Hello-Agents' memory tool on Mnemo's memory system.

    from memories.tools import MemoryTool
    tool = MemoryTool(user_id="user123")
    tool.run({"action": "add", "content": "李四是前端工程师", "memory_type": "semantic", "importance": 0.7})
    tool.run({"action": "search", "query": "前端工程师"})

The nine actions, their parameters and defaults are Hello-Agents'; replies carry full ids so update and remove
work with them. `user_id` names a Mnemo user (created on first use); everything the tool does is scoped to it.
POST /api/v1/tools/memory runs the same `execute()` and returns its structured reply.
"""

from typing import Any

from django.db.models import Avg, Count, Sum
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from conversations.models import AgentSession
from core.limits import InputRejected
from core.models import ApiKey
from core.tooling import ActionTool, Params, ToolInputError, ToolReply, parse_moment, tool_user
from memories.actions.access import record_access
from memories.actions.edit import memory_update
from memories.actions.forgetting import memories_clear, memories_consolidate, memories_delete, memories_forget
from memories.actions.rules import PERCEPTUAL_MODALITIES
from memories.actions.write import memory_write
from memories.models import EditVia, Memory, MemoryType
from memories.retrieval import search_memories
from memories.types import MEMORY_TYPES, NAMES, names_where, policy_of

# The replies are English, or Chinese (Hello-Agents' own wording) for a call in Chinese (core.tooling.reply_language).
# lazy: each reply reads them in its own language
TYPE_LABELS: dict[str, Any] = {policy.name: policy.noun for policy in MEMORY_TYPES}
# Hello-Agents' reply for an add, and Mnemo's for the curation outcomes (memories.curation).
WRITE_REPLIES = {
    "add": gettext_lazy("✅ Memory added (ID: %(id)s)"),
    "supersede": gettext_lazy("✅ Memory added (ID: %(id)s); it replaces an older fact: %(reason)s"),
    "duplicate": gettext_lazy("♻️ The same memory is already stored (duplicate, ID: %(id)s); not saved again"),
    "merge": gettext_lazy("♻️ Merged into an existing memory (merged, ID: %(id)s): %(reason)s"),
}
ACTIONS = ("add", "search", "summary", "stats", "update", "remove", "forget", "consolidate", "clear_all")
# The actions that change memories: over the API and MCP they need a key with the write scope.
WRITE_ACTIONS = frozenset({"add", "update", "remove", "forget", "consolidate", "clear_all"})
# Keys every action understands besides its own parameters.
COMMON_KEYS = {"action", "session_id", "language"}
EPISODE_KEYS = ("context", "outcome", "participants", "tags")
# Every parameter some action reads (memories.schemas.MemoryToolIn types each): add keeps the others as metadata.
PARAMETERS = frozenset(
    {
        *COMMON_KEYS,
        *EPISODE_KEYS,
        *("content", "memory_type", "importance", "created_at", "file_path", "modality"),
        *("query", "limit", "memory_types", "min_importance", "time_range", "include_superseded"),
        *("memory_id", "strategy", "threshold", "max_age_days", "from_type", "to_type"),
        *("importance_threshold", "confirm"),
    }
)
IMAGE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "webp", "bmp"})
AUDIO_SUFFIXES = frozenset({"wav", "mp3", "flac", "ogg", "m4a"})
MODALITIES = ("text", *PERCEPTUAL_MODALITIES)


class MemoryTool(ActionTool):
    actions = ACTIONS
    write_actions = WRITE_ACTIONS
    refusals = (InputRejected,)  # ToolInputError and MemoryRequestError among them
    name = "memory"
    description = "Memory tool: add, search, summarise, update, remove, forget and consolidate the user's memories (Mnemo)"

    def __init__(
        self,
        user_id: str = "default_user",
        memory_types: list[str] | None = None,
        session_id: str | None = None,
        api_key: ApiKey | None = None,
        via: str | None = None,
    ):
        """`via`: the route the calls come through (MCP, the chat agent), recorded with each write and search;
        by default the API when there is a key, else the tool in Python."""
        self.user_id = user_id
        self.user = tool_user(user_id)
        self.memory_types = memory_types or names_where(lambda policy: policy.searched_by_default)
        self.current_session_id = session_id
        self.conversation_count = 0
        self.api_key = api_key
        self.via = via or (EditVia.API if api_key else EditVia.TOOL)

    def prepare(self, params: Params) -> None:
        if "session_id" in params.raw:
            self.current_session_id = params.text("session_id", required=True)

    # --- actions ------------------------------------------------------------------------------------------

    def _session_key(self) -> str:
        if self.current_session_id is None:
            self.current_session_id = timezone.now().strftime("session_%Y%m%d_%H%M%S")
        return self.current_session_id

    def _add(self, params: Params) -> ToolReply:
        content = params.text("content", required=True)
        memory_type = params.choice("memory_type", MemoryType.WORKING, NAMES)
        importance = params.number("importance", 0.5, low=0.0, high=1.0)
        # Hello-Agents silently dropped extra keys (event_type, concept, …); keep them as metadata instead.
        metadata = {k: v for k, v in params.raw.items() if k not in PARAMETERS}
        detail: dict[str, Any] = {
            key: params.text(key, "") for key in ("context", "outcome") if key in params.raw
        }
        for key in ("participants", "tags"):
            if params.raw.get(key) is not None:
                value = params.raw[key]
                detail[key] = value if isinstance(value, list) else [value]
        if params.raw.get("file_path") or policy_of(memory_type).keeps_file:
            detail["modality"] = params.choice("modality", None, MODALITIES) or _modality(
                params.text("file_path") or ""
            )
            if params.raw.get("file_path"):
                metadata["file_path"] = params.text("file_path")
        written = memory_write(
            user=self.user,
            content=content,
            memory_type=memory_type,
            importance=importance,
            session_key=self._session_key(),  # created with the memory: a refused add leaves no empty session
            metadata=metadata,
            created_at=parse_moment(params.raw.get("created_at"), "created_at"),
            via=self.via,
            api_key=self.api_key,
            **detail,
        )
        memory = written.memory
        self.conversation_count += 1
        data = {
            "id": str(memory.pk),
            "memory_type": memory.memory_type,
            "session_id": self.current_session_id,
            "action": written.action,
            "reason": written.reason,
            "superseded": [str(older.pk) for older in written.superseded],
        }
        return ToolReply(
            True, WRITE_REPLIES[written.action] % {"id": memory.pk, "reason": written.reason}, data
        )

    def _search(self, params: Params) -> ToolReply:
        query = params.text("query", required=True)
        result = search_memories(
            user=self.user,
            query=query,
            limit=params.integer("limit", 5, high=100),
            memory_types=params.choices("memory_types", NAMES, alias="memory_type"),
            min_importance=params.number("min_importance", 0.1, low=0.0, high=1.0),
            session=self._named_session(params),
            time_range=params.time_range(),
            include_superseded=params.flag("include_superseded", False),
            include_chat_copies=params.flag("include_chat_copies", False),
            tag=params.text("tag"),
            # What a tool returns goes into a model's context or an agent's answer: only real matches.
            require_match=True,
        )
        record_access(
            user=self.user,
            memories=[(hit.memory, hit.score) for hit in result.hits],
            query=query,
            via=self.via,
            api_key=self.api_key,
        )
        data = {"results": [_hit_data(hit) for hit in result.hits], "notice": result.notice}
        if not result.hits:
            return ToolReply(True, _("🔍 No memories found for '%(query)s'") % {"query": query}, data)
        lines = [_("🔍 Found %(count)d relevant memories:") % {"count": len(result.hits)}]
        for index, hit in enumerate(result.hits, start=1):
            memory = hit.memory
            lines.append(
                f"{index}. [{TYPE_LABELS[memory.memory_type]}] {_clip(memory.content, 80)} "
                + _("(importance: %(importance).2f, score: %(score).3f, ID: %(id)s)")
                % {"importance": memory.importance, "score": hit.score, "id": memory.pk}
            )
        if result.notice:
            lines.append(f"⚠️ {result.notice}")
        return ToolReply(True, "\n".join(lines), data)

    def _named_session(self, params: Params):
        key = params.raw.get("session_id")
        if not key:
            return None
        session = AgentSession.objects.filter(user=self.user, key=key).first()
        if session is None:
            raise ToolInputError(_("no session named %(key)r for this user") % {"key": key})
        return session

    def _summary(self, params: Params) -> ToolReply:
        limit = params.integer("limit", 10, high=100)
        stats = self._stats_data()
        lines = [
            _("📊 Memory summary"),
            _("Memories: %(total)d") % {"total": stats["total"]},
            _("Current session: %(session)s") % {"session": self.current_session_id or _("not started")},
            _("Conversation turns: %(turns)d") % {"turns": self.conversation_count},
            "",
            _("📋 Memories by type:"),
        ]
        for memory_type, entry in stats["by_type"].items():
            lines.append(
                f"  • {TYPE_LABELS[memory_type]}: "
                + _("%(count)d (average importance: %(importance).2f)")
                % {"count": entry["count"], "importance": entry["avg_importance"]}
            )
        important = (
            Memory.objects.for_user(self.user)
            .active()
            .select_related("session")
            .filter(importance__gte=0.5)
            .order_by("-importance", "-created_at")[:limit]
        )
        if important:
            lines += ["", _("⭐ Important memories (top %(count)d):") % {"count": len(important)}]
            for index, memory in enumerate(important, start=1):
                lines.append(
                    f"  {index}. {_clip(memory.content, 60)} "
                    + _("(importance: %(importance).2f, ID: %(id)s)")
                    % {"importance": memory.importance, "id": memory.pk}
                )
        stats["important"] = [_memory_data(m) for m in important]
        return ToolReply(True, "\n".join(lines), stats)

    def _stats(self, params: Params) -> ToolReply:
        stats = self._stats_data()
        lines = [
            _("📈 Memory statistics"),
            _("Memories: %(total)d") % {"total": stats["total"]},
            _("Memory types in use: %(types)s") % {"types": ", ".join(self.memory_types)},
            _("Session ID: %(session)s") % {"session": self.current_session_id or _("not started")},
            _("Conversation turns: %(turns)d") % {"turns": self.conversation_count},
        ]
        for memory_type, entry in stats["by_type"].items():
            lines.append(
                f"  • {TYPE_LABELS[memory_type]}: "
                + _("%(count)d, %(tokens)d tokens") % {"count": entry["count"], "tokens": entry["tokens"]}
            )
        return ToolReply(True, "\n".join(lines), stats)

    def _stats_data(self) -> dict[str, Any]:
        rows = (
            Memory.objects.for_user(self.user)
            .active()
            .values("memory_type")
            .annotate(count=Count("id"), avg_importance=Avg("importance"), tokens=Sum("token_count"))
            .order_by()
        )
        by_type = {
            row["memory_type"]: {
                "count": row["count"],
                "avg_importance": round(row["avg_importance"] or 0, 4),
                "tokens": row["tokens"] or 0,
            }
            for row in rows
        }
        ordered = {t: by_type[t] for t in NAMES if t in by_type}
        return {
            "user_id": self.user_id,
            "total": sum(entry["count"] for entry in ordered.values()),
            "by_type": ordered,
            "session_id": self.current_session_id,
            "conversation_count": self.conversation_count,
        }

    def _memory(self, params: Params) -> Memory:
        memory_id = params.text("memory_id", required=True).strip()
        memory = Memory.objects.filter(user=self.user, pk=_uuid_or_none(memory_id)).first()
        if memory is None:
            raise LookupError(memory_id)
        return memory

    def _update(self, params: Params) -> ToolReply:
        try:
            memory = self._memory(params)
        except LookupError as missing:
            return ToolReply(False, _("⚠️ No memory to update: %(id)s") % {"id": missing}, status=404)
        changes: dict[str, Any] = {}
        if params.raw.get("content") is not None:
            changes["content"] = params.text("content", required=True)
        if params.raw.get("importance") is not None:
            changes["importance"] = params.number("importance", 0.5, low=0.0, high=1.0)
        if params.raw.get("memory_type") is not None:
            changes["memory_type"] = params.choice("memory_type", None, NAMES)
        if not changes:
            raise ToolInputError(_("give at least one of 'content', 'importance', 'memory_type' to update"))
        memory_update(memory=memory, via=self.via, api_key=self.api_key, **changes)
        return ToolReply(
            True,
            _("✅ Memory updated (ID: %(id)s)") % {"id": memory.pk},
            {"id": str(memory.pk), "changed": sorted(changes)},
        )

    def _remove(self, params: Params) -> ToolReply:
        try:
            memory = self._memory(params)
        except LookupError as missing:
            return ToolReply(False, _("⚠️ No memory to remove: %(id)s") % {"id": missing}, status=404)
        memories_delete(user=self.user, memory_ids=[memory.pk])
        return ToolReply(
            True, _("✅ Memory removed (ID: %(id)s)") % {"id": memory.pk}, {"id": str(memory.pk)}
        )

    def _forget(self, params: Params) -> ToolReply:
        strategy = params.text("strategy", "importance_based")
        count = memories_forget(
            user=self.user,
            strategy=strategy,
            threshold=params.number("threshold", 0.1, low=0.0, high=1.0),
            max_age_days=params.number("max_age_days", 30, low=0.0),
            memory_types=params.choices("memory_types", NAMES, alias="memory_type"),
        )
        return ToolReply(
            True,
            _("🧹 Forgot %(count)d memories (strategy: %(strategy)s)")
            % {"count": count, "strategy": strategy},
            {"forgotten": count, "strategy": strategy},
        )

    def _consolidate(self, params: Params) -> ToolReply:
        from_type = params.choice("from_type", MemoryType.WORKING, NAMES)
        to_type = params.choice("to_type", MemoryType.EPISODIC, NAMES)
        threshold = params.number("importance_threshold", 0.7, low=0.0, high=1.0)
        promoted = memories_consolidate(
            user=self.user, from_type=from_type, to_type=to_type, importance_threshold=threshold
        )
        return ToolReply(
            True,
            _(
                "🔄 Consolidated %(count)d memories into long-term memory (%(from)s → %(to)s, threshold=%(threshold)s)"
            )
            % {"count": len(promoted), "from": from_type, "to": to_type, "threshold": threshold},
            {"consolidated": [str(m.pk) for m in promoted], "from_type": from_type, "to_type": to_type},
        )

    def _clear_all(self, params: Params) -> ToolReply:
        if params.raw.get("confirm") is not True:
            raise ToolInputError(
                _('clear_all deletes every memory of this user; send "confirm": true to go ahead')
            )
        count = memories_clear(user=self.user)
        text = _("🧽 Cleared all memories (%(count)d, of user %(user)s only)") % {
            "count": count,
            "user": self.user_id,
        }
        return ToolReply(True, text, {"deleted": count})


def _uuid_or_none(value: str):
    import uuid

    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[:length] + "..."


def _modality(file_path: str) -> str:
    suffix = file_path.rsplit(".", 1)[-1].lower() if "." in file_path else ""
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in AUDIO_SUFFIXES:
        return "audio"
    return "text"


def _memory_data(memory: Memory) -> dict[str, Any]:
    return {
        "id": str(memory.pk),
        "content": memory.content,
        "memory_type": memory.memory_type,
        "importance": memory.importance,
        "created_at": memory.created_at.isoformat(),
        "session_id": memory.session.key if memory.session else None,
        "superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None,
    }


def _hit_data(hit) -> dict[str, Any]:
    return {**_memory_data(hit.memory), "score": hit.score, "scores": hit.scores}
