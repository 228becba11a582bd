"""Knowledge-search retrieval quality on LoCoMo: evidence and session recall of the search and of each signal alone.

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
among the top k chunks' documents), and MRR (1/rank of the first chunk holding an evidence turn, 0 outside the
top 10). Each signal alone is core.hybrid.signal_rankings under the filter search_chunks applies (this user,
this namespace), limit 10: that signal's own top 10 chunks, before fusion. BM25 (rank_bm25 Okapi over lower-cased
`\\w+` tokens of the chunk texts, per user) is the baseline row.

LoCoMo data is read from ../shared/bench/locomo10.json (CC BY-NC 4.0; never copied into the repository).
"""

from __future__ import annotations

import argparse
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
KS = (1, 5, 10)
LIMIT = 10
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

    def mrr(self) -> float:
        ranks = [
            next((1 / rank for rank, ids in enumerate(turns, 1) if ids & set(q.evidence)), 0.0)
            for q, turns, _ in self.rows
        ]
        return float(np.mean(ranks)) if ranks else float("nan")

    def metrics(self) -> dict[str, float]:
        out = {
            name: float(np.mean(values)) if values else float("nan") for name, values in self.hits().items()
        }
        return out | {"mrr": self.mrr()}


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
    search: Scores = field(default_factory=Scores)  # the product: search_chunks
    ties: int = 0  # questions whose first two hits have the same score
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

    from core import hybrid, stores

    stores.reset(embeddings=False)
    hybrid._ready_collections.clear()
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


def add(scores: Scores, question: Question, index: dict, ids: list[str]) -> None:
    """Score one question's ranked chunk ids (best first) by the turns and sessions they hold."""
    scores.add(question, [index[i][0] for i in ids], [index[i][1] for i in ids])


def evaluate(users: dict, conversations: list[Conversation], chunking: Chunking) -> None:
    from core import hybrid
    from knowledge import search
    from knowledge.mirror import COLLECTION, chunk_store

    bm25_cls, _ = bm25_class()
    for conv in conversations:
        user = users[conv.sample_id]
        index = chunk_index(user, conv, chunking)
        where = {"user_id": str(user.pk), "namespace": [chunking.namespace]}  # as search_chunks filters
        for question in conv.questions:
            began = time.perf_counter()
            result = search.search_chunks(
                user=user,
                query=question.text,
                namespaces=[chunking.namespace],
                limit=LIMIT,
                mqe=False,
                hyde=False,
            )
            chunking.search_ms.append((time.perf_counter() - began) * 1000)
            chunking.ties += len(result.hits) > 1 and result.hits[0].score == result.hits[1].score
            add(chunking.search, question, index, [str(hit.chunk.pk) for hit in result.hits])
            rankings = hybrid.signal_rankings(
                chunk_store(), COLLECTION, query=question.text, where=where, limit=LIMIT
            )
            for name, ranking in rankings.items():
                add(chunking.signals.setdefault(name, Scores()), question, index, [i for i, _ in ranking])
        ids = list(index)
        bm25 = bm25_cls([bm25_tokens(index[i][2]) for i in ids])
        for question in conv.questions:
            order = np.argsort(-np.asarray(bm25.get_scores(bm25_tokens(question.text))), kind="stable")
            add(chunking.bm25, question, index, [ids[i] for i in order[:LIMIT]])
        print(
            f"  {chunking.namespace} {conv.sample_id}: {len(index)} chunks, {len(conv.questions)} questions, "
            f"evidence R@10 {chunking.search.metrics()['c@10']:.3f} so far",
            flush=True,
        )


# --- Report ----------------------------------------------------------------------------------------------------


def table(chunking: Chunking) -> list[str]:
    lines = [
        "| ranking | evidence R@1 | evidence R@5 | evidence R@10 | session R@1 | session R@5 | session R@10 "
        "| evidence MRR | tied for #1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [("Mnemo (search_chunks)", chunking.search, str(chunking.ties))]
    rows += [(f"signal alone: {name}", scores, "–") for name, scores in sorted(chunking.signals.items())]
    rows.append(("BM25 over the chunks", chunking.bm25, "–"))
    for label, scores, ties in rows:
        m = scores.metrics()
        cells = " | ".join(f"{m[f'{t}@{k}']:.3f}" for t in "cs" for k in KS)
        lines.append(f"| {label} | {cells} | {m['mrr']:.3f} | {ties} |")
    return lines


def header(chunking: Chunking, conversations: list[Conversation]) -> str:
    questions = sum(len(c.questions) for c in conversations)
    users = len(conversations)
    return (
        f"{questions} questions, {chunking.documents} documents (sessions), {chunking.chunks} chunks "
        f"({chunking.chunks / users:.0f} per user on average, at most {chunking.max_user_chunks}; "
        f"{chunking.chunks / chunking.documents:.2f} per session), "
        f"{chunking.turn_slots / chunking.chunks:.2f} turns/chunk (a turn repeated in an overlap counts in both "
        f"chunks), {chunking.uncovered} turns in no chunk; ingest {chunking.ingest_s:.0f} s; "
        f"search_chunks p50 {np.percentile(chunking.search_ms, 50):.0f} ms."
    )


def reading(chunking: Chunking, users: int) -> str:
    m = chunking.search.metrics()
    bm = chunking.bm25.metrics()
    alone = {name: scores.metrics() for name, scores in chunking.signals.items()}
    strongest = max(alone, key=lambda name: (alone[name]["c@1"], alone[name]["c@10"]))
    signals = ", ".join(f"{name} {values['c@1']:.3f}" for name, values in sorted(alone.items()))
    per_user = chunking.chunks / users
    share = min(1.0, LIMIT / per_user)
    granularity = (
        ": R@10 says little at this granularity, R@1, R@5 and MRR are the informative columns"
        if share >= 0.2
        else ", so R@10 still separates the rankings"
    )
    lines = [
        f"- {chunking.label}:",
        f"  - The search reaches evidence R@1 {m['c@1']:.3f}, R@10 {m['c@10']:.3f}, MRR {m['mrr']:.3f}. Each signal "
        f"alone (its own top 10) reaches R@1 {signals}; against the strongest, {strongest}, the search is "
        f"{m['c@1'] - alone[strongest]['c@1']:+.3f} at R@1, {m['c@10'] - alone[strongest]['c@10']:+.3f} at R@10 and "
        f"{m['mrr'] - alone[strongest]['mrr']:+.3f} in MRR.",
        f"  - Against BM25 over the same chunks the search is {m['c@1'] - bm['c@1']:+.3f} at evidence R@1, "
        f"{m['c@10'] - bm['c@10']:+.3f} at R@10 and {m['mrr'] - bm['mrr']:+.3f} in MRR.",
        f"  - Granularity: {chunking.turn_slots / chunking.chunks:.1f} turns per chunk and {per_user:.0f} chunks "
        f"per user, so the top 10 is {share:.0%} of a user's chunks on average{granularity}.",
    ]
    return "\n".join(lines)


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

        from core import stores
        from knowledge import search

        candidates = search.CANDIDATES
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
        lines = table(chunking)
        print(f"\n{chunking.label}: {header(chunking, conversations)}\n")
        print("\n".join(lines))
        sections.append(
            f"## {chunking.label}\n\n{header(chunking, conversations)}\n\n" + "\n".join(lines) + "\n"
        )
    readings = [reading(chunking, len(conversations)) for chunking in chunkings]
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
    report = f"""# Knowledge search on LoCoMo: retrieval recall of the search and of each signal alone

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
  the session (document) of any evidence turn among the top k chunks' documents; evidence MRR = mean 1/rank of the
  first chunk holding an evidence turn (0 outside the top 10).
- Mnemo: `search_chunks` as the API runs it: each signal's top {candidates} fused by calibrated scores
  (`core.hybrid.fuse`), the noise floor, the owner check, the top 10.
- Each signal alone: `core.hybrid.signal_rankings(query=<question>, where=<this user, this namespace>, limit=10)`,
  the filter search_chunks applies; a signal's ranked chunks are its own top 10, before fusion.
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
