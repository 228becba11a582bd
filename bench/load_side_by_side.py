"""Searches/s under load for a base revision and this checkout, in turns on the same data.

    .venv/bin/python bench/load_side_by_side.py --base a6d0020 [--size 10000] [--clients 50] [--seconds 25]
                                                [--pairs 3] [--no-write]

These machines are shared, and the searches/s of one revision under 50 clients moves by a tenth from one run to the
next (bench/results/memory_load.md of different hours: 27.6, 34.8, 39.8 before this script). So whether a change
made the server faster is read from its ratio to a base revision measured beside it, turn by turn.

One load of `--size` LoCoMo turns through the base revision (memory_bench.load_indexed: the background optimization
the load makes due included), kept on disk. The base revision is checked out in a temporary git worktree (sharing
this checkout's .venv; it must read the same database schema). Then `--pairs` times, base first: a copy of the
loaded data dir, a server from that revision on it (gunicorn, one worker, 8 threads, as `make run`), 10 clients
for 5 s to warm it, then `--clients` clients searching for `--seconds` (memory_bench's load phase: distinct LoCoMo
questions). Writes bench/results/load_side_by_side.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import memory_bench as mb
from report import load, markdown


def _checkout(revision: str, into: Path) -> Path:
    """`revision` in a detached worktree under `into`, using this checkout's virtualenv."""
    tree = into / "base"
    subprocess.run(
        ["git", "-C", str(mb.ROOT), "worktree", "add", "--detach", str(tree), revision], check=True
    )
    (tree / ".venv").symlink_to(mb.ROOT / ".venv")
    return tree


def _turn(
    loaded: Path, root: Path, into: Path, args: argparse.Namespace, questions: list[str], tag: str
) -> dict:
    """One revision's searches/s on a fresh copy of the loaded data."""
    data_dir = into / tag
    shutil.copytree(loaded, data_dir)
    try:
        env = mb._server_env(data_dir)
        key = mb._manage(env, "create_api_key", "load", "--name", tag, root=root).strip().splitlines()[-1]
        with mb.serve(data_dir, env, threads=8, root=root) as (base_url, process, log):
            server = mb.Server(base_url, data_dir, {"load": key}, process.pid, log)
            search = mb.distinct_searches(server, questions, tag=f"{tag}-")
            mb._hammer(server, 10, 5.0, search)
            return mb._hammer(server, args.clients, args.seconds, search)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the revision to compare this checkout with")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    started = datetime.now(UTC)
    before = mb.machine()
    head = subprocess.run(
        ["git", "-C", str(mb.ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    base = subprocess.run(
        ["git", "-C", str(mb.ROOT), "rev-parse", "--short", args.base],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="mnemo-side-") as scratch:
        into = Path(scratch)
        tree = _checkout(args.base, into)
        try:
            # Loaded by the base revision: this checkout's store settings (qdrant-edge's search threads) are
            # applied by its own code when it opens the copy, not inherited by the base.
            with mb.mnemo(["load"], keep=True, threads=8, root=tree) as server:
                indexed = mb.load_indexed(server, mb.Client(server, "load"), mb.latency_memories(args.size))
            print(indexed, flush=True)
            questions = mb.latency_queries(
                10_000
            )  # every LoCoMo question (categories 1-4), as the load bench
            turns = []
            for pair in range(1, args.pairs + 1):
                for label, root in ((base, tree), (head, mb.ROOT)):
                    mb.wait_quiet(60)
                    result = _turn(server.data_dir, root, into, args, questions, f"{label}-{pair}")
                    turns.append((pair, label, result))
                    print(f"pair {pair} {label}: {result['rate']:.1f} searches/s", flush=True)
        finally:
            shutil.rmtree(server.data_dir, ignore_errors=True)
            subprocess.run(
                ["git", "-C", str(mb.ROOT), "worktree", "remove", "--force", str(tree)], check=False
            )
    rows = [
        [
            str(pair),
            label,
            f"{r['rate']:.1f}",
            f"{r['server_ms']:.1f}",
            f"{r['server_cores']:.2f}",
            f"{r['p95']:.0f}",
            str(r["errors"]),
        ]
        for pair, label, r in turns
    ]
    ratios = [
        head_turn["rate"] / base_turn["rate"]
        for (_, _, base_turn), (_, _, head_turn) in zip(turns[::2], turns[1::2], strict=True)
    ]
    table = markdown(
        ["pair", "revision", "searches/s", "server CPU ms per search", "cores busy", "p95 ms", "errors"], rows
    )
    summary = (
        f"{head} / {base}, searches/s pair by pair: {', '.join(f'{r:.2f}' for r in ratios)} "
        f"(median {statistics.median(ratios):.2f})."
    )
    print(table, summary, sep="\n")
    if args.no_write:
        return
    path = mb.RESULTS / "load_side_by_side.md"
    path.write_text(f"""# Searches/s under load, side by side with a base revision

Measured {started:%Y-%m-%d %H:%M} UTC by `bench/load_side_by_side.py --base {args.base} --size {args.size}
--clients {args.clients} --seconds {args.seconds:.0f} --pairs {args.pairs}`. Machine: nproc {before["nproc"]},
{before["cpu"]}; load average {before["load"]} before, {load()} after. Versions: {mb.versions()}.

## Method

The machines here are shared: one revision's searches/s under many clients moves by a tenth from one run to the
next, so a change is read from its ratio to a base revision measured beside it, turn by turn. {indexed[0].upper() + indexed[1:]}.
Each turn serves a fresh copy of the same loaded data from one revision (base {base}: a git worktree sharing this
checkout's .venv; this checkout {head}) as `make run` does (gunicorn, one worker, 8 threads), warms it with 10
clients for 5 s, then {args.clients} clients, each on its own keep-alive connection, send distinct LoCoMo questions
to `POST /api/v1/memories/search` back to back for {args.seconds:.0f} s. Before each turn the script waits (up to
60 s) for a quiet machine.

## Results

{table}

{summary}
""")
    print(f"Wrote {path}")


if __name__ == "__main__":
    main()
