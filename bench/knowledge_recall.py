"""Knowledge-search retrieval quality on LoCoMo: evidence and session recall, and a sweep of the fusion's RRF_K.

    .venv/bin/python bench/knowledge_recall.py                         # all 10 conversations (~6 min here)
    .venv/bin/python bench/knowledge_recall.py --conversations 1-2     # quick run (no report unless --write)
    .venv/bin/python bench/knowledge_recall.py --chunk-sizes 800/100   # one chunking only

In-process, on the embedded defaults (SQLite + Qdrant Edge + the local embedders, no LLM) in a fresh temporary
MNEMO_DATA_DIR that is removed at the end (--keep keeps it). Prints Markdown tables and, for a full run, writes
bench/results/knowledge_recall.md.

One user per LoCoMo conversation; every session of it is one Markdown document (`# Session N — <date>`, then
one paragraph per turn, `[D3:12] Speaker: text [shares a photo: …]`) ingested through
knowledge.services.document_create_from_text(background=False), i.e. the whole pipeline inline, once per chunking
(chunk_size/overlap in tokens), each chunking in its own namespace. A chunk holds the turns whose `[D…]` marker
is in its text (plus, for a turn cut into several pieces, the turn the chunk continues). Every question of
categories 1-4 is asked through knowledge.search.search_chunks(limit=10, no MQE/HyDE): evidence recall@k (any
evidence turn inside one of the top k chunks) and session recall@k (the session document of any evidence turn
among the top k chunks' documents). The signal rankings are fetched once per question and re-fused for each
RRF_K (core.hybrid.signal_rankings wrapped with a cache, core.hybrid.RRF_K set), as memory_bench's sweep does.
BM25 (rank_bm25 Okapi over lower-cased `\\w+` tokens of the chunk texts, per user) is the baseline row.

LoCoMo data is read from ../shared/bench/locomo10.json (CC BY-NC 4.0; never copied into the repository).
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))

# isort: off
import config  # noqa: E402,F401 - the app's process setup (OPENBLAS_NUM_THREADS) must run before numpy loads
import numpy as np  # noqa: E402
from memory_bench import (  # noqa: E402
    CATEGORIES,
    Conversation,
    Question,
    bm25_class,
    bm25_tokens,
    load,
    load_locomo,
    machine,
    parse_selection,
    session_of,
    versions,
)

# isort: on

RESULTS = ROOT / "bench" / "results"
RRF_KS = (3, 5, 10, 20, 40, 60)
KS = (1, 5, 10)
LIMIT = 10
COMPARED = (5, 20)  # the two RRF_K values the Reading section compares
_MARKER = re.compile(r"\[(D\d+:\d+)\]")


# --- Documents -------------------------------------------------------------------------------------------------


def session_documents(conv: Conversation) -> dict[int, tuple[str, str]]:
    """Session number → (title, Markdown): a heading, then one paragraph per turn led by its dia_id."""
    turns = defaultdict(list)
    for turn in conv.turns:
        turns[turn.session].append(turn)
    documents = {}
    for session, items in sorted(turns.items()):
        when = items[0].created_at
        title = f"Session {session} — {when:%-I:%M %p} on {when.day} {when:%B, %Y}"
        body = "\n\n".join(f"[{t.dia_id}] {t.content}" for t in items)
        documents[session] = (title, f"# {title}\n\n{body}\n")
    return documents


def chunk_turns(texts: list[str]) -> list[set[str]]:
    """The dia_ids in each chunk of one document (chunks in ordinal order).

    A turn's marker starts its paragraph, so a chunk holds the turns whose marker it contains. Text before the
    first marker is either overlap copied from the previous chunk (already counted there) or, when a turn was too
    long for one chunk and was cut, the next piece of that turn: the latter also counts as the turn.
    """
    out: list[set[str]] = []
    previous, current = "", None
    for text in texts:
        ids = _MARKER.findall(text)
        first = _MARKER.search(text)
        lead = (text[: first.start()] if first else text).strip()
        found = set(ids)
        if lead and current and lead not in previous:
            found.add(current)
        out.append(found)
        if ids:
            current = ids[-1]
        previous = text
    return out


# --- Scoring ---------------------------------------------------------------------------------------------------


@dataclass
class Scores:
    """Per question: the top chunks' turn sets and sessions, scored against the question's evidence."""

    rows: list[tuple[Question, list[set[str]], list[int]]] = field(default_factory=list)

    def add(self, question: Question, turns: list[set[str]], sessions: list[int]) -> None:
        self.rows.append((question, turns[:LIMIT], sessions[:LIMIT]))

    def hits(self) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = {}
        for k in KS:
            out[f"c@{k}"] = [
                any(e in ids for ids in turns[:k] for e in q.evidence) for q, turns, _ in self.rows
            ]
            out[f"s@{k}"] = [
                bool({session_of(e) for e in q.evidence} & set(sessions[:k])) for q, _, sessions in self.rows
            ]
        return out

    def metrics(self) -> dict[str, float]:
        return {
            name: float(np.mean(values)) if values else float("nan") for name, values in self.hits().items()
        }


def mcnemar(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """Questions only a finds, only b finds, and the exact two-sided McNemar (sign test) p-value."""
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    n = only_a + only_b
    if not n:
        return 0, 0, 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n
    return only_a, only_b, min(1.0, 2 * tail)


# --- Django ----------------------------------------------------------------------------------------------------


# --- One chunking ----------------------------------------------------------------------------------------------


@dataclass
class Chunking:
    size: int
    overlap: int
    ingest_s: float = 0.0
    documents: int = 0
    chunks: int = 0
    turn_slots: int = 0  # sum over chunks of the turns each holds
    uncovered: int = 0  # turns found in no chunk (should be 0)
    max_user_chunks: int = 0
    search_ms: list[float] = field(default_factory=list)
    sweep: dict[int, Scores] = field(default_factory=dict)
    ties: dict[int, int] = field(default_factory=dict)  # questions whose first two hits have the same score
    bm25: Scores = field(default_factory=Scores)
    signals: dict[str, Scores] = field(default_factory=dict)  # each signal's own ranking, before fusion

    @property
    def namespace(self) -> str:
        return f"c{self.size}-{self.overlap}"

    @property
    def label(self) -> str:
        return f"chunk_size {self.size} / overlap {self.overlap} tokens"


def parse_chunkings(text: str) -> list[Chunking]:
    out = []
    for part in text.split(","):
        size, _, overlap = part.strip().partition("/")
        out.append(Chunking(int(size), int(overlap or 0)))
    return out


def own_vector_store(data_dir: Path, chunking: Chunking) -> None:
    """Point the embedded vector store at a fresh directory for this chunking.

    The sparse signal's IDF is computed by the store over the whole collection (every user and namespace), so
    chunkings sharing one collection would weigh each other's terms; each gets its own Edge store instead.
    """
    from django.conf import settings

    from core import stores

    stores.reset(embeddings=False)
    stores._ready_collections.clear()
    settings.QDRANT_EDGE_PATH = data_dir / f"qdrant-edge-{chunking.namespace}"


def ingest(users: dict, conversations: list[Conversation], chunking: Chunking) -> None:
    from knowledge.models import DocumentStatus
    from knowledge.services import document_create_from_text

    began = time.perf_counter()
    for conv in conversations:
        for title, markdown in session_documents(conv).values():
            document = document_create_from_text(
                user=users[conv.sample_id],
                text=markdown,
                title=title,
                namespace=chunking.namespace,
                chunk_size=chunking.size,
                chunk_overlap=chunking.overlap,
                background=False,
            ).document
            document.refresh_from_db()
            if document.status != DocumentStatus.READY:
                raise RuntimeError(f"{conv.sample_id} {title}: {document.status} {document.error}")
            chunking.documents += 1
    chunking.ingest_s = time.perf_counter() - began


def chunk_index(user, conv: Conversation, chunking: Chunking) -> dict[str, tuple[set[str], int, str]]:
    """Chunk id → (dia_ids it holds, its session, its text) for one user's chunks in this chunking."""
    from knowledge.models import Chunk, Document

    sessions = {}
    for document in Document.objects.filter(user=user, namespace=chunking.namespace):
        match = re.match(r"Session (\d+) ", document.title)
        sessions[document.pk] = int(match.group(1))
    by_document = defaultdict(list)
    rows = Chunk.objects.filter(user=user, namespace=chunking.namespace).order_by("document_id", "ordinal")
    for chunk in rows:
        by_document[chunk.document_id].append(chunk)
    index = {}
    for document_id, chunks in by_document.items():
        for chunk, ids in zip(chunks, chunk_turns([c.text for c in chunks]), strict=True):
            index[str(chunk.pk)] = (ids, sessions[document_id], chunk.text)
    covered = set().union(*(ids for ids, _, _ in index.values()))
    chunking.chunks += len(index)
    chunking.turn_slots += sum(len(ids) for ids, _, _ in index.values())
    chunking.uncovered += len({t.dia_id for t in conv.turns} - covered)
    chunking.max_user_chunks = max(chunking.max_user_chunks, len(index))
    return index


def evaluate(users: dict, conversations: list[Conversation], chunking: Chunking) -> None:
    from core import hybrid
    from knowledge import search

    now = hybrid.RRF_K
    fetch = hybrid.signal_rankings
    cache: dict[tuple, dict] = {}

    def cached(store, collection, *, query, where, limit, dense_text=None):
        key = (where["user_id"], tuple(where["namespace"]), query, limit, dense_text)
        if key not in cache:
            began = time.perf_counter()
            cache[key] = fetch(
                store, collection, query=query, where=where, limit=limit, dense_text=dense_text
            )
            fetch_ms[0] += (time.perf_counter() - began) * 1000
        last[0] = cache[key]
        return cache[key]

    fetch_ms = [0.0]
    last: list[dict] = [{}]
    bm25_cls, _ = bm25_class()
    hybrid.signal_rankings = cached
    try:
        for conv in conversations:
            user = users[conv.sample_id]
            index = chunk_index(user, conv, chunking)
            for k in sorted(
                RRF_KS, key=lambda value: value != now
            ):  # the code's value first: it times the fetch
                hybrid.RRF_K = k
                scores = chunking.sweep.setdefault(k, Scores())
                for question in conv.questions:
                    fetch_ms[0] = 0.0
                    began = time.perf_counter()
                    result = search.search_chunks(
                        user=user,
                        query=question.text,
                        namespaces=[chunking.namespace],
                        limit=LIMIT,
                        mqe=False,
                        hyde=False,
                    )
                    if k == now:
                        chunking.search_ms.append((time.perf_counter() - began) * 1000)
                        for name, ranking in last[0].items():
                            top = [point_id for point_id, _ in ranking[:LIMIT] if point_id in index]
                            chunking.signals.setdefault(name, Scores()).add(
                                question, [index[i][0] for i in top], [index[i][1] for i in top]
                            )
                    ids = [str(hit.chunk.pk) for hit in result.hits]
                    tied = len(result.hits) > 1 and result.hits[0].score == result.hits[1].score
                    chunking.ties[k] = chunking.ties.get(k, 0) + tied
                    scores.add(question, [index[i][0] for i in ids], [index[i][1] for i in ids])
            ids = list(index)
            bm25 = bm25_cls([bm25_tokens(index[i][2]) for i in ids])
            for question in conv.questions:
                order = np.argsort(-np.asarray(bm25.get_scores(bm25_tokens(question.text))), kind="stable")
                top = [ids[i] for i in order[:LIMIT]]
                chunking.bm25.add(question, [index[i][0] for i in top], [index[i][1] for i in top])
            print(
                f"  {chunking.namespace} {conv.sample_id}: {len(index)} chunks, {len(conv.questions)} questions, "
                f"evidence R@10 now {chunking.sweep[now].metrics()['c@10']:.3f} so far",
                flush=True,
            )
    finally:
        hybrid.signal_rankings = fetch
        hybrid.RRF_K = now


# --- Report ----------------------------------------------------------------------------------------------------


def table(chunking: Chunking, now: int) -> list[str]:
    lines = [
        "| ranking | evidence R@1 | evidence R@5 | evidence R@10 | session R@1 | session R@5 | session R@10 "
        "| tied for #1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        (f"hybrid, RRF_K {k}{' (now)' if k == now else ''}", chunking.sweep[k], str(chunking.ties.get(k, 0)))
        for k in RRF_KS
    ]
    rows += [(f"signal alone: {name}", scores, "–") for name, scores in sorted(chunking.signals.items())]
    rows.append(("BM25 over the chunks", chunking.bm25, "–"))
    for label, scores, ties in rows:
        m = scores.metrics()
        cells = " | ".join(f"{m[f'{t}@{k}']:.3f}" for t in "cs" for k in KS)
        lines.append(f"| {label} | {cells} | {ties} |")
    return lines


def header(chunking: Chunking, conversations: list[Conversation], now: int) -> str:
    questions = sum(len(c.questions) for c in conversations)
    users = len(conversations)
    return (
        f"{questions} questions, {chunking.documents} documents (sessions), {chunking.chunks} chunks "
        f"({chunking.chunks / users:.0f} per user on average, at most {chunking.max_user_chunks}; "
        f"{chunking.chunks / chunking.documents:.2f} per session), "
        f"{chunking.turn_slots / chunking.chunks:.2f} turns/chunk (a turn repeated in an overlap counts in both "
        f"chunks), {chunking.uncovered} turns in no chunk; ingest {chunking.ingest_s:.0f} s; "
        f"search_chunks p50 {np.percentile(chunking.search_ms, 50):.0f} ms at RRF_K {now}."
    )


def best(chunking: Chunking, metric: str) -> tuple[list[int], float]:
    values = {k: chunking.sweep[k].metrics()[metric] for k in RRF_KS}
    top = max(values.values())
    return [k for k, v in values.items() if abs(v - top) < 1e-12], top


def reading(chunking: Chunking, now: int, users: int) -> str:
    metrics = {k: chunking.sweep[k].metrics() for k in RRF_KS}
    names = {f"c@{k}": f"evidence R@{k}" for k in KS} | {f"s@{k}": f"session R@{k}" for k in KS}
    bests = []
    for metric, name in names.items():
        ks, value = best(chunking, metric)
        bests.append(f"{name} {value:.3f} at RRF_K {'/'.join(map(str, ks))}")
    mean = {k: np.mean([metrics[k][m] for m in names]) for k in RRF_KS}
    overall = max(RRF_KS, key=lambda k: (mean[k], -abs(k - now)))
    five, twenty = (chunking.sweep[k] for k in COMPARED)
    hits5, hits20 = five.hits(), twenty.hits()
    diffs = []
    for metric, name in names.items():
        only5, only20, p = mcnemar(hits5[metric], hits20[metric])
        delta = metrics[COMPARED[0]][metric] - metrics[COMPARED[1]][metric]
        diffs.append(
            f"{name} {delta:+.3f} ({only5} questions only at {COMPARED[0]}, {only20} only at {COMPARED[1]}, p={p:.2g})"
        )
    bm = chunking.bm25.metrics()
    per_user = chunking.chunks / users
    share = min(1.0, LIMIT / per_user)
    granularity = (
        ": R@10 says little at this granularity, R@1 and R@5 are the informative columns"
        if share >= 0.2
        else ", so R@10 still separates the rankings"
    )
    signal_r1 = {name: scores.metrics()["c@1"] for name, scores in chunking.signals.items()}
    strongest = max(signal_r1, key=signal_r1.get) if signal_r1 else ""
    signals = ", ".join(f"{name} {value:.3f}" for name, value in sorted(signal_r1.items()))
    lines = [
        f"- {chunking.label}:",
        f"  - Best RRF_K per metric: {'; '.join(bests)}. Averaged over the six metrics RRF_K {overall} does best "
        f"({mean[overall]:.3f}; RRF_K {now}, the code's value, {mean[now]:.3f}; spread across the sweep "
        f"{max(mean.values()) - min(mean.values()):.3f}).",
        f"  - RRF_K {COMPARED[0]} − RRF_K {COMPARED[1]}: {'; '.join(diffs)} (exact McNemar test on the same "
        "questions).",
        f"  - Against BM25 over the same chunks, the hybrid is {metrics[now]['c@1'] - bm['c@1']:+.3f} at evidence "
        f"R@1 and {metrics[now]['c@10'] - bm['c@10']:+.3f} at R@10 with RRF_K {now}, "
        f"{metrics[overall]['c@1'] - bm['c@1']:+.3f} and {metrics[overall]['c@10'] - bm['c@10']:+.3f} with RRF_K "
        f"{overall}. Each signal alone (its raw top 10) reaches evidence R@1 {signals}: {strongest} is the "
        "strongest single signal at R@1.",
        f"  - Granularity: {chunking.turn_slots / chunking.chunks:.1f} turns per chunk and {per_user:.0f} chunks "
        f"per user, so the top 10 is {share:.0%} of a user's chunks on average{granularity}.",
    ]
    return "\n".join(lines)


def summary(chunkings: list[Chunking], now: int) -> str:
    """The first Reading bullet: the best RRF_K over all chunkings, and how 5 and 20 compare cell by cell."""
    names = [f"{t}@{k}" for t in "cs" for k in KS]
    per = {}
    for chunking in chunkings:
        metrics = {k: chunking.sweep[k].metrics() for k in RRF_KS}
        per[chunking.namespace] = {k: float(np.mean([metrics[k][m] for m in names])) for k in RRF_KS}
    mean = {k: float(np.mean([values[k] for values in per.values()])) for k in RRF_KS}
    overall = max(RRF_KS, key=lambda k: (mean[k], -abs(k - now)))
    a, b = COMPARED
    cells = [
        chunking.sweep[a].metrics()[m] - chunking.sweep[b].metrics()[m]
        for chunking in chunkings
        for m in names
    ]
    winners = "; ".join(
        f"{chunking.size}/{chunking.overlap}: RRF_K {max(RRF_KS, key=lambda k, v=per[chunking.namespace]: v[k])}"
        for chunking in chunkings
    )
    return (
        f"- Best RRF_K for knowledge search on this data: {overall} (mean of the six recall figures over the "
        f"{len(chunkings)} chunking(s): {mean[overall]:.3f}, against {mean[now]:.3f} at RRF_K {now}, the code's "
        f"value). Best per chunking: {winners}. RRF_K {a} is ahead of {b} in {sum(d > 0 for d in cells)}, level in "
        f"{sum(d == 0 for d in cells)} and behind in {sum(d < 0 for d in cells)} of the {len(cells)} "
        f"(chunking × metric) cells; mean difference {np.mean(cells):+.3f}. The memory side's sweep is in "
        "bench/results/locomo.md (Fusion sweep)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", default="1-10", help="e.g. 1-2 or 1,4,7 (default 1-10)")
    parser.add_argument(
        "--chunk-sizes",
        default="800/100,200/25,100/10",
        help="chunk_size/overlap pairs in tokens, each in its own namespace (default 800/100 = the API's "
        "default, then 200/25 and 100/10 to see finer chunks)",
    )
    parser.add_argument("--write", action="store_true", help="write the report even for a partial run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    args = parser.parse_args()
    selection = parse_selection(args.conversations)
    conversations = load_locomo(selection)
    chunkings = parse_chunkings(args.chunk_sizes)
    info_before = machine()
    started_at = datetime.now(UTC)
    t_start = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-knowledge-recall-"))
    try:
        setup_django(data_dir)
        from django.contrib.auth import get_user_model

        from core import hybrid, stores
        from knowledge import search

        now, candidates = hybrid.RRF_K, search.CANDIDATES
        began = time.perf_counter()
        stores.embedding_set().embed_documents(["warm-up"])
        model_load = time.perf_counter() - began
        users = {
            c.sample_id: get_user_model().objects.create_user(f"locomo-{c.sample_id}", password=None)
            for c in conversations
        }
        for chunking in chunkings:
            print(f"Ingesting {chunking.label} …", flush=True)
            own_vector_store(data_dir, chunking)
            ingest(users, conversations, chunking)
            print(f"  {chunking.documents} documents in {chunking.ingest_s:.0f} s; searching …", flush=True)
            evaluate(users, conversations, chunking)
        embedder = stores.embedding_set().describe()
        stores.reset()
    finally:
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    info_after = load()
    minutes = (time.perf_counter() - t_start) / 60
    _, bm25_label = bm25_class()

    sections = []
    for chunking in chunkings:
        lines = table(chunking, now)
        print(f"\n{chunking.label}: {header(chunking, conversations, now)}\n")
        print("\n".join(lines))
        sections.append(
            f"## {chunking.label}\n\n{header(chunking, conversations, now)}\n\n" + "\n".join(lines) + "\n"
        )
    readings = [summary(chunkings, now)] + [
        reading(chunking, now, len(conversations)) for chunking in chunkings
    ]
    print("\n" + "\n".join(readings))
    print(f"\n{minutes:.1f} min in all (model load {model_load:.1f} s)")
    if not (len(selection) == 10 or args.write):
        print(
            "\n(not a full 10-conversation run: bench/results/knowledge_recall.md left unchanged; --write forces it)"
        )
        return
    notes = [f"{c.sample_id}: {note}" for c in conversations for note in c.evidence_notes]
    skipped = sum(c.skipped for c in conversations)
    command = ("bench/knowledge_recall.py " + " ".join(sys.argv[1:])).strip()
    category_counts = ", ".join(
        f"{cat} {name} {sum(q.category == cat for c in conversations for q in c.questions)}"
        for cat, name in CATEGORIES.items()
    )
    report = f"""# Knowledge search on LoCoMo: retrieval recall and the fusion's RRF_K

Measured {started_at:%Y-%m-%d %H:%M} UTC by `{command}` ({minutes:.0f} min).
Machine: nproc {info_before["nproc"]}, {info_before["cpu"]}; load average (1/5/15 min) {info_before["load"]} before,
{info_after} after. The machine is shared and noisy: timings move between runs. Recall figures repeat up to ties:
hits with the same fused score keep the order SQLite returns their (random UUID) chunk ids in, so the few questions
counted under "tied for #1" (and ties further down) can move between runs, by about 0.01 at R@1.
Versions: {versions(["rank_bm25"])}. Embedders: {embedder}.

## Method

- Data: LoCoMo (Maharana et al., ACL 2024; `locomo10.json`, CC BY-NC 4.0), read from `../shared/bench/`,
  conversations {args.conversations}.
- In-process on the embedded defaults (SQLite, Qdrant Edge, MiniLM int8 + USE dense vectors and the jieba/bigram
  sparse vector, no LLM) in a temporary `MNEMO_DATA_DIR`, removed at the end. One user per conversation, so no
  user sees another's documents. Every session is one Markdown document: `# Session N — <session date>`, then one
  paragraph per turn, `[D3:12] Speaker: text` plus `[shares a photo: <blip_caption>]` when the turn has one (the
  content string memory_bench stores as a memory). Documents go through
  `knowledge.services.document_create_from_text(..., background=False)`: conversion, heading-aware paragraphs,
  token chunks, embedding and indexing inline. Each chunking below is a separate ingestion into its own
  namespace and its own Edge store (`QDRANT_EDGE_PATH` switched between chunkings: the sparse signal's IDF is
  taken over the whole collection, so chunkings sharing one would weigh each other's terms); model load
  {model_load:.1f} s before the first one, not counted.
- A chunk holds the turns whose `[D…]` marker is in its text, plus the turn it continues when a turn was too long
  for one chunk and was cut (text before the first marker that is not overlap from the previous chunk). The
  markers are part of the indexed text for every ranking alike.
- Questions: categories 1-4 ({category_counts}), each asked as
  `knowledge.search.search_chunks(user, question, namespaces=[<chunking>], limit=10)` with MQE and HyDE off.
  Evidence ids are normalised as in memory_bench (`D8:6; D9:17` split, `D:11:26` → `D11:26`, `D30:05` → `D30:5`,
  ids naming no turn dropped; {skipped} questions left without evidence skipped). Changes made:
  {"; ".join(notes) if notes else "none"}.
- Metrics: evidence R@k = share of questions with any evidence turn inside one of the top k chunks; session R@k =
  the session (document) of any evidence turn among the top k chunks' documents.
- RRF_K sweep: `core.hybrid.signal_rankings` is wrapped with a cache, so each question's signal rankings (one per
  dense space and the sparse one, {candidates} candidates each as search_chunks asks) are fetched once and re-fused by
  `core.hybrid.fuse` with `core.hybrid.RRF_K` set to {", ".join(map(str, RRF_KS))}; "(now)" marks the code's value.
  Everything after the fusion (the noise floor, the owner check, the top 10) is the code's.
- BM25: {bm25_label} over lower-cased `\\w+` tokens of the chunk texts, one index per user and chunking.

{chr(10).join(sections)}
## Reading

{chr(10).join(readings)}
"""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "knowledge_recall.md").write_text(report)
    print(f"\nWrote {(RESULTS / 'knowledge_recall.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
