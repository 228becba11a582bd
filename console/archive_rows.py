"""The rules a row of an imported archive must pass before anything is written: those of the API, where the API
writes that field, and what the database and every later read need everywhere else.

A memory passes memories.actions.rules.memory_check (content, type, importance, tags and participants, metadata,
dates), a session key and metadata the session service's rules. Every other field is checked by its kind: text
within its column's length and free of what no backend stores (NUL, unpaired surrogates), numbers finite and
within the column's range, dates within the years the database holds, choices among the model's choices, JSON
of bounded size and depth. Text Mnemo wrote itself (a chat reply, a converted document) keeps characters a
person could not send: it was stored that way, and an archive must load back what export wrote.
"""

import json
import math
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext as _

from console.archive import PortabilityError
from conversations.models import AgentSession
from core.errors import RequestRefused
from core.limits import MAX_CONTENT_CHARS, MAX_NAME_CHARS, check_json, check_text
from core.schemas import EARLIEST_YEAR, LATEST_YEAR
from memories.actions.rules import memory_check
from memories.models import Memory

# Text and JSON columns without a length of their own: what a row may hold (a document's Markdown is bounded by
# the archive's row size only).
MAX_TEXT_CHARS = 10 * MAX_CONTENT_CHARS
UNBOUNDED_TEXT = frozenset({"knowledge.document.markdown"})
MAX_JSON_BYTES = 4 * 1024**2
MAX_JSON_DEPTH = 32
_SURROGATE_OR_NUL = frozenset({0}) | frozenset(range(0xD800, 0xE000))


def row_values(model: type[models.Model], row: dict[str, Any], position: int) -> dict[str, Any]:
    """The row's own (non-relation) fields as Python values, each checked; PortabilityError names the first
    field that fails."""
    label = model._meta.label_lower
    values: dict[str, Any] = {}
    try:
        model._meta.pk.to_python(row["pk"])
    except (ValidationError, TypeError, ValueError, AttributeError):
        raise PortabilityError(
            f"row {position} ({label}) has an id that is not one: {_shown(row['pk'])}"
        ) from None
    for name, raw in row["fields"].items():
        try:
            field = model._meta.get_field(name)
        except Exception:  # FieldDoesNotExist, or a name that is not a string
            raise PortabilityError(
                f"row {position} ({label}) has a field {_shown(name)} the model lacks"
            ) from None
        if field.is_relation or not isinstance(field, models.Field):
            continue
        where = f"row {position} ({label}) {name}"
        try:
            values[name] = _checked(field, raw, where)
        except PortabilityError:
            raise
        except ValidationError as exc:
            raise PortabilityError(
                _("%(where)s: %(items)s") % {"where": where, "items": "; ".join(exc.messages)}
            ) from None
        except (TypeError, ValueError, OverflowError, AttributeError):
            raise PortabilityError(
                _("%(where)s is not a value of its kind: %(shown)s") % {"where": where, "shown": _shown(raw)}
            ) from None
    _check_by_model(model, values, position)
    return values


def _checked(field: models.Field, raw: Any, where: str) -> Any:
    if isinstance(field, models.JSONField):
        _check_json_value(raw, where, depth=0)
        size = len(json.dumps(raw, ensure_ascii=False).encode())
        if size > MAX_JSON_BYTES:
            raise PortabilityError(
                _("%(where)s is %(size)s bytes as JSON; the limit is %(max_json_bytes)s")
                % {"where": where, "size": f"{size:,}", "max_json_bytes": f"{MAX_JSON_BYTES:,}"}
            )
        return raw
    if isinstance(field, models.FileField):
        if not isinstance(raw, str):
            raise PortabilityError(_("%(where)s must name a file") % {"where": where})
        return raw
    if isinstance(raw, str) and not isinstance(field, models.CharField | models.TextField):
        pass  # a date or a number as text: to_python reads it
    elif isinstance(field, models.FloatField | models.IntegerField) and not _is_number(raw):
        if not (raw is None and field.null):  # a nullable number (a chunk's page) may be null
            raise PortabilityError(
                _("%(where)s must be a number, got %(shown)s") % {"where": where, "shown": _shown(raw)}
            )
    value = field.to_python(raw)
    if isinstance(value, str):
        _check_storable(value, where, field)
    if isinstance(value, float) and not math.isfinite(value):
        raise PortabilityError(_("%(where)s is not a finite number") % {"where": where})
    if isinstance(value, datetime) and not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
        raise PortabilityError(
            _("%(where)s must fall between the years %(earliest_year)s and %(latest_year)s")
            % {"where": where, "earliest_year": EARLIEST_YEAR, "latest_year": LATEST_YEAR}
        )
    if value is None and not field.null:
        raise PortabilityError(_("%(where)s must not be null") % {"where": where})
    if value is not None:
        field.validate(value, None)  # choices and blank
        field.run_validators(value)  # lengths and the column's integer range
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_storable(value: str, where: str, field: models.Field) -> None:
    cap = field.max_length or MAX_TEXT_CHARS
    if f"{field.model._meta.label_lower}.{field.name}" not in UNBOUNDED_TEXT and len(value) > cap:
        raise PortabilityError(
            _("%(where)s is %(count)s characters long; the limit is %(cap)s")
            % {"where": where, "count": f"{len(value):,}", "cap": f"{cap:,}"}
        )
    bad = next((position for position, char in enumerate(value) if ord(char) in _SURROGATE_OR_NUL), None)
    if bad is not None:
        raise PortabilityError(
            f"{where} holds U+{ord(value[bad]):04X} at position {bad}, which no database stores"
        )


def _check_json_value(value: Any, where: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise PortabilityError(
            _("%(where)s nests deeper than %(max_json_depth)s levels")
            % {"where": where, "max_json_depth": MAX_JSON_DEPTH}
        )
    if isinstance(value, str):
        if any(ord(char) in _SURROGATE_OR_NUL for char in value):
            raise PortabilityError(
                _("%(where)s holds NUL or an unpaired surrogate, which no database stores") % {"where": where}
            )
    elif isinstance(value, float) and not math.isfinite(value):
        raise PortabilityError(_("%(where)s holds a number that is not finite") % {"where": where})
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json_value(key, where, depth + 1)
            _check_json_value(item, where, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json_value(item, where, depth + 1)


def _check_by_model(model: type[models.Model], values: dict[str, Any], position: int) -> None:
    """The API's own rules for what the API writes."""
    label = model._meta.label_lower
    try:
        if model is Memory:
            memory_check(Memory(**values))
        elif model is AgentSession:
            check_text(values.get("key", ""), "key", MAX_NAME_CHARS)
            if not values.get("key", "").strip():
                raise PortabilityError(_("the session's key must not be empty"))
            check_json(values.get("metadata", {}), "metadata")
    except RequestRefused as exc:
        raise PortabilityError(
            _("row %(position)s (%(label)s): %(exc)s") % {"position": position, "label": label, "exc": exc}
        ) from None


def check_username(name: Any) -> str:
    """A username an archive names, as the user model would accept it."""
    field = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD)
    assert isinstance(field, models.Field)
    if not isinstance(name, str) or not name.strip():
        raise PortabilityError(_("the archive's manifest names no username"))
    try:
        field.clean(name, None)
    except ValidationError as exc:
        raise PortabilityError(
            f"the archive's username {_shown(name)} is not valid: {'; '.join(exc.messages)}"
        ) from None
    return name


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
