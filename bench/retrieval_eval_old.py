"""Retrieval quality of Mnemo's memory and knowledge search, set by set, against each of its signals alone.

    .venv/bin/python bench/retrieval_eval.py                  # every set + LoCoMo 1-10 → results/retrieval.md
    .venv/bin/python bench/retrieval_eval.py --sets paraphrase_en_dev --locomo none       # one set, no report
    .venv/bin/python bench/retrieval_eval.py --split dev --data-dir /tmp/mnemo-eval --json /tmp/dev.json

Prints Markdown; a full run (all set files, LoCoMo 1-10, both splits) or --write writes
bench/results/retrieval.md. `--data-dir DIR` keeps the index in DIR and reuses it on later runs (a set is
loaded again when its content or the indexing code changes); otherwise a temporary MNEMO_DATA_DIR is removed
at the end.

In-process on the embedded defaults (SQLite, Qdrant Edge, the local embedders, no LLM). Sets: every JSON file
of `bench/data/retrieval/` (format in its FORMAT.md; `--sets-dir` reads another directory) and LoCoMo
(`../shared/bench/locomo10.json`, CC BY-NC 4.0, never copied into the repository; categories 1-4, evidence ids
normalised as in `memory_bench.py`; `locomo_dev` = conversations 1-3, `locomo_test` = 4-10). One user per set
and per LoCoMo conversation, each on its own Edge store, so its figures do not depend on what else is loaded
(the lexical signal's IDF covers a whole collection). Memories go in through `memory_bulk_create` (LoCoMo:
every turn an episodic memory, importance 0.5, dated with its session) and are all mirrored before the first
search; knowledge documents through `document_create_from_text(background=False)`, namespace `default`,
default chunking.

Every question goes to `search_memories(limit=10)` (knowledge sets: `search_chunks(limit=10)`), "Mnemo", and
to `core.hybrid.signal_rankings(limit=10)` under the filter the search applies (`build_where`): "<signal>
alone" is that signal's own top 10. A memory answers when the question names it (LoCoMo: an evidence turn); a
chunk when it belongs to the named document and contains the answer's phrase (whitespace collapsed). hit@k:
share of answerable questions with an answer in the top k; MRR: mean 1/rank of the first answer in the top 10
(0 if none); no-answer empty: share of no-answer questions for which the system returns nothing. LoCoMo: turn
recall@1/5/10 (any evidence turn), all-evidence recall@10, session recall@10, MRR.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

# isort: off
import config  # noqa: E402,F401 - the app's process setup (OPENBLAS_NUM_THREADS) must run before numpy loads
import numpy as np  # noqa: E402
from memory_bench import CATEGORIES, load_locomo, parse_selection, session_of  # noqa: E402
from report import load, machine, markdown, revision  # noqa: E402

# isort: on

SETS_DIR = ROOT / "bench" / "data" / "retrieval"
RESULTS = ROOT / "bench" / "results"
LIMIT = 10
KS = (1, 3, 5, 10)
TOLERANCE = 0.02  # Mnemo passes at its best single signal's hit@1 − this (above every signal on mixed sets)
MNEMO = "Mnemo"
# Which data may choose parameters ("dev") and which only reports ("test"): the set files name their split;
# LoCoMo's conversations are split here.
LOCOMO_SPLIT = {n: "dev" if n <= 3 else "test" for n in range(1, 11)}
CHOOSING = "the dev sets and LoCoMo conversations 1-3; the test sets and LoCoMo 4-10 only report"


@dataclass(eq=False)  # hashed by identity: a question is a key of its set's outcomes
class Question:
    id: str
    text: str
    kind: str
    answers: list  # memory ids, LoCoMo dia_ids, or {"document", "contains"} on knowledge sets

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


@dataclass
class Outcome:
    flags: list[bool]  # one per returned item (top 10): does it answer the question
    extra: dict[str, bool] = field(default_factory=dict)  # LoCoMo: all@10, sess@10


@dataclass
class Unit:
    """One user's data and questions: a whole set, or one LoCoMo conversation."""

    key: str
    payload: list  # (label, memory fields) pairs, or knowledge documents
    questions: list[Question]


@dataclass
class EvalSet:
    name: str
    split: str
    language: str
    kind: str  # memory | knowledge | locomo
    units: list[Unit]
    outcomes: dict[str, dict[Question, Outcome]] = field(default_factory=dict)
    ingest_s: float = 0.0
    reused: int = 0
    items: int = 0
    search_ms: dict[str, list[float]] = field(default_factory=lambda: {MNEMO: [], "signals": []})
    warnings: list[str] = field(default_factory=list)

    @property
    def questions(self) -> list[Question]:
        return [q for unit in self.units for q in unit.questions]


# --- Sets ---------------------------------------------------------------------------------------------------


def load_set(path: Path) -> EvalSet:
    data = json.loads(path.read_text())
    questions = [
        Question(q["id"], q["question"], q.get("kind", "?"), q["answers"]) for q in data["questions"]
    ]
    if path.name.startswith("knowledge_"):
        known = {d["id"] for d in data["documents"]}
        if any(a["document"] not in known for q in questions for a in q.answers):
            raise ValueError("answers naming no document")
        payload, kind = data["documents"], "knowledge"
    else:
        known = {m["id"] for m in data["memories"]}
        if len(known) != len(data["memories"]) or any(a not in known for q in questions for a in q.answers):
            raise ValueError("duplicate memory ids, or answers naming no memory")
        payload, kind = [(m["id"], m) for m in data["memories"]], "memory"
    name = data.get("name", path.stem)
    return EvalSet(name, data["split"], data.get("language", "?"), kind, [Unit(name, payload, questions)])


def locomo_sets(selection: list[int]) -> list[EvalSet]:
    sets: dict[str, EvalSet] = {}
    for number, conv in zip(selection, load_locomo(selection), strict=True):
        split = LOCOMO_SPLIT[number]
        es = sets.setdefault(split, EvalSet(f"locomo_{split}", split, "en", "locomo", []))
        turn = {"memory_type": "episodic", "importance": 0.5}  # as memory_bench posts them
        payload = [(t.dia_id, turn | {"content": t.content, "created_at": t.created_at}) for t in conv.turns]
        questions = [
            Question(f"{conv.sample_id}-{i}", q.text, CATEGORIES[q.category], q.evidence)
            for i, q in enumerate(conv.questions)
        ]
        es.units.append(Unit(f"locomo-{conv.sample_id}", payload, questions))
        es.warnings += [f"{conv.sample_id}: {note}" for note in conv.evidence_notes]
    return list(sets.values())


# --- Ingestion ----------------------------------------------------------------------------------------------


def index_code() -> str:
    """What a stored point holds, probed: the points core.hybrid.points makes of two texts (dense vectors
    rounded, sparse terms, payload), the rows' payloads and the chunker. An index made otherwise is redone;
    query-time code (fusion, weights, floors) may change without that."""
    from core import hybrid, stores
    from knowledge import services
    from memories import mirror

    probe = ["Ana's manager is Kofi Mensah; she flew to Lisbon in May.", "王芳对海鲜过敏，周末喜欢去爬山。"]
    items = [(f"00000000-0000-0000-0000-00000000000{i}", text, {}) for i, text in enumerate(probe)]
    parts = [
        repr((p.sparse, p.payload, {k: np.round(v, 3).tolist() for k, v in sorted(p.dense.items())}))
        for p in hybrid.points(items, stores.embedding_set().embed_documents(probe))
    ]
    parts += [inspect.getsource(f) for f in (mirror.payload, services.chunk_payload)]
    parts += [p.read_text() for p in sorted((ROOT / "knowledge" / "pipeline").glob("*.py"))]
    return "\n".join(parts)


def user_for(data_dir: Path, unit: Unit, code: str, complete) -> tuple[object, bool]:
    """(user, reused): the unit's user on its own Edge store; the stored one if `complete(user)`, else new."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from core import stores

    digest = hashlib.sha1((json.dumps(unit.payload, sort_keys=True, default=str) + code).encode())
    name = f"{unit.key}-{digest.hexdigest()[:10]}"
    stores.reset(embeddings=False)
    settings.QDRANT_EDGE_PATH = data_dir / "edge" / name
    user = get_user_model().objects.filter(username=name).first()
    if user is not None and complete(user):
        return user, True
    if user is not None:  # an interrupted load: start again on an empty store
        user.delete()
        stores.reset(embeddings=False)
        shutil.rmtree(settings.QDRANT_EDGE_PATH, ignore_errors=True)
    return get_user_model().objects.create_user(name, password=None), False


def ingest_memories(data_dir: Path, unit: Unit, code: str) -> tuple[object, dict[str, str], bool]:
    """(user, memory pk → label, reused), every memory mirrored into the vector store."""
    from django.utils import timezone
    from django.utils.dateparse import parse_datetime

    from core.models import MirrorState
    from memories.mirror import sync_memories
    from memories.models import Memory
    from memories.services import NewMemory, memory_bulk_create

    # An undated memory is dated at its first load: once such a working memory has expired, load it again.
    undated = {
        k for k, m in unit.payload if m.get("memory_type", "working") == "working" and not m.get("created_at")
    }

    def complete(user) -> bool:
        rows = Memory.objects.filter(user=user, mirror_state=MirrorState.SYNCED)
        expired = rows.filter(expires_at__lte=timezone.now()).values_list("metadata", flat=True)
        return rows.count() == len(unit.payload) and not any(m["eval_id"] in undated for m in expired)

    user, reused = user_for(data_dir, unit, code, complete)
    if not reused:
        items = []
        for label, m in unit.payload:
            when = m.get("created_at")
            when = parse_datetime(when) if isinstance(when, str) else when
            fields = {k: m[k] for k in ("content", "memory_type", "importance") if k in m}
            items.append(NewMemory(**fields, metadata={"eval_id": label}, created_at=when))
        for start in range(0, len(items), 1000):
            memory_bulk_create(user=user, items=items[start : start + 1000])  # mirrors on commit
        pending = Memory.objects.filter(user=user).exclude(mirror_state=MirrorState.SYNCED)
        sync_memories([str(pk) for pk in pending.values_list("pk", flat=True)])  # raises if the store fails
        if pending.exists():
            raise RuntimeError(f"{unit.key}: {pending.count()} memories not mirrored")
    rows = Memory.objects.filter(user=user).values_list("pk", "metadata")
    return user, {str(pk): meta["eval_id"] for pk, meta in rows}, reused


def ingest_documents(data_dir: Path, unit: Unit, code: str) -> tuple[object, dict[str, tuple], bool]:
    """(user, chunk pk → (document label, text), reused), every document ingested inline."""
    from knowledge.models import Chunk, Document, DocumentStatus
    from knowledge.services import document_create_from_text

    labels = {hashlib.sha256(d["text"].encode()).hexdigest(): d["id"] for d in unit.payload}
    ready = Document.objects.filter(status=DocumentStatus.READY)
    user, reused = user_for(data_dir, unit, code, lambda u: ready.filter(user=u).count() == len(labels))
    for d in [] if reused else unit.payload:
        document = document_create_from_text(
            user=user, text=d["text"], title=d["title"], namespace="default", background=False
        ).document
        document.refresh_from_db()
        if document.status != DocumentStatus.READY:
            raise RuntimeError(f"{unit.key} {d['id']}: {document.status} {document.error}")
    chunks = Chunk.objects.filter(user=user).select_related("document").defer("document__markdown")
    return user, {str(c.pk): (labels[c.document.sha256], squash(c.text)) for c in chunks}, reused


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --- Search -------------------------------------------------------------------------------------------------


def judge(es: EvalSet, q: Question, found: list) -> Outcome:
    """Which returned items answer q; `found` holds their labels (chunks: (document label, text))."""
    if es.kind == "knowledge":
        answers = [(a["document"], squash(a["contains"])) for a in q.answers]
        return Outcome([any(d == doc and phrase in t for doc, phrase in answers) for d, t in found])
    extra = {}
    if es.kind == "locomo":
        extra["all@10"] = all(e in found for e in q.answers)
        extra["sess@10"] = bool({session_of(r) for r in found if r} & {session_of(e) for e in q.answers})
    return Outcome([r in q.answers for r in found], extra)


def run_unit(es: EvalSet, data_dir: Path, unit: Unit, code: str) -> None:
    from django.utils import timezone

    from core import hybrid
    from knowledge import search, services
    from memories import mirror, retrieval
    from memories.models import Memory

    began = time.perf_counter()
    if es.kind == "knowledge":
        user, index, reused = ingest_documents(data_dir, unit, code)
        store, collection = services.chunk_store(), services.COLLECTION
        where = {"user_id": str(user.pk), "namespace": ["default"]}
        for q in unit.questions:
            if q.answerable and not any(judge(es, q, list(index.values())).flags):
                es.warnings.append(f"{q.id}: no chunk holds any of its answers")
    else:
        user, index, reused = ingest_memories(data_dir, unit, code)
        store, collection = mirror.memory_store(), mirror.COLLECTION
        where = retrieval.build_where(  # the filter search_memories applies (not expired)
            user=user, memory_types=None, min_importance=0, session=None, time_range=None, now=timezone.now()
        )
        live = Memory.objects.active().filter(user=user).values_list("pk", flat=True)
        if gone := sorted(set(index.values()) - {index[str(pk)] for pk in live}):
            lost = [q.id for q in unit.questions if q.answerable and set(q.answers) <= set(gone)]
            es.warnings.append(
                f"{unit.key}: {len(gone)} memories expired (working-memory TTL) before the search: "
                f"{', '.join(gone[:10])}; questions answered only by them: {', '.join(lost) or 'none'}"
            )
    es.ingest_s += 0.0 if reused else time.perf_counter() - began
    es.reused += reused
    es.items += len(index)
    for q in unit.questions:
        t0 = time.perf_counter()
        if es.kind == "knowledge":
            hits = search.search_chunks(user=user, query=q.text, namespaces=["default"], limit=LIMIT).hits
            ids = [str(hit.chunk.pk) for hit in hits]
        else:
            hits = retrieval.search_memories(user=user, query=q.text, limit=LIMIT).hits
            ids = [str(hit.memory.pk) for hit in hits]
        t1 = time.perf_counter()
        rankings = hybrid.signal_rankings(store, collection, query=q.text, where=where, limit=LIMIT)
        es.search_ms[MNEMO].append((t1 - t0) * 1000)
        es.search_ms["signals"].append((time.perf_counter() - t1) * 1000)
        es.outcomes.setdefault(MNEMO, {})[q] = judge(es, q, [index.get(i) for i in ids[:LIMIT]])
        for signal, ranking in rankings.items():
            found = [index.get(point_id) for point_id, _ in ranking[:LIMIT]]
            es.outcomes.setdefault(signal, {})[q] = judge(es, q, found)


# --- Metrics and report -------------------------------------------------------------------------------------


def mean(values) -> float | None:
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else None


def rank(outcome: Outcome) -> int | None:
    return next((i + 1 for i, hit in enumerate(outcome.flags) if hit), None)


def metrics(es: EvalSet, system: str, kind: str | None = None) -> dict:
    rows = [(q, es.outcomes[system].get(q, Outcome([]))) for q in es.questions if kind in (None, q.kind)]
    found = [o for q, o in rows if q.answerable]
    out: dict = {f"hit@{k}": mean(any(o.flags[:k]) for o in found) for k in KS}
    out["mrr"] = mean(1 / r if (r := rank(o)) else 0.0 for o in found)
    out["empty"] = mean(not o.flags for q, o in rows if not q.answerable)
    if es.kind == "locomo":
        out |= {key: mean(o.extra.get(key, False) for o in found) for key in ("all@10", "sess@10")}
    out["n"], out["n_none"] = len(found), len(rows) - len(found)
    return out


def signals(es: EvalSet) -> list[str]:
    return sorted(name for name in es.outcomes if name != MNEMO)


def table(es: EvalSet, rows: dict[str, dict]) -> str:
    if es.kind == "locomo":
        head = ["", "turn R@1", "R@5", "R@10", "all-evidence R@10", "session R@10", "MRR", "questions"]
        keys = ["hit@1", "hit@5", "hit@10", "all@10", "sess@10", "mrr"]
    else:
        head = ["", "hit@1", "hit@3", "hit@10", "MRR", "no-answer empty", "questions"]
        keys = ["hit@1", "hit@3", "hit@10", "mrr", "empty"]
    body = []
    for label, m in rows.items():
        n = f"{m['n']}" + (f" + {m['n_none']} no-answer" if m["n_none"] else "")
        body.append([label] + ["–" if m[k] is None else f"{m[k]:.3f}" for k in keys] + [n])
    return markdown(head, body)


def verdict(es: EvalSet) -> dict:
    """Mnemo's hit@1 (no-answer empty share on a set without answerable questions) against its best signal."""
    key = "hit@1" if any(q.answerable for q in es.questions) else "empty"
    mnemo = metrics(es, MNEMO)[key] or 0.0
    values = {name: metrics(es, name)[key] or 0.0 for name in signals(es)}
    best = max(values, key=values.get) if values else "–"
    top = values.get(best, 0.0)
    mixed = es.language == "mixed"
    passed = all(mnemo > v for v in values.values()) if mixed else mnemo >= top - TOLERANCE
    measure = {"hit@1": "turn R@1" if es.kind == "locomo" else "hit@1", "empty": "no-answer empty"}[key]
    return dict(measure=measure, mnemo=mnemo, best=best, best_value=top, diff=mnemo - top, passed=passed)


def summary(sets: list[EvalSet]) -> str:
    rows = []
    for es in sets:
        v = verdict(es)
        rule = "> every signal" if es.language == "mixed" else f"≥ best − {TOLERANCE}"
        cells = [es.name, es.split, es.language, v["measure"], f"{v['mnemo']:.3f}", v["best"]]
        cells += [
            f"{v['best_value']:.3f}",
            f"{v['diff']:+.3f}",
            f"{'PASS' if v['passed'] else 'FAIL'} ({rule})",
        ]
        rows.append(cells)
    return markdown(
        "set|split|language|measure|Mnemo|best single signal|its value|difference|result".split("|"), rows
    )


def timing(sets: list[EvalSet]) -> str:
    rows = []
    for es in sets:
        reused = f" ({es.reused} of {len(es.units)} users reused)" if es.reused else ""
        ms = es.search_ms
        cells = [
            es.name,
            str(len(es.units)),
            str(es.items),
            str(len(es.questions)),
            f"{es.ingest_s:.1f}{reused}",
        ]
        means = [np.mean(ms[MNEMO]), np.median(ms[MNEMO]), np.mean(ms["signals"])]
        rows.append(cells + [f"{x:.1f}" for x in means])
    head = "set|users|memories / chunks|questions|ingest s|Mnemo ms/q mean|median|signal_rankings ms/q mean"
    return markdown(head.split("|"), rows)


def section(es: EvalSet) -> str:
    rows = {MNEMO: metrics(es, MNEMO)} | {f"{name} alone": metrics(es, name) for name in signals(es)}
    kinds = {kind: metrics(es, MNEMO, kind) for kind in sorted({q.kind for q in es.questions})}
    text = f"## {es.name} ({es.split}, {es.language})\n\n{table(es, rows)}\n\n{MNEMO} by question kind:\n\n"
    text += table(es, kinds) + "\n"
    if es.warnings:
        text += "\nNotes: " + "; ".join(es.warnings[:20]) + (" …" if len(es.warnings) > 20 else "") + "\n"
    return text


def as_json(sets: list[EvalSet], **meta) -> str:
    data = meta | {"sets": {}}
    for es in sets:
        data["sets"][es.name] = {
            "split": es.split, "language": es.language, "kind": es.kind, "verdict": verdict(es),
            "systems": {s: metrics(es, s) for s in [MNEMO, *signals(es)]},
            "kinds": {k: metrics(es, MNEMO, k) for k in sorted({q.kind for q in es.questions})},
            "ingest_s": es.ingest_s, "search_ms_mean": float(np.mean(es.search_ms[MNEMO])),
            # per system and question: [rank of the first answer or null, items returned]
            "questions": {s: {q.id: [rank(o), len(o.flags)] for q, o in by_question.items()}
                          for s, by_question in es.outcomes.items()},
        }  # fmt: skip
    return json.dumps(data, indent=2, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sets", help="set names without .json, comma-separated, or none (default: every file)"
    )
    parser.add_argument("--sets-dir", type=Path, default=SETS_DIR, help="where the set files are")
    parser.add_argument("--locomo", default="1-10", help="LoCoMo conversations, e.g. 1-3 or 4,7, or none")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--data-dir", type=Path, help="keep the index here and reuse it on later runs")
    parser.add_argument(
        "--write", action="store_true", help="write bench/results/retrieval.md even if partial"
    )
    parser.add_argument(
        "--embed",
        help="EMBED_MODEL_TYPE to measure instead of the default, e.g. e5+use (the report is not written)",
    )
    parser.add_argument("--json", type=Path, help="dump every metric (and each question's rank) as JSON here")
    args = parser.parse_args()

    names = None if args.sets is None else [n.strip() for n in args.sets.split(",") if n.strip() != "none"]
    paths = (
        sorted(args.sets_dir.glob("*.json"))
        if names is None
        else [args.sets_dir / f"{n}.json" for n in names]
    )
    sets, skipped = [], []
    for path in paths:
        try:
            sets.append(load_set(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if names:
                raise SystemExit(f"{path}: {exc!r}") from None
            skipped.append(f"{path.name} ({exc!r})")
            print(f"SKIPPED {skipped[-1]}", flush=True)
    selection = [] if args.locomo == "none" else parse_selection(args.locomo)
    sets = [es for es in sets + locomo_sets(selection) if args.split in ("all", es.split)]
    full = names is None and len(selection) == 10 and args.split == "all" and not args.embed

    before, started_at, t_start = load(), datetime.now(UTC), time.perf_counter()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="mnemo-retrieval-eval-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        setup_django(data_dir, **({"EMBED_MODEL_TYPE": args.embed} if args.embed else {}))
        from core import stores
        from core.text import sparse_query_vector
        from memories.entities import extract_mentions

        began = time.perf_counter()
        stores.embedding_set().embed_documents(["warm-up", "预热"])  # the models, then jieba and spaCy
        sparse_query_vector("预热 warm-up")
        extract_mentions("Ana met Kofi Mensah in Lisbon.")
        extract_mentions("王芳在上海见了李伟。")
        model_load = time.perf_counter() - began
        code, embedder = index_code(), stores.embedding_set().describe()
        for es in sets:
            for unit in es.units:
                run_unit(es, data_dir, unit, code)
            print(f"{es.name}: {len(es.questions)} questions, ingest {es.ingest_s:.1f} s", flush=True)
        stores.reset()
    finally:
        if not args.data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    minutes = (time.perf_counter() - t_start) / 60
    command = ("bench/retrieval_eval.py " + " ".join(sys.argv[1:])).strip()
    body = "\n".join(section(es) for es in sets)
    print(f"\n{summary(sets)}\n\n{body}\n{timing(sets)}\n\n{minutes:.1f} min (model load {model_load:.1f} s)")
    if args.json:
        meta = {
            "measured": started_at.isoformat(),
            "command": command,
            "revision": revision(),
            "skipped": skipped,
        }
        args.json.write_text(as_json(sets, **meta))
        print(f"Wrote {args.json}")
    if not (full or args.write):
        print("\n(not a full run: bench/results/retrieval.md left unchanged; --write forces it)")
        return
    method = __doc__.split("\n\n", 3)[3].strip()

    def by_split(split: str) -> str:
        return ", ".join(es.name for es in sets if es.split == split) or "none"

    skipped_line = (
        f"\nSet files skipped (unreadable or inconsistent): {'; '.join(skipped)}." if skipped else ""
    )
    report = f"""# Retrieval evaluation: Mnemo's search against each of its signals alone

Measured {started_at:%Y-%m-%d %H:%M} UTC by `{command}` ({minutes:.0f} min, model load {model_load:.1f} s).
Machine: {machine()}; load average (1/5/15 min) {before} before, {load()} after. Revision: {revision()}.
Embedders: {embedder}.

Which sets chose parameters: {CHOOSING}.
In this run, dev: {by_split("dev")}; test: {by_split("test")}.{skipped_line}

## Method

{method}

Summary: {MNEMO} passes when its hit@1 is at least its best single signal's − {TOLERANCE}; on mixed-language
sets only when it is above every single signal (strictly). On a set without answerable questions the no-answer
empty share stands in for hit@1.

## {MNEMO} against its best single signal

{summary(sets)}

{body}
## Timing

{timing(sets)}
"""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "retrieval.md").write_text(report)
    print(f"\nWrote {(RESULTS / 'retrieval.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
