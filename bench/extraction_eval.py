"""Entity and relation extraction against hand-labelled sentences (memories.entities, offline).

    .venv/bin/python bench/extraction_eval.py             # dev and test → results/extraction.md
    .venv/bin/python bench/extraction_eval.py --no-write

Data: bench/data/extraction/sentences_{dev,test}.json (FORMAT.md): sentences in English, Chinese and both, each
with its named entities and the relations it states (a closed set of types). Patterns were adjusted on dev;
test is only reported.

- Entities match by Mnemo's merge key (memories.entities.entity_key: case and width folded), type ignored (the
  type is reported separately as the share of matched entities with the labelled type, PRODUCT and SKILL counted
  as one).
- Typed relations match as (source key, target key, type), direction included. They are what the graph shows as
  a typed edge; CO_OCCURS ("named together") is not a claim about the pair and is reported apart: a pair edge is
  right when the sentence relates the pair in some labelled way, either direction.
"""

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "extraction"
RESULTS = ROOT / "bench" / "results" / "extraction.md"
sys.path.insert(0, str(ROOT))

SAME_TYPE = {"SKILL": "PRODUCT"}
SYMMETRIC = {"KNOWS", "FAMILY"}  # labelled in the order the names appear


def canonical(source: str, target: str, relation_type: str) -> tuple:
    """One form per fact: "A MANAGES B" is "B REPORTS_TO A"; a symmetric relation has no direction."""
    if relation_type == "MANAGES":
        return (target, source, "REPORTS_TO")
    if relation_type in SYMMETRIC:
        return (frozenset((source, target)), relation_type)
    return (source, target, relation_type)


def _type(name: str) -> str:
    return SAME_TYPE.get(name, name)


def evaluate(sentences: list[dict]) -> dict:
    from memories.entities import entity_key, extract
    from memories.services import typed_pairs

    counts = Counter()
    typed_ok = Counter()
    wrong: list[str] = []
    for sentence in sentences:
        extraction = extract(sentence["text"])
        labelled = {entity_key(e["name"]): _type(e["type"]) for e in sentence["entities"]}
        found = {m.key: _type(m.entity_type) for m in extraction.mentions}
        hits = set(labelled) & set(found)
        counts["entity_tp"] += len(hits)
        counts["entity_found"] += len(found)
        counts["entity_labelled"] += len(labelled)
        counts["type_ok"] += sum(labelled[k] == found[k] for k in hits)
        gold = {
            canonical(entity_key(r["source"]), entity_key(r["target"]), r["type"])
            for r in sentence["relations"]
        }
        gold_pairs = {
            frozenset((entity_key(r["source"]), entity_key(r["target"]))) for r in sentence["relations"]
        }
        typed = {canonical(*relation) for relation in typed_pairs(extraction)}
        counts["rel_tp"] += len(typed & gold)
        counts["rel_found"] += len(typed)
        counts["rel_labelled"] += len(gold)
        for relation in typed:
            typed_ok[relation[2]] += relation in gold
            if relation not in gold:
                wrong.append(
                    f"{sentence['id']}: {relation[0]} {relation[2]} {relation[1]} — “{sentence['text']}”"
                )
        linked = {m.key for m in extraction.mentions}
        keys = sorted(linked)
        pairs = {frozenset((a, b)) for i, a in enumerate(keys) for b in keys[i + 1 :]}
        counts["pair_found"] += len(pairs)
        counts["pair_ok"] += len(pairs & gold_pairs)
        counts["pair_labelled"] += len(gold_pairs)

    def ratio(a: str, b: str) -> float:
        return counts[a] / counts[b] if counts[b] else 0.0

    return {
        "sentences": len(sentences),
        "entity_precision": ratio("entity_tp", "entity_found"),
        "entity_recall": ratio("entity_tp", "entity_labelled"),
        "type_accuracy": ratio("type_ok", "entity_tp"),
        "relation_precision": ratio("rel_tp", "rel_found"),
        "relation_recall": ratio("rel_tp", "rel_labelled"),
        "relations_found": counts["rel_found"],
        "pair_precision": ratio("pair_ok", "pair_found"),
        "pair_recall": ratio("pair_ok", "pair_labelled"),
        "wrong": wrong,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    started = time.perf_counter()
    results = {}
    for split in ("dev", "test"):
        data = json.loads((DATA / f"sentences_{split}.json").read_text())
        results[split] = evaluate(data["sentences"])
    lines = [
        "# Entity and relation extraction (offline)",
        "",
        f"{time.strftime('%Y-%m-%d')}, `bench/extraction_eval.py`, {time.perf_counter() - started:.0f} s. "
        "Sentences: bench/data/extraction (hand-labelled; English, Chinese, mixed). Patterns adjusted on dev, "
        "test only reported.",
        "",
        "| split | sentences | entity P | entity R | type ok | typed relation P | typed relation R | typed "
        "relations | pair edge P | pair edge R |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for split, r in results.items():
        lines.append(
            f"| {split} | {r['sentences']} | {r['entity_precision']:.3f} | {r['entity_recall']:.3f} | "
            f"{r['type_accuracy']:.3f} | {r['relation_precision']:.3f} | {r['relation_recall']:.3f} | "
            f"{r['relations_found']} | {r['pair_precision']:.3f} | {r['pair_recall']:.3f} |"
        )
    lines += [
        "",
        "Typed relation: an edge with a type (WORKS_AT, LIVES_IN, SKILLED_IN, USES, REPORTS_TO, STUDIED_AT, LOCATED_IN); its precision is the share "
        "the sentence states, with that type and direction. Pair edge: any edge between two entities of the "
        "sentence (the graph adds CO_OCCURS for a pair with no typed relation); right when the sentence relates "
        "the pair.",
        "",
        f"## Wrong typed relations on test ({len(results['test']['wrong'])})",
        "",
        *[f"- {line}" for line in results["test"]["wrong"]],
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.no_write:
        RESULTS.write_text(report)


if __name__ == "__main__":
    main()
