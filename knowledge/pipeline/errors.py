"""The one failure of a conversion, and the reason shown for what a converter raised."""

from core.stored_text import Text, gettext_noop
from core.text import without_paths


class ConversionError(Exception):
    """A conversion failure; its message is written for the user who uploaded the file."""

    def __init__(self, message: str, *, out_of_memory: bool = False):
        super().__init__(message)
        self.message = message
        self.out_of_memory = out_of_memory


def cause(exc: BaseException) -> BaseException:
    attempts = getattr(exc, "attempts", None)
    if attempts:  # MarkItDown's FileConversionException wraps what the converter raised
        return attempts[-1].exc_info[1] or exc
    return exc


def error_reason(exc: BaseException) -> str:
    exc = cause(exc)
    kind = type(exc).__name__
    if "Password" in kind or "Encrypt" in kind:
        return Text(gettext_noop("it is password-protected"))
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
    return without_paths(text)[:200]
