"""Secret masking against secret scanners' own labelled fixtures, and false positives on ordinary text.

    .venv/bin/python bench/secrets_eval.py                      # dev and test → results/secrets.md
    .venv/bin/python bench/secrets_eval.py --split dev --no-write --show 40    # the tuning loop

Positives (../shared/bench/external/secrets/, converted from the scanners' repositories; README there):
- gitleaks.json: the true-positive examples of gitleaks' ~220 rules (MIT), each a text with the exact secret;
- detect_secrets.json: the flagged cases of detect-secrets' plugin tests (Apache-2.0);
- hand_forms.json: the issue's forms and their Chinese counterparts, written by the team.
gitleaks is dev (rules and thresholds were chosen on it); detect-secrets and the hand forms are held out (test).
detect-secrets' regex plugins are part of Mnemo's detector, so its plugin fixtures test how their matches are
extended and masked more than whether the formats are known; its keyword and high-entropy fixtures, and the hand
forms, are independent of that code.

Each text goes through the write path's screening (`core.privacy.screen`, secrets masked, personal data kept):
- recalled: every labelled secret lies wholly inside masked spans;
- partial: some character of a labelled secret masked and some left visible (the defect this issue is about);
- missed: nothing of it masked.
Negatives: ordinary texts (memories, document texts and LoCoMo turns, whose authors wrote no secrets into them):
a false positive is a text where anything at all was masked as a secret, counted as a share of texts. The
scanners' own "must not flag" examples are reported apart, for information: many of them are secrets in free
text (a password without quotes in a C file), so they are no measure of false positives here.
"""

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# A worktree beside the main checkout points these at the shared folder (`EXTERNAL_SETS`, `LOCOMO_PATH`).
EXTERNAL = Path(os.environ.get("EXTERNAL_SETS", ROOT.parent / "shared" / "bench" / "external"))
SECRETS = EXTERNAL / "secrets"
RETRIEVAL = ROOT / "bench" / "data" / "retrieval"
LOCOMO = Path(os.environ.get("LOCOMO_PATH", ROOT.parent / "shared" / "bench" / "locomo10.json"))
RESULTS = ROOT / "bench" / "results" / "secrets.md"

POSITIVE_SPLITS = {"gitleaks": "dev", "detect_secrets": "test", "hand_forms": "test"}
# Ordinary text: whole sets go to one split, so no set is half tuned on. LoCoMo as the retrieval bench splits it.
EXTERNAL_SPLITS = {
    "madial_en": "dev",
    "prefeval_explicit": "dev",
    "knowledge_cmrc2018": "dev",
    "madial_zh": "test",
    "madial_xling": "test",
    "knowledge_drcd": "test",
    "knowledge_xquad": "test",
}
LOCOMO_DEV = {1, 2, 3}


def positives() -> list[dict]:
    items = []
    for name, split in POSITIVE_SPLITS.items():
        data = json.loads((SECRETS / f"{name}.json").read_text())
        for item in data["items"]:
            items.append({**item, "set": name, "split": split})
    return items


def ordinary_texts() -> list[dict]:
    """Memories and document texts of the retrieval sets, and LoCoMo turns: (set, split, text)."""
    texts = []

    def add(name: str, split: str, data: dict) -> None:
        for memory in data.get("memories", []):
            texts.append({"set": name, "split": split, "text": memory["content"]})
        for document in data.get("documents", []):
            texts.append({"set": name, "split": split, "text": document["text"]})

    for path in sorted(RETRIEVAL.glob("*.json")):
        data = json.loads(path.read_text())
        add(path.stem, data["split"], data)
    for name, split in EXTERNAL_SPLITS.items():
        add(name, split, json.loads((EXTERNAL / f"{name}.json").read_text()))
    if LOCOMO.exists():
        for number, sample in enumerate(json.loads(LOCOMO.read_text()), 1):
            split = "dev" if number in LOCOMO_DEV else "test"
            conversation = sample["conversation"]
            for key, turns in conversation.items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts += [{"set": "locomo", "split": split, "text": turn["text"]} for turn in turns]
    return texts


def masked_spans(text: str) -> list[tuple[int, int]]:
    from core.privacy import KEEP, MASK, PERSONAL, SECRET, screen

    screened = screen(text, {SECRET: MASK, PERSONAL: KEEP})
    return [(f.start, f.end) for f in screened.findings if f.category == SECRET]


def coverage(spans: list[tuple[int, int]], start: int, end: int) -> str:
    """How much of [start, end) the masked spans cover: "full", "partial" or "none"."""
    covered = set()
    for s, e in spans:
        covered.update(range(max(s, start), min(e, end)))
    if len(covered) == end - start:
        return "full"
    return "partial" if covered else "none"


def score_positive(item: dict) -> str:
    spans = masked_spans(item["text"])
    results = [coverage(spans, start, end) for start, end in item["spans"]]
    if all(r == "full" for r in results):
        return "recalled"
    return "partial" if any(r != "none" for r in results) else "missed"


def evaluate(split: str, show: int) -> dict:
    started = time.perf_counter()
    by_set: dict[tuple, Counter] = defaultdict(Counter)
    by_group: dict[tuple, Counter] = defaultdict(Counter)
    failures: dict[str, list] = defaultdict(list)
    scanner_negatives: Counter = Counter()
    count = 0
    for item in positives():
        if split != "all" and item["split"] != split:
            continue
        count += 1
        if not item["spans"]:
            flagged = bool(masked_spans(item["text"]))
            scanner_negatives[(item["set"], "texts")] += 1
            scanner_negatives[(item["set"], "masked")] += flagged
            continue
        outcome = score_positive(item)
        by_set[(item["set"], item["split"])][outcome] += 1
        by_group[(item["set"], item["group"])][outcome] += 1
        if outcome != "recalled" and len(failures[item["set"]]) < show:
            failures[item["set"]].append((outcome, item))
    positive_seconds = time.perf_counter() - started

    started = time.perf_counter()
    negatives: dict[tuple, Counter] = defaultdict(Counter)
    false_positives: list = []
    for entry in ordinary_texts():
        if split != "all" and entry["split"] != split:
            continue
        spans = masked_spans(entry["text"])
        key = (entry["set"], entry["split"])
        negatives[key]["texts"] += 1
        negatives[key]["chars"] += len(entry["text"])
        if spans:
            negatives[key]["flagged"] += 1
            false_positives.append((entry, spans))
    negative_seconds = time.perf_counter() - started
    return {
        "by_set": by_set,
        "by_group": by_group,
        "failures": failures,
        "scanner_negatives": scanner_negatives,
        "negatives": negatives,
        "false_positives": false_positives,
        "positive_ms": 1000 * positive_seconds / max(count, 1),
        "negative_ms": 1000 * negative_seconds / max(sum(c["texts"] for c in negatives.values()), 1),
        "negative_chars": sum(c["chars"] for c in negatives.values()),
    }


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.4f}" if whole else "–"


def _snippet(text: str, start: int, end: int, width: int = 60) -> str:
    left = max(0, start - width)
    shown = text[left:start] + "⟦" + text[start:end] + "⟧" + text[end : end + width]
    return shown.replace("\n", "⏎").replace("|", "\\|")


def report(result: dict, split: str, seconds: float, show: int) -> str:
    from report import load, machine, revision

    lines = [
        "# Secret masking",
        "",
        f"{time.strftime('%Y-%m-%d')}, `bench/secrets_eval.py --split {split}`, {seconds:.0f} s; {machine()}; "
        f"load {load()}; revision {revision()}.",
        "",
        "Each text goes through `core.privacy.screen` (the write path's screening; secrets masked). Recalled: "
        "every labelled secret wholly masked; partial: part of a secret masked and part left visible; missed: "
        "nothing of it masked. gitleaks is **dev** (the detector's rules and thresholds were chosen on it and "
        "on the dev ordinary texts); detect-secrets and the hand forms are **held out** (test): nothing was "
        "tuned on them. detect-secrets' regex plugins are part of the detector, so its plugin fixtures test "
        "how their matches are extended and masked; its keyword and high-entropy fixtures and the hand forms "
        "do not depend on that code. Corpus: `../shared/bench/external/secrets/` (README: sources, commits, "
        "licences, conversion).",
        "",
        "The held-out half was first run once the detector was done on dev: 275 of 278 recalled, 1 partial and "
        "2 missed. The partial was a bug, fixed after: a URL right after Chinese text (`连接串是postgres://…`) "
        "was not read as a URL, because `\\b` finds no word boundary between a CJK character and a letter; the "
        "figures below are after that fix. The 2 misses stay by design: a 32-digit hexadecimal string alone in "
        "quotes, left unmasked because commit ids and checksums look the same.",
        "",
        "## Secrets (positives)",
        "",
        "| set | split | secrets | recalled | recall | partial | missed |",
        "|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, Counter] = defaultdict(Counter)
    for (name, item_split), counts in sorted(result["by_set"].items(), key=lambda kv: (kv[0][1], kv[0][0])):
        total = sum(counts.values())
        totals[item_split].update(counts)
        lines.append(
            f"| {name} | {item_split} | {total} | {counts['recalled']} | {_share(counts['recalled'], total)} | "
            f"{counts['partial']} | {counts['missed']} |"
        )
    for item_split, counts in sorted(totals.items()):
        total = sum(counts.values())
        lines.append(
            f"| **all {item_split}** | {item_split} | {total} | {counts['recalled']} | "
            f"**{_share(counts['recalled'], total)}** | **{counts['partial']}** | {counts['missed']} |"
        )
    lines += ["", "## False positives on ordinary text (negatives)", ""]
    lines += [
        "| set | split | texts | characters | texts with a mask | share |",
        "|---|---|---|---|---|---|",
    ]
    negative_totals: dict[str, Counter] = defaultdict(Counter)
    for (name, item_split), counts in sorted(
        result["negatives"].items(), key=lambda kv: (kv[0][1], kv[0][0])
    ):
        negative_totals[item_split].update(counts)
        lines.append(
            f"| {name} | {item_split} | {counts['texts']} | {counts['chars']:,} | {counts['flagged']} | "
            f"{_share(counts['flagged'], counts['texts'])} |"
        )
    for item_split, counts in sorted(negative_totals.items()):
        lines.append(
            f"| **all {item_split}** | {item_split} | {counts['texts']} | {counts['chars']:,} | "
            f"{counts['flagged']} | **{_share(counts['flagged'], counts['texts'])}** |"
        )
    texts = sum(c["texts"] for c in negative_totals.values())
    if texts and not sum(c["flagged"] for c in negative_totals.values()):
        lines += [
            "",
            f"No text masked: at 95% confidence the rate is under {3 / texts:.2%} (3/n, n = {texts:,}).",
        ]
    lines += [
        "",
        f"Time: {result['positive_ms']:.2f} ms per labelled text, {result['negative_ms']:.2f} ms per ordinary "
        f"text ({result['negative_chars']:,} characters in all; the screening includes personal data).",
        "",
        "## The scanners' own negatives (for information)",
        "",
        "The examples each scanner's tests say it must not flag. Many are secrets in free text, so a mask here "
        "is no false positive; shown so a reader sees how far Mnemo masks beyond the scanners.",
        "",
        "| set | texts | masked | share |",
        "|---|---|---|---|",
    ]
    names = sorted({name for name, _ in result["scanner_negatives"]})
    for name in names:
        texts, masked = (
            result["scanner_negatives"][(name, "texts")],
            result["scanner_negatives"][(name, "masked")],
        )
        lines.append(f"| {name} | {texts} | {masked} | {_share(masked, texts)} |")
    weak = [
        (key, counts)
        for key, counts in result["by_group"].items()
        if counts["recalled"] < sum(counts.values())
    ]
    lines += ["", f"## Groups with a secret not wholly masked ({len(weak)})", ""]
    lines += [
        "| set | group (rule / plugin) | secrets | recalled | partial | missed |",
        "|---|---|---|---|---|---|",
    ]
    for (name, group), counts in sorted(weak, key=lambda kv: kv[1]["recalled"] / sum(kv[1].values())):
        lines.append(
            f"| {name} | {group} | {sum(counts.values())} | {counts['recalled']} | {counts['partial']} | "
            f"{counts['missed']} |"
        )
    lines += ["", f"## Secrets not wholly masked (up to {show} per set; ⟦…⟧ marks the labelled secret)", ""]
    for name, failures in sorted(result["failures"].items()):
        lines.append(f"### {name}")
        lines.append("")
        for outcome, item in failures:
            start, end = item["spans"][0]
            lines.append(f"- {outcome}, {item['group']}: `{_snippet(item['text'], start, end)[:300]}`")
        lines.append("")
    lines += [f"## Ordinary texts with a mask ({len(result['false_positives'])}; up to {show})", ""]
    for entry, spans in result["false_positives"][:show]:
        start, end = spans[0]
        lines.append(f"- {entry['set']}: `{_snippet(entry['text'], start, end, 40)[:240]}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--show", type=int, default=25, help="failures and false positives listed per set")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    sys.path.insert(0, str(ROOT / "bench"))
    started = time.perf_counter()
    result = evaluate(args.split, args.show)
    text = report(result, args.split, time.perf_counter() - started, args.show)
    print(text)
    if not args.no_write and args.split == "all":
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
