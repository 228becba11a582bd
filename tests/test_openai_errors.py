"""core.openai_errors: each exception the openai SDK raises becomes the embedder's EmbeddingError and the LLM
client's LLMError, each message naming the caller's own settings (core.embedders.remote, core.llm)."""

from collections.abc import Callable

import httpx
import openai
import pytest

from core.embedders.base import EmbeddingError
from core.embedders.remote import OpenAIEmbedder
from core.llm import LLMClient, LLMError

URL = "http://127.0.0.1:9/v1"  # never called: the exceptions are raised by the test
REQUEST = httpx.Request("POST", f"{URL}/chat/completions")


def status_error(cls: type[openai.APIStatusError], code: int, message: str) -> openai.APIStatusError:
    return cls(message, response=httpx.Response(code, request=REQUEST), body=None)


WHERE = "Embeddings API test-embed at 127.0.0.1:9"
LONG = "<html>" + "x" * 400 + "</html>"  # a provider's whole error page

# (the SDK's exception, the embedder's message, the LLM client's message)
CASES: dict[str, tuple[Callable[[], openai.OpenAIError], str, str]] = {
    "AuthenticationError": (
        lambda: status_error(openai.AuthenticationError, 401, "Incorrect API key provided"),
        f"{WHERE} refused the key (HTTP 401): check EMBED_API_KEY.",
        "the LLM provider refused LLM_API_KEY (401)",
    ),
    "PermissionDeniedError": (
        lambda: status_error(openai.PermissionDeniedError, 403, "Project lacks access to this model"),
        f"{WHERE} refused the key (HTTP 403): check EMBED_API_KEY.",
        "the LLM provider answered 403: Project lacks access to this model",
    ),
    "NotFoundError": (
        lambda: status_error(openai.NotFoundError, 404, "The model does not exist"),
        f"{WHERE} answered HTTP 404: check EMBED_MODEL_NAME and EMBED_BASE_URL (…/v1).",
        "the LLM provider does not know LLM_MODEL=test-chat or the URL is wrong",
    ),
    "InternalServerError": (
        lambda: status_error(openai.InternalServerError, 500, "upstream overloaded"),
        f"{WHERE} answered HTTP 500 (upstream overloaded): "
        "check EMBED_BASE_URL, EMBED_MODEL_NAME and EMBED_API_KEY, or retry later.",
        "the LLM provider answered 500: upstream overloaded",
    ),
    "RateLimitError with a long page": (
        lambda: status_error(openai.RateLimitError, 429, LONG),
        f"{WHERE} answered HTTP 429 ({LONG[:200]}…): "
        "check EMBED_BASE_URL, EMBED_MODEL_NAME and EMBED_API_KEY, or retry later.",
        f"the LLM provider answered 429: {LONG[:300]}…",
    ),
    "APITimeoutError": (
        lambda: openai.APITimeoutError(request=REQUEST),
        f"{WHERE} timed out after 7.5 s: check EMBED_BASE_URL.",
        f"the LLM at LLM_BASE_URL={URL} timed out (LLM_TIMEOUT)",
    ),
    "APIConnectionError": (
        lambda: openai.APIConnectionError(request=REQUEST),
        f"{WHERE} is unreachable (Connection error.): check EMBED_BASE_URL.",
        f"cannot reach the LLM at LLM_BASE_URL={URL}",
    ),
    "OpenAIError": (
        lambda: openai.OpenAIError("the response could not be parsed"),
        f"{WHERE} failed: the response could not be parsed",
        "the LLM call failed: the response could not be parsed",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_each_openai_error_becomes_the_embedders_message(name: str) -> None:
    make, expected, _ = CASES[name]
    embedder = OpenAIEmbedder(model="test-embed", api_key="sk-test", base_url=URL, timeout=7.5)
    raised = make()
    with pytest.raises(EmbeddingError) as translated, embedder._provider_errors():
        raise raised
    assert str(translated.value) == expected
    assert translated.value.__cause__ is raised


@pytest.mark.parametrize("name", CASES)
def test_each_openai_error_becomes_the_llm_clients_message(name: str) -> None:
    make, _, expected = CASES[name]
    llm = LLMClient(base_url=URL, api_key="sk-test", model="test-chat", timeout=7.5)
    raised = make()
    with pytest.raises(LLMError) as translated, llm._provider_errors():
        raise raised
    assert str(translated.value) == expected
    assert translated.value.__cause__ is raised


def test_an_error_of_our_own_passes_through_untouched() -> None:
    llm = LLMClient(base_url=URL, api_key="sk-test", model="test-chat", timeout=7.5)
    with pytest.raises(LLMError, match="^the LLM returned no choices$"), llm._provider_errors():
        raise LLMError("the LLM returned no choices")
