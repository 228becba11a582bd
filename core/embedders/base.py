"""What every embedder is: texts in, float32 rows of unit length out, for one named space (a Qdrant named vector).

Every embedder loads its weights lazily under a lock (importing its module is cheap), may be called from
several threads at once, truncates over-long texts, and returns float32 rows of unit length.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.text import CJK, LATIN


class EmbeddingError(Exception):
    """Vectors cannot be produced; the message says what to fix (usually an EMBED_* variable)."""


def _unit_rows(vectors: Any, dimension: int, source: str) -> np.ndarray:
    """float32 copy of ``vectors`` with unit-length rows; a zero or malformed vector is an error."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dimension:
        raise EmbeddingError(f"{source} returned vectors of shape {array.shape}, expected (n, {dimension}).")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0.0):
        raise EmbeddingError(f"{source} returned a zero or non-finite vector.")
    unit: np.ndarray = array / norms
    return unit


class _Recent:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: np.ndarray) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of one named space (a Qdrant named vector)."""

    name: str
    #: The scripts whose texts the model reads: an English-only vocabulary turns Chinese into [UNK]s, and a
    #: Chinese model ranks English poorly (bge-small-zh on MADial's English set: hit@1 0.11 against MiniLM's 0.50).
    reads: frozenset[str] = frozenset({LATIN, CJK})
    #: False for models that read both languages but rank a text in the query's language above a better answer in
    #: the other (multilingual-e5-small on the mixed dev set: hit@1 0.20 against USE's 0.64). Like one-language
    #: models they then compare only same-script pairs, and the cross-lingual ones bridge the languages.
    cross_lingual: bool = True
    #: Texts are cut to this many characters before tokenising, so a huge text costs bounded time.
    max_chars: int = 4000

    @property
    @abstractmethod
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimension), float32, rows L2-normalised; (0, dimension) for no texts."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; wrap a single text in a list")
        batch = [text[: self.max_chars] for text in texts]
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # _embed runs first, so a remote model's dimension is known when it is checked.
        return _unit_rows(self._embed(batch), self.dimension, self.describe())

    #: Recently embedded queries per model: a query asked again (a page's next request, an agent repeating
    #: itself, the evaluation page) is not embedded again.
    RECENT_QUERIES = 1024

    def embed_query(self, text: str) -> np.ndarray:
        """One search query's vector; models trained with query and passage prefixes embed it as a query."""
        text = text[: self.max_chars]
        recent: _Recent = self.__dict__.setdefault("_recent_queries", _Recent(self.RECENT_QUERIES))
        vector = recent.get(text)
        if vector is None:
            vector = _unit_rows(self._embed_query([text]), self.dimension, self.describe())[0]
            vector.setflags(write=False)  # shared by every caller that asks the same query
            recent.put(text, vector)
        return vector

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Raw vectors for a non-empty list of already truncated texts."""

    def _embed_query(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def describe(self) -> str:
        return f"{self.name} ({self.dimension}-d)"
