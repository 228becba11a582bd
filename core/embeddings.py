"""The set of named dense vectors Mnemo stores per Qdrant point, built from the settings; the embedders
themselves are core.embedders.

Django-free on purpose: settings build an :class:`EmbeddingSet` with :func:`build_embedding_set`
(the Hello-Agents env names: EMBED_MODEL_TYPE, EMBED_MODEL_NAME, EMBED_API_KEY, EMBED_BASE_URL),
and benchmarks and tests use this module without Django.

No offline model serves every pair of languages: all-MiniLM-L6-v2 and bge-small-en read English only,
bge-small-zh Chinese only, multilingual-e5-small reads both but ranks a text in the query's language above a
better answer in the other, and multilingual USE bridges the languages but is weak on English dialogue. The
default "local" set (MiniLM, USE, bge-small-zh: chosen by bench/retrieval_eval.py as the best left-out quality
within 15 ms of query CPU; with bge-small-en too it scored lower) stores every vector for every text, and
:meth:`EmbeddingSet.readers` gives each query-text pair to the models that can read it. A Chinese query still
finds English texts (and vice versa) through the "use" vector.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from core.embedders.base import Embedder, EmbeddingError
from core.embedders.local import (
    BgeSmallEnEmbedder,
    BgeSmallZhEmbedder,
    MiniLMEmbedder,
    MultilingualE5Embedder,
    UniversalSentenceEncoder,
)
from core.embedders.remote import OpenAIEmbedder
from core.parallel import in_parallel
from core.text import CJK, LATIN

MODEL_TYPES = ("local", "minilm", "use", "e5", "bge_zh", "bge_en", "openai", "dashscope", "compatible")
LOCAL_MODELS = ("minilm", "use", "e5", "bge_zh", "bge_en")
_REMOTE_TYPES = ("openai", "dashscope", "compatible")
_DEFAULT_REMOTE_MODELS = {"openai": "text-embedding-3-small", "dashscope": "text-embedding-v4"}
_DEFAULT_BASE_URLS = {"dashscope": "https://dashscope.aliyuncs.com/compatible-mode/v1"}


class EmbeddingSet:
    """The named dense vectors stored per point, and how a query weighs them."""

    #: Recently embedded documents: a new memory is embedded to look for its near-duplicates and again by the
    #: vector mirror right after the commit; the second embedding comes from here.
    RECENT_DOCUMENTS = 4096

    def __init__(self, embedders: Sequence[Embedder], label: str = "custom") -> None:
        if not embedders:
            raise ValueError("an EmbeddingSet needs at least one embedder")
        self._recent: OrderedDict[str, dict[str, np.ndarray]] = OrderedDict()
        self._recent_lock = threading.Lock()
        self.spaces: dict[str, Embedder] = {}
        for embedder in embedders:
            if embedder.name in self.spaces:
                raise ValueError(f"two embedders are named {embedder.name!r}")
            self.spaces[embedder.name] = embedder
        self.label = label

    @property
    def dimensions(self) -> dict[str, int]:
        return {name: embedder.dimension for name, embedder in self.spaces.items()}

    def embed_documents(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Every space for every text: a point needs all its named vectors to be found from any query."""
        with self._recent_lock:
            known = {text: self._recent[text] for text in texts if text in self._recent}
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            # Side by side, like a query's (core.hybrid.gather): an add waits for its slowest model, not for all of them.
            names = list(self.spaces)
            rows = in_parallel(names, lambda name: self.spaces[name].embed(missing))
            fresh = dict(zip(names, rows, strict=True))
            with self._recent_lock:
                for index, text in enumerate(missing):
                    known[text] = self._recent[text] = {name: rows[index] for name, rows in fresh.items()}
                while len(self._recent) > self.RECENT_DOCUMENTS:
                    self._recent.popitem(last=False)
        return {
            name: np.stack([known[text][name] for text in texts])
            if texts
            else np.zeros((0, embedder.dimension), dtype=np.float32)
            for name, embedder in self.spaces.items()
        }

    def embed_query(self, text: str, spaces: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """The query's vector in each of `spaces` (default: all)."""
        names = self.spaces if spaces is None else spaces
        return {name: self.spaces[name].embed_query(text) for name in names}

    def readers(self, query_script: str, text_script: str) -> list[str]:
        """The spaces that read a query in one script against a text in another: both scripts among the
        model's `reads`, and the same script unless the model is cross-lingual. When no model of the set reads
        the pair (a set of one English model, a Chinese query), all of them rank it, as best they can."""
        readers = [
            name
            for name, embedder in self.spaces.items()
            if {query_script, text_script} <= embedder.reads
            and (embedder.cross_lingual or query_script == text_script)
        ]
        return readers or list(self.spaces)

    def pair_weights(self, query_script: str, text_script: str, bound_share: float) -> dict[str, float]:
        """Per space, its share of one similarity between a query and a text (summing to 1): among the readers,
        the script-bound ones share `bound_share` and the cross-lingual ones the rest, when there are both."""
        readers = self.readers(query_script, text_script)
        bound = [name for name in readers if not self.spaces[name].cross_lingual]
        bridging = [name for name in readers if self.spaces[name].cross_lingual]
        weights = dict.fromkeys(self.spaces, 0.0)
        if not bound or not bridging:  # nothing to choose between
            weights.update({name: 1.0 / len(readers) for name in readers})
            return weights
        weights.update({name: bound_share / len(bound) for name in bound})
        weights.update({name: (1.0 - bound_share) / len(bridging) for name in bridging})
        return weights

    def spaces_reading(self, query_script: str) -> list[str]:
        """The spaces that read a query in this script against a text in either script."""
        reading = {name for text_script in (LATIN, CJK) for name in self.readers(query_script, text_script)}
        return [name for name in self.spaces if name in reading]

    def describe(self) -> str:
        """E.g. "local: minilm (384-d, onnx int8) + use (512-d)" (never calls a remote API)."""
        return f"{self.label}: " + " + ".join(embedder.describe() for embedder in self.spaces.values())


def check_model_type(model_type: str) -> str:
    """EMBED_MODEL_TYPE normalised: one of MODEL_TYPES, or distinct LOCAL_MODELS joined by "+"."""
    kind = model_type.strip().lower()
    parts = kind.split("+")
    if kind in MODEL_TYPES or (set(parts) <= set(LOCAL_MODELS) and len(set(parts)) == len(parts)):
        return kind
    raise EmbeddingError(
        f"EMBED_MODEL_TYPE={model_type!r} is not one of {', '.join(MODEL_TYPES)}"
        f" or local models joined by '+' (e.g. e5+use)."
    )


def build_embedding_set(
    model_type: str = "local",
    model_name: str = "",
    api_key: str = "",
    base_url: str = "",
    timeout: float = 30.0,
) -> EmbeddingSet:
    """The set EMBED_MODEL_TYPE names; nothing loads or connects until the first embed."""
    kind = check_model_type(model_type or "local")
    local: dict[str, type[Embedder]] = {
        "minilm": MiniLMEmbedder,
        "use": UniversalSentenceEncoder,
        "e5": MultilingualE5Embedder,
        "bge_zh": BgeSmallZhEmbedder,
        "bge_en": BgeSmallEnEmbedder,
    }
    if kind == "local":
        # The set bench/retrieval_eval.py chose: the best left-out quality among the sets whose query
        # embeddings cost at most 15 ms of CPU (bench/results/retrieval.md, model_costs.md).
        return EmbeddingSet(
            [MiniLMEmbedder(), UniversalSentenceEncoder(), BgeSmallZhEmbedder()],
            label="local",
        )
    if kind not in _REMOTE_TYPES:  # "e5", or local models joined by "+" such as "e5+use"
        return EmbeddingSet([local[part]() for part in kind.split("+")], label=kind)
    if not api_key:
        raise EmbeddingError(f"EMBED_MODEL_TYPE={kind} calls a remote API: set EMBED_API_KEY.")
    model = model_name or _DEFAULT_REMOTE_MODELS.get(kind, "")
    if not model:
        raise EmbeddingError(f"EMBED_MODEL_TYPE={kind} needs EMBED_MODEL_NAME (the provider's model id).")
    url = base_url or _DEFAULT_BASE_URLS.get(kind, "")
    if kind == "compatible" and not url:
        raise EmbeddingError("EMBED_MODEL_TYPE=compatible needs EMBED_BASE_URL (e.g. http://host:8000/v1).")
    embedder = OpenAIEmbedder(model=model, api_key=api_key, base_url=url or None, timeout=timeout)
    return EmbeddingSet([embedder], label=kind)


def build_embedding_set_from_env(environ: Mapping[str, str] | None = None) -> EmbeddingSet:
    """:func:`build_embedding_set` from EMBED_MODEL_TYPE / _NAME / _API_KEY / _BASE_URL / _TIMEOUT."""
    env = os.environ if environ is None else environ
    try:
        timeout = float(env.get("EMBED_TIMEOUT") or 30.0)
    except ValueError as exc:
        raise EmbeddingError(
            f"EMBED_TIMEOUT={env.get('EMBED_TIMEOUT')!r} is not a number of seconds."
        ) from exc
    return build_embedding_set(
        model_type=env.get("EMBED_MODEL_TYPE", "local"),
        model_name=env.get("EMBED_MODEL_NAME", ""),
        api_key=env.get("EMBED_API_KEY", ""),
        base_url=env.get("EMBED_BASE_URL", ""),
        timeout=timeout,
    )
