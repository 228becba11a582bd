"""The optional LLM: any OpenAI-compatible chat API named by LLM_BASE_URL / LLM_API_KEY / LLM_MODEL.

Everything that uses it (MQE, HyDE, `ask`, chat) must work without it, so `get_llm()` returns None when it is not
configured, and every provider failure becomes an LLMError whose message names the setting to check.
"""

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from core import cpu_slots
from core.disconnect import ClientGone, client_gone
from core.openai_errors import ProviderWording, provider_errors, shortened


class LLMError(Exception):
    """The LLM provider failed; str(e) is fit to show a user."""


def _waiting() -> bool:
    return False


@dataclass(frozen=True)
class Budget:
    """What one request may still spend on the LLM: time until `deadline` (time.monotonic(), LLM_TURN_SECONDS
    from its start) and only while its client waits. Checked before each call and between streamed chunks."""

    deadline: float
    gone: Callable[[], bool] = _waiting

    @classmethod
    def for_request(cls, request: HttpRequest | None = None) -> "Budget":
        """LLM_TURN_SECONDS from now, and stopped early when `request`'s client disconnects (under gunicorn)."""
        gone = (lambda: client_gone(request)) if request is not None else _waiting
        return cls(time.monotonic() + settings.LLM_TURN_SECONDS, gone)

    def remaining(self) -> float:
        """Seconds left; raises ClientGone or LLMError when nothing is."""
        if self.gone():
            raise ClientGone("the client went away before the answer was ready")
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise LLMError(
                f"the LLM took longer than the {settings.LLM_TURN_SECONDS:g} s a chat turn may take "
                "(LLM_TURN_SECONDS)"
            )
        return remaining


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it: may be malformed


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    tool_calls: list[Any]
    raw: Any = None


class LLMClient:
    # One retry, not the SDK's two: a hanging provider holds a request thread for (1 + retries) × LLM_TIMEOUT.
    def __init__(self, base_url: str, api_key: str, model: str, timeout: float, max_retries: int = 1):
        from openai import OpenAI

        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.client = OpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=max_retries
        )

    def complete(
        self, messages: list[dict], *, temperature: float = 0.2, budget: Budget | None = None, **kwargs: Any
    ) -> Completion:
        started = time.perf_counter()
        client = self._within(budget)
        with self._provider_errors(), cpu_slots.waiting_elsewhere():
            response = client.chat.completions.create(
                model=self.model, messages=messages, temperature=temperature, **kwargs
            )
        if not response.choices:
            raise LLMError("the LLM returned no choices")
        message = response.choices[0].message
        usage = response.usage
        return Completion(
            text=message.content or "",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_ms=round((time.perf_counter() - started) * 1000),
            tool_calls=[
                ToolCall(call.id, call.function.name, call.function.arguments or "")
                for call in message.tool_calls or []
                if call.function
            ],
            raw=response,
        )

    def _provider_errors(self) -> AbstractContextManager[None]:
        """Every provider failure as an LLMError naming the LLM_ setting to check."""
        return provider_errors(
            ProviderWording(
                refused=lambda exc: f"the LLM provider refused LLM_API_KEY ({exc.status_code})",
                not_found=lambda exc: (
                    f"the LLM provider does not know LLM_MODEL={self.model} or the URL is wrong"
                ),
                status=lambda exc: (
                    f"the LLM provider answered {exc.status_code}: {shortened(exc.message, 300)}"
                ),
                timeout=lambda exc: f"the LLM at LLM_BASE_URL={self.base_url} timed out (LLM_TIMEOUT)",
                unreachable=lambda exc: f"cannot reach the LLM at LLM_BASE_URL={self.base_url}",
                failed=lambda exc: f"the LLM call failed: {shortened(str(exc), 300)}",
                # A 403 is reported as one more status, in the provider's own words, not as a refused key.
                forbidden_is_refused=False,
            ),
            LLMError,
        )

    def _within(self, budget: Budget | None):
        """The client for one call: with a budget, the connection and each read wait at most what is left of it,
        with no retry."""
        if budget is None:
            return self.client
        return self.client.with_options(timeout=min(self.timeout, budget.remaining()), max_retries=0)

    def stream(
        self, messages: list[dict], *, temperature: float = 0.2, budget: Budget | None = None, **kwargs: Any
    ):
        """Yield text deltas as they arrive; the generator's return value is the whole Completion
        (tool calls assembled from their streamed fragments).

        ``budget`` bounds the whole call: a provider that keeps sending slowly is cut off at its deadline, and the
        call stops at the next chunk once the client has gone.
        """
        started = time.perf_counter()
        text: list[str] = []
        calls: dict[int, dict] = {}
        usage = None
        client = self._within(budget)
        with self._provider_errors():
            response = client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=temperature,
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
            # Closed however the loop ends, also when the caller stops reading (its client went away), so the
            # provider stops generating for nobody.
            with response:
                for chunk in response:
                    if budget is not None:
                        budget.remaining()
                    usage = chunk.usage or usage
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    if delta.content:
                        text.append(delta.content)
                        yield delta.content
                    for call in delta.tool_calls or []:
                        slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = call.id or slot["id"]
                        if call.function:
                            slot["name"] += call.function.name or ""
                            slot["arguments"] += call.function.arguments or ""
        return Completion(
            text="".join(text),
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_ms=round((time.perf_counter() - started) * 1000),
            tool_calls=[
                ToolCall(call["id"] or f"call_{index}", call["name"], call["arguments"])
                for index, call in sorted(calls.items())
            ],
        )

    def ask(self, system: str, user: str, **kwargs: Any) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self.complete(messages, **kwargs).text.strip()


def get_llm() -> LLMClient | None:
    if not settings.LLM_BASE_URL:
        return None
    return _client(settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_TIMEOUT)


@cache
def _client(base_url: str, api_key: str, model: str, timeout: float) -> LLMClient:
    return LLMClient(base_url, api_key, model, timeout)
