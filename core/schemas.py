"""The API's input types: each states in the OpenAPI schema the rule the service enforces, and enforces it.

A client reading /api/v1/openapi.json (and schemathesis, which tests both directions) can then tell a request
Mnemo accepts from one it refuses: text carries its length cap and a pattern that excludes the control
characters core.limits refuses; a JSON body's booleans and numbers are JSON booleans and numbers, not strings or
0/1 that pydantic would otherwise coerce; dates are ISO 8601 strings within the years the database holds.
"""

import re
from datetime import datetime
from typing import Annotated, Any

from django.utils.translation import gettext as _
from ninja import Schema
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    StrictBool,
    StrictFloat,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from core.limits import (
    MAX_CONTENT_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_NAME_CHARS,
    STORABLE_PATTERN,
    STORABLE_RULE,
    InputRejected,
    check_json,
    check_text,
)

# Years the database and date arithmetic hold on SQLite and PostgreSQL, whatever the UTC offset.
EARLIEST_YEAR, LATEST_YEAR = 2, 9998
YEAR_PATTERN = r"^(000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-"
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _storable(value: str, info: ValidationInfo) -> str:
    try:
        return check_text(value, info.field_name or "the text", max_chars=len(value))
    except InputRejected as exc:
        raise ValueError(str(exc)) from None


def text_rules(max_chars: int, *, min_chars: int = 0, description: str | None = None) -> tuple[Any, ...]:
    """The rules of a string of at most `max_chars` storable characters, for a schema field's type:
    `Annotated[str, *text_rules(...)]`, spelled out there so that the type checker sees a type."""
    return (
        Field(
            min_length=min_chars,
            max_length=max_chars,
            description=description,
            json_schema_extra={"pattern": STORABLE_PATTERN},
        ),
        AfterValidator(_storable),
    )


def _json_number(value: Any) -> Any:
    # JSON true and "5" are not numbers; pydantic's lax mode would read them as 1 and 5.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON number")
    return value


# A JSON body's integer: 3 and 3.0 (the same JSON number) are accepted, true and "3" are not.
Whole = Annotated[int, BeforeValidator(_json_number)]
# A JSON body's number and boolean, taken only as themselves.
Number = StrictFloat
Flag = StrictBool


def _form_flag(value: Any) -> Any:
    # A form or query field is text: only the words the schema's boolean serialises to.
    if isinstance(value, bool):
        return value
    if value not in ("true", "false"):
        raise ValueError("must be true or false")
    return value == "true"


FormFlag = Annotated[bool, BeforeValidator(_form_flag)]


def _iso_text(value: Any) -> Any:
    # pydantic would also read a number, or a string of one, as seconds since 1970.
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        raise ValueError(_("must be an ISO 8601 date-time string such as 2026-12-04T10:00:00Z"))
    return value


def _in_years(moment: datetime) -> datetime:
    if not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        raise ValueError(
            _("must fall between the years %(earliest)s and %(latest)s (got %(year)s)")
            % {"earliest": EARLIEST_YEAR, "latest": LATEST_YEAR, "year": moment.year}
        )
    return moment


Timestamp = Annotated[
    datetime,
    BeforeValidator(_iso_text),
    AfterValidator(_in_years),
    Field(json_schema_extra={"pattern": YEAR_PATTERN}),
]


class BodySchema(Schema):
    """A JSON request body: an object. Ninja's Schema would read any value's attributes, so `[null, null]`
    passed as an object of defaults and ran a patch or a dedupe with nothing the client asked for."""

    @model_validator(mode="wrap")
    @classmethod
    def _an_object(cls, value: Any, handler: Any) -> Any:
        # Ninja's own wrap validator runs first and wraps the value in a DjangoGetter.
        if not isinstance(getattr(value, "_obj", value), dict | BaseModel):
            raise ValueError("the body must be a JSON object")
        return handler(value)


def _json_value_schema(depth: int) -> dict[str, Any]:
    scalars = [
        {"type": "string", "maxLength": MAX_CONTENT_CHARS, "pattern": STORABLE_PATTERN},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ]
    if depth >= MAX_METADATA_DEPTH:
        # A container this deep must be empty: its items would nest one level too deep.
        empty = [{"type": "array", "maxItems": 0}, {"type": "object", "maxProperties": 0}]
        return {"anyOf": [*scalars, *empty]}
    inner = _json_value_schema(depth + 1)
    return {"anyOf": [*scalars, {"type": "array", "items": inner}, _json_object_schema(inner)]}


def _json_object_schema(values: dict[str, Any]) -> dict[str, Any]:
    keys = {"type": "string", "maxLength": MAX_NAME_CHARS, "pattern": STORABLE_PATTERN}
    return {"type": "object", "propertyNames": keys, "additionalProperties": values}


def _checked_json(value: dict[str, Any]) -> dict[str, Any]:
    try:
        return check_json(value, "metadata")
    except InputRejected as exc:
        raise ValueError(str(exc)) from None


# A memory's metadata: the nesting, keys and strings check_json takes, said as a schema (its byte size too).
Metadata = Annotated[
    dict[str, Any],
    AfterValidator(_checked_json),
    WithJsonSchema(
        {
            **_json_object_schema(_json_value_schema(1)),
            "description": f"A JSON object of at most {MAX_METADATA_BYTES:,} bytes, nested at most "
            f"{MAX_METADATA_DEPTH} levels; keys at most {MAX_NAME_CHARS} characters. {STORABLE_RULE}",
        }
    ),
]
