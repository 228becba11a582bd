"""What the agent tools (MemoryTool, RAGTool) share: typed parameters, replies and the tool's user."""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, overload

from django.contrib.auth import get_user_model
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from ninja import Schema
from pydantic import Field, TypeAdapter, ValidationError

from core.errors import RequestRefused
from core.limits import InputRejected
from core.schemas import EARLIEST_YEAR, LATEST_YEAR, Timestamp
from core.text import CJK, script_of

# The languages a tool answers in: `language` in the call, else the script of the call's text, else English.
REPLY_LANGUAGES = ("en", "zh-hans")
ReplyLanguage = Literal["en", "zh-hans"]
LANGUAGE_RULE = (
    "The language of the reply's text: en or zh-hans. Default: Chinese when the call's content, query, question "
    "or text is mostly Chinese script, else English. Field names and values in `data` never change."
)
# The parameters whose text tells the language of a call (a memory's content, a query, a question, a text).
TEXT_PARAMETERS = ("content", "query", "question", "text")


def is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class ToolInputError(InputRejected):
    """A missing or malformed parameter; the message names it."""


@dataclass
class ToolReply:
    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    # The HTTP status the tool endpoints answer with: 200 for a reply that is ok, else 422 (a parameter the
    # action refuses) unless the reply names another (404: no such memory).
    status: int = 0

    def __post_init__(self) -> None:
        self.status = self.status or (200 if self.ok else 422)

    def answer(self) -> dict[str, Any]:
        """The reply as the tool endpoints send it; a refusal also carries `detail`, as every API error does."""
        body: dict[str, Any] = {"ok": self.ok, "text": self.text, "data": self.data}
        if not self.ok:
            body["detail"] = self.data.get("error") or self.text
        return body


class ToolOut(Schema):
    """A ToolReply as the tool endpoints answer it."""

    ok: bool
    text: str
    data: dict[str, Any]


class ToolRefusalOut(Schema):
    """A reply that is not ok (404, 422): the tool's reply with the reason in `detail`. A body that is not a JSON
    object gets the API's own 422, with `detail` alone."""

    detail: str | list[dict[str, Any]]
    ok: bool = False
    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


def tool_user(user_id: str):
    """The Mnemo user a tool's `user_id` names, created (without a password) on first use."""
    username = str(user_id).strip()
    if not username or len(username) > 150:
        raise ToolInputError(_("user_id must be a non-empty name of at most 150 characters"))
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


class Params:
    """Typed access to a tool's parameter dict, with messages that name the parameter."""

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw

    # A default or `required=True` means a string comes back, never None.
    @overload
    def text(self, name: str, default: str, *, required: bool = False) -> str: ...
    @overload
    def text(self, name: str, default: None = None, *, required: Literal[True]) -> str: ...
    @overload
    def text(self, name: str, default: str | None = None, *, required: bool = False) -> str | None: ...
    def text(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.raw.get(name, default)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise ToolInputError(_("missing required parameter '%(name)s'") % {"name": name})
            return default
        if not isinstance(value, str):
            raise ToolInputError(
                _("parameter '%(name)s' must be a string, got %(got)s")
                % {"name": name, "got": type(value).__name__}
            )
        return value

    def number(
        self, name: str, default: float, *, low: float | None = None, high: float | None = None
    ) -> float:
        value = self.raw.get(name, default)
        if not is_finite_number(value):  # JSON numbers only, as in the REST API: not "0.5", not true
            raise ToolInputError(
                _("parameter '%(name)s' must be a number, got %(got)s") % {"name": name, "got": repr(value)}
            )
        if (low is not None and value < low) or (high is not None and value > high):
            raise ToolInputError(
                _("parameter '%(name)s' must be between %(low)s and %(high)s, got %(got)s")
                % {"name": name, "low": low, "high": high, "got": value}
            )
        return float(value)

    def integer(self, name: str, default: int, *, low: int = 1, high: int = 1000) -> int:
        value = self.raw.get(name, default)
        if isinstance(value, float) and value.is_integer():  # 5.0 is the JSON number 5; "5" is text
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ToolInputError(
                _("parameter '%(name)s' must be a whole number, got %(got)s")
                % {"name": name, "got": repr(value)}
            )
        if not low <= value <= high:
            raise ToolInputError(
                _("parameter '%(name)s' must be between %(low)s and %(high)s, got %(got)s")
                % {"name": name, "low": low, "high": high, "got": value}
            )
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ToolInputError(
                _("parameter '%(name)s' must be true or false, got %(got)s")
                % {"name": name, "got": repr(value)}
            )
        return value

    @overload
    def choice(self, name: str, default: str, allowed: Sequence[str]) -> str: ...
    @overload
    def choice(self, name: str, default: str | None, allowed: Sequence[str]) -> str | None: ...
    def choice(self, name: str, default: str | None, allowed: Sequence[str]) -> str | None:
        value = self.text(name, default)
        if value is not None and value not in allowed:
            raise ToolInputError(
                _("parameter '%(name)s' must be one of %(allowed)s, got %(got)s")
                % {"name": name, "allowed": ", ".join(allowed), "got": repr(value)}
            )
        return value

    def choices(self, name: str, allowed: Sequence[str], *, alias: str | None = None) -> list[str] | None:
        """A name or a list of names from ``allowed`` (``alias``: the singular a caller may send instead)."""
        value = self.raw.get(name, self.raw.get(alias) if alias else None)
        if value in (None, "", []):
            return None
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ToolInputError(
                _("parameter '%(name)s' must be a type name or a list of them") % {"name": name}
            )
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise ToolInputError(
                _("unknown value(s) %(unknown)s in '%(name)s'; valid: %(allowed)s")
                % {"unknown": unknown, "name": name, "allowed": ", ".join(allowed)}
            )
        return values

    def time_range(self) -> tuple[datetime | None, datetime | None] | None:
        value = self.raw.get("time_range")
        if value in (None, "", []):
            return None
        if isinstance(value, dict):
            value = [value.get("start"), value.get("end")]
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ToolInputError(
                _("parameter 'time_range' must be [start, end] (ISO 8601, either may be null)")
            )
        return (parse_moment(value[0], "time_range[0]"), parse_moment(value[1], "time_range[1]"))


_TIMESTAMP: TypeAdapter[datetime] = TypeAdapter(Timestamp)


def parse_moment(value: Any, name: str) -> datetime | None:
    """A date-time parameter by the REST API's rule (core.schemas.Timestamp): ISO 8601 text within the years the
    database holds; from Python, a datetime too. A naive time is UTC."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        moment = value
        if not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
            raise ToolInputError(
                _("parameter '%(name)s' must fall between the years %(earliest)s and %(latest)s")
                % {"name": name, "earliest": EARLIEST_YEAR, "latest": LATEST_YEAR}
            )
    else:
        try:
            moment = _TIMESTAMP.validate_python(value)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ToolInputError(
                _("parameter '%(name)s' is not an ISO 8601 date or time Mnemo takes (%(reason)s): %(value)s")
                % {"name": name, "reason": reason, "value": repr(value)}
            ) from None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


class ActionTool:
    """The `run(dict) -> str` / `execute(dict) -> ToolReply` protocol of the Hello-Agents tools.

    Subclasses name their `actions` (and among them the `write_actions`, which change data), implement
    `_<action>(params)` and list the exceptions that mean "bad request" in `refusals`; `prepare(params)` runs
    before every action (e.g. to pick up a session id).
    """

    actions: tuple[str, ...] = ()
    write_actions: frozenset[str] = frozenset()
    refusals: tuple[type[Exception], ...] = (InputRejected,)

    @classmethod
    def writes(cls, parameters: dict[str, Any]) -> bool:
        """Whether these parameters ask for an action that changes data (which needs a write key)."""
        action = parameters.get("action")
        return isinstance(action, str) and action in cls.write_actions

    def run(self, parameters: dict[str, Any]) -> str:
        return self.execute(parameters).text

    def prepare(self, params: "Params") -> None:
        pass

    def execute(self, parameters: dict[str, Any]) -> ToolReply:
        if not isinstance(parameters, dict):
            with translation.override("en"):
                return ToolReply(False, _("❌ The parameters must be a dict"))
        language = reply_language(parameters)
        if language is None:
            shown = ", ".join(REPLY_LANGUAGES)
            return ToolReply(
                False, f"❌ 'language' must be one of {shown}", {"error": f"language: one of {shown}"}
            )
        with translation.override(language):
            return self._execute(parameters)

    def _execute(self, parameters: dict[str, Any]) -> ToolReply:
        action = parameters.get("action")
        valid = ", ".join(self.actions)
        if not action:
            return ToolReply(
                False, _("❌ The parameter 'action' is missing; actions: %(valid)s") % {"valid": valid}
            )
        if not isinstance(action, str) or action not in self.actions:
            shown = action if isinstance(action, str) else repr(action)
            return ToolReply(
                False,
                _("❌ Unknown action: %(action)s; actions: %(valid)s") % {"action": shown, "valid": valid},
            )
        params = Params(parameters)
        try:
            self.prepare(params)
            return getattr(self, f"_{action}")(params)
        except self.refusals as exc:
            status = exc.status if isinstance(exc, RequestRefused) else 422
            text = _("❌ %(action)s failed: %(error)s") % {"action": action, "error": exc}
            return ToolReply(False, text, {"error": str(exc)}, status)


def reply_language(parameters: dict[str, Any]) -> str | None:
    """The language a tool call is answered in: its `language` ("en" or "zh-hans") when given, else Chinese
    when the text it carries is mostly CJK, else English. None for a `language` Mnemo does not speak."""
    asked = parameters.get("language")
    if asked is not None:
        return asked if asked in REPLY_LANGUAGES else None
    text = " ".join(value for name in TEXT_PARAMETERS if isinstance(value := parameters.get(name), str))
    return language_of(text)


def language_of(text: str) -> str:
    """zh-hans for a text that is mostly CJK characters (core.text.script_of), en for any other."""
    return "zh-hans" if text and script_of(text) == CJK else "en"
