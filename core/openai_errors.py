"""One translation of the openai SDK's exceptions into a caller's own error, for core.llm and core.embedders.remote.

Both talk to OpenAI-compatible APIs and sort a provider failure the same way: a refused key, an unknown model or
URL, another HTTP status, a timeout, no connection, anything else. Each words every kind with its own setting
names, so the person reading the message knows which setting to check.

The SDK is imported when a failure is translated, not with this module, as its callers import it only once they
call a provider: Mnemo without an LLM or a remote embedder never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai


@dataclass(frozen=True)
class ProviderWording:
    """A caller's message for each kind of provider failure, made from the SDK's exception."""

    refused: Callable[[openai.APIStatusError], str]  # HTTP 401 (and 403 where forbidden_is_refused)
    not_found: Callable[[openai.NotFoundError], str]  # HTTP 404: the model or the URL
    status: Callable[[openai.APIStatusError], str]  # any other HTTP status
    timeout: Callable[[openai.APITimeoutError], str]
    unreachable: Callable[[openai.APIConnectionError], str]
    failed: Callable[[openai.OpenAIError], str]  # anything else the SDK raises
    # Whether a 403 means the key was refused, or is one more status to report with the provider's message.
    forbidden_is_refused: bool = True


def provider_message(exc: openai.OpenAIError, wording: ProviderWording) -> str:
    """The message `wording` gives for `exc`."""
    import openai

    # APITimeoutError is an APIConnectionError: it is looked at first.
    if isinstance(exc, openai.APITimeoutError):
        return wording.timeout(exc)
    if isinstance(exc, openai.AuthenticationError):
        return wording.refused(exc)
    if wording.forbidden_is_refused and isinstance(exc, openai.PermissionDeniedError):
        return wording.refused(exc)
    if isinstance(exc, openai.NotFoundError):
        return wording.not_found(exc)
    if isinstance(exc, openai.APIStatusError):
        return wording.status(exc)
    if isinstance(exc, openai.APIConnectionError):
        return wording.unreachable(exc)
    return wording.failed(exc)


@contextmanager
def provider_errors(wording: ProviderWording, error: Callable[[str], Exception]) -> Iterator[None]:
    """Every openai exception raised inside as `error(message)`, chained to the SDK's exception."""
    import openai

    try:
        yield
    except openai.OpenAIError as exc:
        raise error(provider_message(exc, wording)) from exc


def shortened(text: str, limit: int) -> str:
    """A provider's message cut to `limit` characters: some send a whole HTML error page."""
    return text if len(text) <= limit else text[:limit] + "…"
