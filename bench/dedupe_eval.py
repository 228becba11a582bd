"""How well the write path tells duplicates, contradictions and distinct facts apart (memories.curation).

    .venv/bin/python bench/dedupe_eval.py                     # dev, test and throughput → results/dedupe.md
    .venv/bin/python bench/dedupe_eval.py --no-write --throughput 0   # pairs only, printed

Data: bench/data/dedupe/pairs_{dev,test}.json, hand-written pairs (existing memory, new memory) labelled
duplicate / contradiction / distinct (FORMAT.md). Each pair runs under a fresh user on the embedded defaults:
the existing memory is stored as a fact (semantic) through `memory_write`, then the new one is written the same
way, and the action the product takes is compared with the label: a duplicate should be counted on the existing
memory (duplicate or merge), a contradiction should supersede it, a distinct fact should be added beside it.

The near-duplicate threshold (NEAR_DUPLICATE_SIMILARITY) is chosen on dev: the sweep table shows, per threshold,
how many duplicates are caught and how many other pairs would be wrongly merged (a wrong merge loses the new fact,
so it weighs more than a missed duplicate). Test is only reported.

Throughput: the cost of the checks on bulk writes. LoCoMo turns (../shared/bench/locomo10.json, never copied
here) are written as facts (semantic: every check runs, the worst case) through `memory_bulk_create` in batches
of 1,000 into two users, one with the checks on and one with them off, batch by batch in turn so both see the
same machine load; the embedding cache is emptied before each batch, so each run embeds its texts itself. Times
include the vector mirror and entity linking, as a client of POST /memories/bulk waits for them.
"""

import argparse
import json
import os
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

LOCOMO = Path(os.environ.get("LOCOMO_PATH", ROOT.parent / "shared" / "bench" / "locomo10.json"))
EXPECTED = {"duplicate": ("duplicate", "merge"), "contradiction": ("supersede",), "distinct": ("add",)}
SWEEP = (0.75, 0.78, 0.80, 0.82, 0.84, 0.85, 0.86, 0.88, 0.90, 0.92, 0.95)


def run_pairs(pairs: list[dict]) -> list[dict]:
    from django.contrib.auth.models import User

    from memories import curation, services
    from memories.models import MemoryType

    rows = []
    for index, pair in enumerate(pairs):
        user = User.objects.create(username=f"pair-{index}-{time.monotonic_ns()}")
        existing = services.memory_write(user=user, content=pair["existing"], memory_type=MemoryType.SEMANTIC)
        curator = curation.Curator(user)
        probe = services._new_memory(
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
        written = services.memory_write(user=user, content=pair["new"], memory_type=MemoryType.SEMANTIC)
        rows.append(
            {
                **pair,
                "action": written.action,
                "similarity": round(similarity, 4),
                "compatible": compatible,
                "reason": written.reason,
            }
        )
    return rows


def action_at(row: dict, threshold: float) -> str:
    """The action at another threshold: only the near-duplicate step depends on it."""
    if row["action"] in ("duplicate", "supersede"):
        return row["action"]
    if row["similarity"] >= threshold and row["compatible"]:
        return "merge"
    return "add"


def summary(rows: list[dict], threshold: float) -> dict:
    by_label = {label: Counter() for label in EXPECTED}
    for row in rows:
        by_label[row["label"]][action_at(row, threshold)] += 1
    correct = sum(counter[a] for label, counter in by_label.items() for a in EXPECTED[label])
    duplicates = sum(by_label["duplicate"].values())
    others = len(rows) - duplicates
    wrong_merges = sum(
        by_label[label][a] for label in ("contradiction", "distinct") for a in ("duplicate", "merge")
    )
    caught = by_label["duplicate"]["duplicate"] + by_label["duplicate"]["merge"]
    contradictions = sum(by_label["contradiction"].values())
    return {
        "accuracy": correct / len(rows),
        "duplicate_recall": caught / duplicates if duplicates else 0.0,
        "wrong_merges": wrong_merges,
        "wrong_merge_rate": wrong_merges / others if others else 0.0,
        "supersede_recall": by_label["contradiction"]["supersede"] / contradictions
        if contradictions
        else 0.0,
        "wrong_supersedes": by_label["duplicate"]["supersede"] + by_label["distinct"]["supersede"],
        "by_label": by_label,
    }


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
    from memories.models import Memory
    from memories.services import NewMemory, memory_bulk_create

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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not write results/dedupe.md")
    parser.add_argument("--json", type=Path, help="also write every pair's outcome here")
    parser.add_argument(
        "--throughput", type=int, default=10_000, help="facts per side (0: skip); default 10,000"
    )
    args = parser.parse_args()

    from bench.embedded import setup_django

    setup_django(Path(tempfile.mkdtemp(prefix="mnemo-dedupe-")))
    from memories.curation import NEAR_DUPLICATE_SIMILARITY

    started = time.perf_counter()
    results = {}
    for split in ("dev", "test"):
        data = json.loads((DATA / f"pairs_{split}.json").read_text())
        results[split] = run_pairs(data["pairs"])
    seconds = time.perf_counter() - started

    lines = [
        "# Duplicates, contradictions and distinct facts on write",
        "",
        f"{time.strftime('%Y-%m-%d')}, `bench/dedupe_eval.py`, embedded defaults, {seconds:.0f} s. "
        f"Pairs: bench/data/dedupe (hand-written, {len(results['dev'])} dev / {len(results['test'])} test; "
        "English, Chinese and mixed). Each pair: the existing memory is stored as a fact, then the new one is "
        "written through `memory_write`; the action is compared with the label.",
        "",
        f"## At the product's threshold (NEAR_DUPLICATE_SIMILARITY = {NEAR_DUPLICATE_SIMILARITY}, chosen on dev)",
        "",
        "| split | pairs | accuracy | duplicates caught | wrong merges (of non-duplicates) | contradictions "
        "superseded | wrong supersedes |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, rows in results.items():
        s = summary(rows, NEAR_DUPLICATE_SIMILARITY)
        lines.append(
            f"| {split} | {len(rows)} | {s['accuracy']:.3f} | {s['duplicate_recall']:.3f} | "
            f"{s['wrong_merges']} ({s['wrong_merge_rate']:.3f}) | {s['supersede_recall']:.3f} | "
            f"{s['wrong_supersedes']} |"
        )
    lines += ["", "Actions per label (add / duplicate / merge / supersede):", ""]
    lines += [
        "| split | language | label | add | duplicate | merge | supersede |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, rows in results.items():
        for language in ("en", "zh", "mixed"):
            for label in EXPECTED:
                counter = Counter(
                    action_at(r, NEAR_DUPLICATE_SIMILARITY)
                    for r in rows
                    if r["label"] == label and r["lang"] == language
                )
                lines.append(
                    f"| {split} | {language} | {label} | {counter['add']} | {counter['duplicate']} | "
                    f"{counter['merge']} | {counter['supersede']} |"
                )
    lines += [
        "",
        "## Threshold sweep (the near-duplicate step only; the other steps do not depend on it)",
        "",
        "| threshold | dev accuracy | dev duplicates caught | dev wrong merges | test accuracy | test duplicates "
        "caught | test wrong merges |",
        "|---|---|---|---|---|---|---|",
    ]
    for threshold in SWEEP:
        dev, test = summary(results["dev"], threshold), summary(results["test"], threshold)
        lines.append(
            f"| {threshold:.2f} | {dev['accuracy']:.3f} | {dev['duplicate_recall']:.3f} | {dev['wrong_merges']} | "
            f"{test['accuracy']:.3f} | {test['duplicate_recall']:.3f} | {test['wrong_merges']} |"
        )
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
    misses = [
        r for r in results["test"] if action_at(r, NEAR_DUPLICATE_SIMILARITY) not in EXPECTED[r["label"]]
    ]
    lines += ["", f"## Test pairs the product gets wrong ({len(misses)})", ""]
    lines += ["| id | label | action | similarity | existing | new |", "|---|---|---|---|---|---|"]
    for r in misses:
        lines.append(
            f"| {r['id']} | {r['label']} | {action_at(r, NEAR_DUPLICATE_SIMILARITY)} | {r['similarity']:.2f} | "
            f"{r['existing']} | {r['new']} |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=2))
    if not args.no_write:
        RESULTS.write_text(report)


if __name__ == "__main__":
    main()
