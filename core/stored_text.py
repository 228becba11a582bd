"""Text that is stored in a row and shown later, in the language of whoever reads it.

A document's error, a memory edit's reason or a chat note is written once (often by a worker with no reader's
language) and read many times, in English or Chinese. The row keeps the English text, as before, so the API and
older code read it unchanged, and beside it the message's *key*: the English msgid, marked for the catalogue, and
its parameters. A page shows `shown(text, key)`: the msgid translated into the active language and filled in. A
row written before keys existed has none and shows its text as it is.

`Text` is the value that carries both: a `str` (the English) whose `.key` a MessageKeyField (core.models) stores.
This module imports Django only to translate, so the conversion pipeline, which must not import Django, builds
Texts too, in its child process (knowledge.pipeline.bounded); a Text survives pickling through its pipe.
"""

from typing import Any

Key = dict[str, Any]


def gettext_noop(message: str) -> str:
    """Marks a msgid for the catalogue (makemessages looks for this name) and returns it as it is: Django's own,
    without importing Django, which the conversion pipeline must not (knowledge.pipeline)."""
    return message


class Text(str):
    """English text with the msgid (marked with gettext_noop) and parameters that make it.

    A parameter may itself be a Text (a reason inside "approved cleaning: …"), which is translated with it; any
    other parameter (a file name, an amount, a model's words) is shown as it is."""

    key: Key

    def __new__(cls, msgid: str, /, **params: Any) -> "Text":
        english = msgid % {name: str(value) for name, value in params.items()} if params else msgid
        text = super().__new__(cls, english)
        text.key = {"msgid": msgid, "params": {name: _stored(value) for name, value in params.items()}}
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (str(self), self.key)


def _restore(english: str, key: Key) -> Text:
    text = str.__new__(Text, english)
    text.key = key
    return text


def _stored(value: Any) -> Any:
    if isinstance(value, Text):
        return value.key
    return value if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def joined(separator: str, items: list[Any]) -> Text:
    """`items` (Texts or plain text) joined with `separator`, each translated when shown. Its msgid is only
    placeholders and the separator: no catalogue entry, so it reads the same in every language."""
    msgid = separator.replace("%", "%%").join(f"%(item{n})s" for n in range(len(items)))
    return Text(msgid, **{f"item{n}": item for n, item in enumerate(items)})


def key_of(value: object) -> Key:
    """The key to store beside `value`: a Text's, or {} for plain text (shown as it is)."""
    return dict(value.key) if isinstance(value, Text) else {}


def stored(text: str, key: object) -> str:
    """A stored text and key as one value again: a Text when the key still makes the text (to quote it inside
    another Text, as "approved cleaning: <the proposal's reason>"), else the text."""
    return _restore(text, key) if _makes(key, text) else text  # type: ignore[arg-type]


def in_language(value: str) -> str:
    """`value` in the active language when it is a Text; any other text as it is."""
    return shown(value, key_of(value))


def shown(text: str, key: object) -> str:
    """`text` in the active language: its key's msgid translated and filled in, or `text` itself when the row has
    no key (written before keys) or a stale one (the text was rewritten or cut without it)."""
    if not _makes(key, text):
        return text
    try:
        return _render(key)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):  # a translation whose placeholders do not fit: the English
        return text


def _makes(key: object, text: str) -> bool:
    """Whether `key` is a key, and in English reads exactly `text`."""
    if not text or not _is_key(key):
        return False
    try:
        return _render(key, translate=False) == text  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        return False


def _is_key(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("msgid"), str)
        and isinstance(value.get("params"), dict)
    )


def _render(key: Key, *, translate: bool = True) -> str:
    params = {
        name: _render(value, translate=translate) if _is_key(value) else value
        for name, value in key["params"].items()
    }
    if translate:
        from django.utils.translation import gettext  # only when shown: building a Text needs no Django

        words = gettext(key["msgid"])
    else:
        words = key["msgid"]
    return words % params if params else words
