"""How well the write path tells duplicates, updates and distinct facts apart (memories.curation).

    .venv/bin/python bench/dedupe_eval.py                     # pairs + throughput → results/dedupe.md
    .venv/bin/python bench/dedupe_eval.py --no-write --throughput 0   # pairs only, printed
    .venv/bin/python bench/dedupe_eval.py --sets current --throughput 0   # the hand-written pairs only (~1 min)

Pairs (existing memory, new memory), each labelled duplicate (the new one says the same: it should be counted on
the existing memory, as a duplicate or a merge), contradiction (a new value of the same fact: it should supersede
the existing one) or distinct (both kept), from:
- current: bench/data/dedupe/pairs_{dev,test}.json, written by hand for Mnemo (FORMAT.md);
- pawsx_zh, stsb, tatoeba: public data nobody on the team wrote, converted by bench/external_sets.py into
  ../shared/bench/external/dedupe_*/ (each folder's README gives the source, commit, licence and exactly how
  the pairs and labels were built). PAWS-X Chinese (paraphrases with swapped words), the STS benchmark in English
  and in Chinese translation (human similarity scores; "partial" pairs, scored between 3.5 and 4.5, are reported
  apart and count in no precision), Tatoeba English-Chinese (translations, paraphrases through a shared
  translation, and value changes marked as such).
Each pair runs under a fresh user on the embedded defaults: the existing memory is stored as a fact (semantic)
through `memory_write`, then the new one is written the same way, and the action is compared with the label.
An external set larger than --limit pairs per split is sampled (seeded; every contradiction pair kept).

Figures: precision of merges (of the pairs the product counted as a repeat, the share labelled duplicate) and of
supersedes (of the pairs where the new memory replaced the old, the share labelled contradiction), with recall.
The near-duplicate thresholds (memories.curation.THRESHOLDS: within a language, across languages with a shared
name or number, across languages with none; the floor for a cross-language pair whose facts agree value for
value is fixed) are chosen on the dev halves: the sweep shows merge precision and recall per threshold. Test is
only reported.

Throughput: the cost of the checks on bulk writes. LoCoMo turns (../shared/bench/locomo10.json, never copied
here) are written as facts (semantic: every check runs, the worst case) through `memory_bulk_create` in batches
of 1,000 into two users, one with the checks on and one with them off, batch by batch in turn so both see the
same machine load; the embedding cache is emptied before each batch, so each run embeds its texts itself. Times
include the vector mirror and entity linking, as a client of POST /memories/bulk waits for them.
"""

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "dedupe"
RESULTS = ROOT / "bench" / "results" / "dedupe.md"
sys.path.insert(0, str(ROOT))
from bench.external_sets import external_dir, shared_bench_dir  # noqa: E402

LOCOMO = Path(os.environ.get("LOCOMO_PATH", shared_bench_dir() / "locomo10.json"))
EXPECTED = {"duplicate": ("duplicate", "merge"), "contradiction": ("supersede",), "distinct": ("add",)}
SETS = ("current", "pawsx_zh", "stsb", "tatoeba")
SWEEP = (0.75, 0.78, 0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.95)
CROSS_SWEEP = (0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85)
MERGES = ("duplicate", "merge")


def load_pairs(name: str, split: str, limit: int) -> list[dict]:
    if name == "current":
        pairs = json.loads((DATA / f"pairs_{split}.json").read_text())["pairs"]
    else:
        folder = external_dir() / f"dedupe_{name}"
        pairs = json.loads((folder / f"pairs_{split}.json").read_text())["pairs"]
    for pair in pairs:
        pair["set"] = name
    if len(pairs) <= limit:
        return pairs
    rng = random.Random(f"dedupe-{name}-{split}")
    kept = [p for p in pairs if p["label"] == "contradiction"]
    others = [p for p in pairs if p["label"] != "contradiction"]
    return kept + rng.sample(others, max(0, limit - len(kept)))


def cross_language(row: dict) -> bool:
    from memories.anchors import has_cjk

    return has_cjk(row["existing"]) != has_cjk(row["new"])


def run_pairs(pairs: list[dict]) -> list[dict]:
    from django.contrib.auth.models import User

    from memories import curation
    from memories.actions.write import _new_memory, memory_write
    from memories.models import MemoryType

    rows = []
    for index, pair in enumerate(pairs):
        user = User.objects.create(username=f"pair-{index}-{time.monotonic_ns()}")
        existing = memory_write(user=user, content=pair["existing"], memory_type=MemoryType.SEMANTIC)
        curator = curation.Curator(user)
        probe = _new_memory(
            user=user,
            content=pair["new"],
            memory_type=MemoryType.SEMANTIC,
            importance=0.5,
            session=None,
            metadata=None,
            created_at=None,
        )
        similar = [(m, s) for m, s in curator._similar(probe) if m.pk == existing.memory.pk]
        similarity = similar[0][1] if similar else 0.0
        compatible = curator._compatible(probe, existing.memory)
        evidence = curator.evidence(probe, existing.memory)
        written = memory_write(user=user, content=pair["new"], memory_type=MemoryType.SEMANTIC)
        row = {
            **pair,
            "action": written.action,
            "similarity": round(similarity, 4),
            "compatible": compatible,
            "evidence": evidence,
            "reason": written.reason,
        }
        row["cross"] = cross_language(row)
        rows.append(row)
    return rows


def action_at(row: dict, thresholds: dict[str, float]) -> str:
    """The action at other thresholds (per kind of evidence, memories.curation.Curator.evidence): only the
    near-duplicate step depends on them."""
    if row["action"] in ("duplicate", "supersede"):
        return row["action"]
    if row["similarity"] >= thresholds[row["evidence"]] and row["compatible"]:
        return "merge"
    return "add"


def summary(rows: list[dict], thresholds: dict[str, float]) -> dict:
    """Precision and recall of merges and of supersedes ("partial" pairs apart: they count in neither)."""
    labelled = [r for r in rows if r["label"] in EXPECTED]
    actions = [(r, action_at(r, thresholds)) for r in labelled]
    merged = [r for r, a in actions if a in MERGES]
    superseded = [r for r, a in actions if a == "supersede"]
    duplicates = [r for r in labelled if r["label"] == "duplicate"]
    updates = [r for r in labelled if r["label"] == "contradiction"]
    right_merges = sum(r["label"] == "duplicate" for r in merged)
    right_supersedes = sum(r["label"] == "contradiction" for r in superseded)
    partial = [r for r in rows if r["label"] == "partial"]

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    return {
        "pairs": len(labelled),
        "duplicates": len(duplicates),
        "updates": len(updates),
        "merges": len(merged),
        "merge_precision": ratio(right_merges, len(merged)),
        "merge_recall": ratio(right_merges, len(duplicates)),
        "supersedes": len(superseded),
        "supersede_precision": ratio(right_supersedes, len(superseded)),
        "supersede_recall": ratio(right_supersedes, len(updates)),
        "accuracy": ratio(sum(a in EXPECTED[r["label"]] for r, a in actions), len(labelled)),
        "partial": len(partial),
        "partial_merged": sum(action_at(r, thresholds) in MERGES for r in partial),
        "wrong": [(r, a) for r, a in actions if a not in EXPECTED[r["label"]] and a != "add"],
        "missed": [(r, a) for r, a in actions if a not in EXPECTED[r["label"]] and a == "add"],
    }


def figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def locomo_texts(total: int) -> list[str]:
    """`total` distinct texts: LoCoMo's turns, then again with a round number (so a repeat is no duplicate and
    both sides store every fact: the comparison is the cost of checking, not of storing fewer rows)."""
    data = json.loads(LOCOMO.read_text())
    texts = [
        f"{turn['speaker']}: {turn['text']}"
        for sample in data
        for key, turns in sample["conversation"].items()
        if re.fullmatch(r"session_\d+", key)
        for turn in turns
    ]
    texts = list(dict.fromkeys(texts))
    return [
        texts[i % len(texts)] + (f" (round {i // len(texts) + 1})" if i >= len(texts) else "")
        for i in range(total)
    ]


def throughput(total: int, batch: int = 1000) -> dict:
    """Seconds per side and what the checks decided, for `total` facts written in batches."""
    from django.contrib.auth.models import User

    from core import stores
    from memories.actions.write import NewMemory, memory_bulk_create
    from memories.models import Memory

    texts = locomo_texts(total)
    users = {
        True: User.objects.create(username="throughput-on"),
        False: User.objects.create(username="throughput-off"),
    }
    seconds = {True: 0.0, False: 0.0}
    actions: Counter = Counter()
    for start in range(0, total, batch):
        items = [NewMemory(text, "semantic") for text in texts[start : start + batch]]
        for curate in (True, False):
            stores.embedding_set()._recent.clear()
            began = time.perf_counter()
            written = memory_bulk_create(user=users[curate], items=items, curate=curate)
            seconds[curate] += time.perf_counter() - began
            if curate:
                actions.update(w.action for w in written)
        print(
            f"  {start + len(items):>6} facts: on {seconds[True]:.0f} s, off {seconds[False]:.0f} s",
            flush=True,
        )
    return {
        "total": total,
        "on": seconds[True],
        "off": seconds[False],
        "actions": dict(actions),
        "rows": {curate: Memory.objects.filter(user=users[curate]).count() for curate in (True, False)},
    }


def prepare_embeddings(texts: list[str]) -> None:
    """Embed every text once, in batches, before the pairs run (the write path then finds them cached)."""
    from core import stores

    embedding_set = stores.embedding_set()
    embedding_set.RECENT_DOCUMENTS = max(embedding_set.RECENT_DOCUMENTS, len(texts) + 1000)
    unique = list(dict.fromkeys(texts))
    for start in range(0, len(unique), 256):
        embedding_set.embed_documents(unique[start : start + 256])


SWEEPS = {"language": SWEEP, "names": CROSS_SWEEP, "numbers": CROSS_SWEEP, "none": CROSS_SWEEP}
EVIDENCE = {
    "language": "pairs in one language",
    "facts": "pairs whose single-valued facts agree value for value",
    "names": "pairs in two languages sharing a name (a Latin-script word or a place)",
    "numbers": "pairs in two languages sharing numbers only",
    "none": "pairs in two languages, nothing shared",
}


def choose_thresholds(rows: list[dict], product: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """Per kind of evidence, the threshold with the most merges caught on dev while merge precision stays at
    least TARGET (ties to the higher threshold), or, where none reaches it, the most precise one; the sweep's
    lines for the report."""
    lines = []
    chosen = dict(product)
    for evidence, sweep in SWEEPS.items():
        subset = [r for r in rows if r["evidence"] == evidence]
        best = None
        most_precise = (sweep[-1], -1.0)
        lines += [
            "",
            f"Dev, {EVIDENCE[evidence]} ({len(subset)}; the product's threshold {product[evidence]:.2f}):",
            "",
            "| threshold | merges | merge precision | merge recall |",
            "|---|---|---|---|",
        ]
        for threshold in sweep:
            s = summary(subset, {**product, evidence: threshold})
            lines.append(
                f"| {threshold:.2f} | {s['merges']} | {figure(s['merge_precision'])} | {figure(s['merge_recall'])} |"
            )
            precision = s["merge_precision"] if s["merge_precision"] is not None else 1.0
            # Ties go to the higher threshold: the same catch with less risk.
            if precision >= TARGET and (best is None or (s["merge_recall"] or 0) >= best[1]):
                best = (threshold, s["merge_recall"] or 0)
            if precision > most_precise[1]:
                most_precise = (threshold, precision)
        chosen[evidence] = best[0] if best else most_precise[0]
    return chosen, lines


TARGET = 0.97  # on dev, a margin above the 0.95 required on test


def table(results: dict[str, list[dict]], thresholds: dict[str, float]) -> list[str]:
    lines = [
        "| set | pairs | duplicates | merges | merge precision | merge recall | updates | supersedes | "
        "supersede precision | supersede recall | accuracy | partial pairs merged |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = {name: rows for name, rows in results.items()}
    external = [r for name, rows in results.items() if name != "current" for r in rows]
    if len(results) > 1:
        groups["all external"] = external
        groups["all"] = [r for rows in results.values() for r in rows]
    for name, rows in groups.items():
        s = summary(rows, thresholds)
        lines.append(
            f"| {name} | {s['pairs']} | {s['duplicates']} | {s['merges']} | **{figure(s['merge_precision'])}** | "
            f"{figure(s['merge_recall'])} | {s['updates']} | {s['supersedes']} | "
            f"**{figure(s['supersede_precision'])}** | {figure(s['supersede_recall'])} | {figure(s['accuracy'])} | "
            f"{s['partial_merged']} of {s['partial']} |"
        )
    return lines


def by_language(rows: list[dict], thresholds: dict[str, float]) -> list[str]:
    lines = [
        "| language | pairs | merge precision | merge recall | supersede precision | supersede recall |",
        "|---|---|---|---|---|---|",
    ]
    for language in ("en", "zh", "mixed"):
        subset = [r for r in rows if r["lang"] == language]
        s = summary(subset, thresholds)
        lines.append(
            f"| {language} | {s['pairs']} | {figure(s['merge_precision'])} | {figure(s['merge_recall'])} | "
            f"{figure(s['supersede_precision'])} | {figure(s['supersede_recall'])} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not write results/dedupe.md")
    parser.add_argument("--json", type=Path, help="also write every pair's outcome here")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--limit", type=int, default=400, help="pairs per external set and split (sampled)")
    parser.add_argument(
        "--throughput", type=int, default=10_000, help="facts per side (0: skip); default 10,000"
    )
    args = parser.parse_args()

    from bench.embedded import setup_django

    setup_django(Path(tempfile.mkdtemp(prefix="mnemo-dedupe-")))
    from bench import report
    from memories.curation import THRESHOLDS

    started = time.perf_counter()
    names = [name for name in args.sets.split(",") if name]
    results: dict[str, dict[str, list[dict]]] = {"dev": {}, "test": {}}
    for split in ("dev", "test"):
        pairs = {name: load_pairs(name, split, args.limit) for name in names}
        prepare_embeddings([t for rows in pairs.values() for p in rows for t in (p["existing"], p["new"])])
        for name, rows in pairs.items():
            began = time.perf_counter()
            results[split][name] = run_pairs(rows)
            print(f"{split} {name}: {len(rows)} pairs, {time.perf_counter() - began:.0f} s", flush=True)
    seconds = time.perf_counter() - started
    dev_rows = [r for rows in results["dev"].values() for r in rows]
    best, sweep_lines = choose_thresholds(dev_rows, THRESHOLDS)
    test_rows = [r for rows in results["test"].values() for r in rows]

    lines = [
        "# Duplicates, updates and distinct facts on write",
        "",
        f"{time.strftime('%Y-%m-%d')}, `bench/dedupe_eval.py --sets {args.sets} --limit {args.limit}`, embedded "
        f"defaults, {report.machine()}, load {report.load()}, revision {report.revision()}, pairs in "
        f"{seconds:.0f} s. Each pair: the existing memory is stored as a fact, then the new one is written "
        "through `memory_write`; the action is compared with the label. Sets: `current` = bench/data/dedupe "
        "(hand-written for Mnemo); the others are public data (../shared/bench/external/dedupe_*/README.md: "
        "PAWS-X zh, google-research-datasets/paws via zejunwang1/CSTS @ 2e7eeed; STS benchmark en + zh, "
        "PhilipMay/stsb-multi-mt @ 30de0de; Tatoeba en-zh, 13luoyu/Transformer-machine-translation @ aa43963).",
        "",
        "## Test, at the product's thresholds (memories.curation.THRESHOLDS, chosen on dev: "
        + ", ".join(f"{k} {v:.2f}" for k, v in THRESHOLDS.items())
        + ")",
        "",
        *table(results["test"], THRESHOLDS),
        "",
        "Merge precision: of the pairs counted as a repeat (duplicate or merge), the share labelled duplicate. "
        "Supersede precision: of the pairs where the new memory replaced the old one, the share labelled "
        "contradiction (an update). Recall: of the pairs so labelled, the share caught. Partial: STS pairs scored "
        '3.5-4.5 ("mostly equivalent"), in no precision or recall.',
        "",
        "By language (test, every set):",
        "",
        *by_language(test_rows, THRESHOLDS),
        "",
        "## Dev, at the same thresholds",
        "",
        *table(results["dev"], THRESHOLDS),
        "",
        f"## Threshold sweep on dev (merge precision target {TARGET} on dev; the best: "
        + ", ".join(f"{k} {v:.2f}" for k, v in best.items() if k in SWEEPS)
        + ")",
        *sweep_lines,
    ]
    if args.throughput:
        print(f"throughput: {args.throughput:,} facts per side", flush=True)
        speed = throughput(args.throughput)
        on, off = speed["total"] / speed["on"], speed["total"] / speed["off"]
        lines += [
            "",
            f"## Bulk write throughput, {speed['total']:,} facts per side (LoCoMo turns as semantic memories)",
            "",
            "| checks | seconds | facts/s | rows stored |",
            "|---|---|---|---|",
            f"| on | {speed['on']:.0f} | {on:.1f} | {speed['rows'][True]:,} |",
            f"| off | {speed['off']:.0f} | {off:.1f} | {speed['rows'][False]:,} |",
            "",
            f"With the checks on, bulk writes run at {on / off:.2f}× the speed without them "
            f"({(1 - on / off) * 100:.0f}% slower). What they decided: "
            + ", ".join(f"{count:,} {action}" for action, count in sorted(speed["actions"].items()))
            + ".",
        ]
    s = summary(test_rows, THRESHOLDS)
    lines += ["", f"## Wrong merges and supersedes on test ({len(s['wrong'])})", ""]
    lines += ["| set | id | label | action | similarity | existing | new |", "|---|---|---|---|---|---|---|"]
    for r, action in s["wrong"]:
        lines.append(
            f"| {r['set']} | {r['id']} | {r['label']} | {action} | {r['similarity']:.2f} | "
            f"{_cell(r['existing'])} | {_cell(r['new'])} |"
        )
    current_missed = [(r, a) for r, a in s["missed"] if r["set"] == "current"]
    lines += ["", f"## Hand-written test pairs the product misses ({len(current_missed)})", ""]
    lines += ["| id | label | similarity | existing | new |", "|---|---|---|---|---|"]
    for r, _ in current_missed:
        lines.append(
            f"| {r['id']} | {r['label']} | {r['similarity']:.2f} | {_cell(r['existing'])} | {_cell(r['new'])} |"
        )
    report_text = "\n".join(lines) + "\n"
    print(report_text)
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1))
    if not args.no_write:
        RESULTS.write_text(report_text)


def _cell(text: str, limit: int = 90) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


if __name__ == "__main__":
    main()
