"""Remote embedders: any OpenAI-compatible embeddings API (OpenAI, DashScope text-embedding-v4, vLLM, Ollama, ...)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from core.cpu_slots import waiting_elsewhere
from core.embedders.base import Embedder, EmbeddingError
from core.openai_errors import ProviderWording, provider_errors, shortened


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible embeddings API (OpenAI, DashScope text-embedding-v4, vLLM, Ollama, ...)."""

    name = "openai"

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        batch_size: int | None = None,
        max_retries: int = 2,
        max_chars: int = 6000,
    ) -> None:
        self.model = model
        self.base_url = base_url or None
        self.timeout = timeout
        self.max_retries = max_retries
        # DashScope rejects more than 10 inputs per request for text-embedding-v4.
        self.batch_size = batch_size or (10 if "dashscope" in (base_url or "") else 64)
        # No offline tokenizer for these models: 6,000 characters stays under 8k tokens for CJK text too.
        self.max_chars = max_chars
        self._requested_dimension = dimension
        self._dimension = dimension
        self._api_key = api_key
        self._lock = threading.Lock()
        self._client: Any = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension probe"])  # the first response tells
        assert self._dimension is not None
        return self._dimension

    @property
    def _host(self) -> str:
        return urlsplit(self.base_url).netloc if self.base_url else "api.openai.com"

    def describe(self) -> str:
        size = f"{self._dimension}-d" if self._dimension else "dimension from first response"
        return f"openai ({self.model} at {self._host}, {size})"

    def _load(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import openai

                    self._client = openai.OpenAI(
                        api_key=self._api_key,
                        base_url=self.base_url,
                        timeout=self.timeout,
                        max_retries=self.max_retries,
                    )
        return self._client

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.concatenate(
            [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        )

    def _request(self, texts: list[str]) -> np.ndarray:
        where = self._where
        extra: dict[str, Any] = {}
        if self._requested_dimension:
            extra["dimensions"] = self._requested_dimension
        with self._provider_errors(), waiting_elsewhere():  # a remote model: this CPU slot serves another
            response = self._load().embeddings.create(
                model=self.model, input=texts, encoding_format="float", **extra
            )
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(texts) or not all(row.embedding for row in rows):
            raise EmbeddingError(f"{where} returned {len(rows)} embeddings for {len(texts)} texts.")
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        with self._lock:
            if self._dimension is None:
                self._dimension = int(vectors.shape[1])
        return vectors

    @property
    def _where(self) -> str:
        return f"Embeddings API {self.model} at {self._host}"

    def _provider_errors(self) -> AbstractContextManager[None]:
        """Every provider failure as an EmbeddingError naming the EMBED_ setting to check."""
        where = self._where
        return provider_errors(
            ProviderWording(
                refused=lambda exc: f"{where} refused the key (HTTP {exc.status_code}): check EMBED_API_KEY.",
                not_found=lambda exc: (
                    f"{where} answered HTTP 404: check EMBED_MODEL_NAME and EMBED_BASE_URL (…/v1)."
                ),
                status=lambda exc: (
                    f"{where} answered HTTP {exc.status_code} ({shortened(exc.message, 200)}): "
                    "check EMBED_BASE_URL, EMBED_MODEL_NAME and EMBED_API_KEY, or retry later."
                ),
                timeout=lambda exc: f"{where} timed out after {self.timeout:g} s: check EMBED_BASE_URL.",
                unreachable=lambda exc: f"{where} is unreachable ({exc}): check EMBED_BASE_URL.",
                failed=lambda exc: f"{where} failed: {exc}",
            ),
            EmbeddingError,
        )
