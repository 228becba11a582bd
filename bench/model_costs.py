"""What each candidate embedding model costs: CPU per query and per stored text, and memory, on this machine.

    .venv/bin/python bench/model_costs.py            # → results/model_costs.md (about two minutes)

Each model runs in a process of its own (so its memory is its own): the resident set before and after loading it
and embedding one text is its memory; then the CPU time of the calling thread (time.thread_time, so another
process on the machine does not count) for 100 queries one at a time (embed_query) and 100 stored texts one at a
time (embed, as one add does), in English (LoCoMo questions and turns) and in Chinese (MADial-Bench's Chinese
dialogue openings and memories, ../shared/bench/external). The models run as Mnemo runs them, each call on one
thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ("minilm", "use", "e5", "bge_zh", "bge_en")
N = 100


def texts() -> dict[str, tuple[list[str], list[str]]]:
    from memory_bench import load_locomo

    conversation = load_locomo([1])[0]
    english = ([q.text for q in conversation.questions][:N], [t.content for t in conversation.turns][:N])
    madial = json.loads((ROOT.parent / "shared" / "bench" / "external" / "madial_zh.json").read_text())
    chinese = (
        [q["question"].split("\n")[0][:120] for q in madial["questions"]][:N],
        [m["content"] for m in madial["memories"]][:N],
    )
    return {"en": english, "zh": chinese}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(model: str) -> dict:
    """Run in a child process: one model's memory and CPU."""
    import config  # noqa: F401 - the app's process setup before numpy loads
    from core.embeddings import build_embedding_set

    embedder = build_embedding_set(model).spaces[model]
    before = rss_mb()
    embedder.embed(["warm up"])
    embedder.embed_query("warm up")
    out: dict = {"model": model, "memory_mb": rss_mb() - before}
    for language, (queries, stored) in texts().items():
        began = time.thread_time()
        for query in queries:
            embedder.embed_query(query)
        out[f"query_ms_{language}"] = (time.thread_time() - began) / len(queries) * 1000
        began = time.thread_time()
        for text in stored:
            embedder.embed([text])
        out[f"stored_ms_{language}"] = (time.thread_time() - began) / len(stored) * 1000
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        sys.path.insert(0, str(ROOT / "bench"))
        print(json.dumps(measure(sys.argv[2])))
        return
    from report import load, machine, markdown, revision

    before = load()
    rows = []
    for model in MODELS:
        done = subprocess.run(
            [sys.executable, __file__, "--one", model], capture_output=True, text=True, check=True, cwd=ROOT
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(result)
        print(result, flush=True)
    table = markdown(
        [
            "model",
            "memory MB",
            "CPU ms per query (en)",
            "per query (zh)",
            "per stored text (en)",
            "per stored text (zh)",
        ],
        [
            [r["model"], f"{r['memory_mb']:.0f}"]
            + [f"{r[key]:.1f}" for key in ("query_ms_en", "query_ms_zh", "stored_ms_en", "stored_ms_zh")]
            for r in rows
        ],
    )
    doc = __doc__.split("\n\n", 2)[2].strip()
    report = f"""# What each embedding model costs

Measured {time.strftime("%Y-%m-%d %H:%M", time.gmtime())} UTC. Machine: {machine()}; load average {before} before,
{load()} after. Revision: {revision()}.

{doc}

{table}
"""
    (ROOT / "bench" / "results" / "model_costs.md").write_text(report)
    print(table)
    (ROOT / "bench" / "results" / "model_costs.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
