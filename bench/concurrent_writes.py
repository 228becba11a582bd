"""Concurrent writes through the HTTP API: bulk adds and single adds at once, then every acknowledged memory checked.

    .venv/bin/python bench/concurrent_writes.py                        # embedded default → results/concurrent_writes.md
    .venv/bin/python bench/concurrent_writes.py --stack production     # PostgreSQL + Redis + Celery → ..._production.md
    .venv/bin/python bench/concurrent_writes.py --seconds 20 --no-write   # a quick look

A fresh Mnemo served as `make run` serves it (gunicorn, one worker, 8 threads; bench/memory_bench.py's `mnemo`),
then `--bulk-clients` threads each send `POST /api/v1/memories/bulk` of `--items` memories back to back while
`--single-clients` threads send `POST /api/v1/memories/` one at a time, for `--seconds`. Contents are LoCoMo turns
(../shared/bench/locomo10.json, as the load benchmark reads them) made distinct by a client and item number;
half of each bulk is semantic (embedded before the curation's near-duplicate check), half episodic.

Afterwards the database is read directly: every memory a 201 acknowledged must be there exactly once (its id, and
no second row with its content), and no row may exist that no response acknowledged (a write that failed must
leave nothing). An error is any status >= 400 or a failed connection.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_bench import (  # noqa: E402
    RESULTS,
    Server,
    _server_env,
    latency_memories,
    machine,
    mnemo,
    pct,
    server_errors,
    versions,
)
from report import load  # noqa: E402

TARGET = "0 errors, every acknowledged memory stored once"


def bulk_items(client: int, round_: int, items: int, pool: list[str]) -> list[dict]:
    return [
        {
            "content": f"[b{client}.{round_}.{n}] {pool[(client * 7919 + round_ * items + n) % len(pool)]}",
            "memory_type": "semantic" if n % 2 else "episodic",
            "session_id": f"bulk-{client}",
        }
        for n in range(items)
    ]


class Tally:
    """What the clients were told: acknowledged ids with their contents, latencies and errors per kind."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acknowledged: dict[str, str] = {}  # id -> content, for the writes that stored a new row
        self.counted: int = 0  # items acknowledged as a repeat of a stored memory (not a new row)
        self.latency: dict[str, list[float]] = {"bulk": [], "single": []}
        self.errors: dict[str, list[str]] = {"bulk": [], "single": []}
        self.sent: dict[str, int] = {"bulk": 0, "single": 0}

    def record(self, kind: str, began: float, response, contents: list[str]) -> None:
        elapsed = time.perf_counter() - began
        with self.lock:
            self.latency[kind].append(elapsed)
            if isinstance(response, Exception):
                self.errors[kind].append(response.__class__.__name__)
                return
            if response.status_code >= 400:
                self.errors[kind].append(f"HTTP {response.status_code}: {response.text[:120]}")
                return
            body = response.json()
            if kind == "bulk":
                pairs = list(zip(body["ids"], body["actions"], strict=True))
            else:
                pairs = [(body["id"], body.get("write", {}).get("action", "add"))]
            for (memory_id, action), content in zip(pairs, contents, strict=True):
                if action in ("add", "supersede"):
                    self.acknowledged[memory_id] = content
                else:
                    self.counted += 1


def hammer(server: Server, args: argparse.Namespace, pool: list[str]) -> tuple[Tally, float]:
    tally = Tally()
    stop_at = time.monotonic() + args.seconds
    url = f"{server.base_url}/api/v1/memories"

    def bulk_client(client: int) -> None:
        http = requests.Session()
        http.headers["X-API-Key"] = server.keys["writer"]
        round_ = 0
        while time.monotonic() < stop_at:
            items = bulk_items(client, round_, args.items, pool)
            began = time.perf_counter()
            try:
                response = http.post(f"{url}/bulk", json={"items": items}, timeout=900)
            except requests.RequestException as exc:
                response = exc
            tally.record("bulk", began, response, [item["content"] for item in items])
            with tally.lock:
                tally.sent["bulk"] += len(items)
            round_ += 1

    def single_client(client: int) -> None:
        http = requests.Session()
        http.headers["X-API-Key"] = server.keys["writer"]
        n = 0
        while time.monotonic() < stop_at:
            content = f"[s{client}.{n}] {pool[(client * 104_729 + n) % len(pool)]}"
            body = {"content": content, "memory_type": "semantic" if n % 2 else "episodic"}
            began = time.perf_counter()
            try:
                response = http.post(url + "/", json=body, timeout=900)
            except requests.RequestException as exc:
                response = exc
            tally.record("single", began, response, [content])
            with tally.lock:
                tally.sent["single"] += 1
            n += 1

    threads = [threading.Thread(target=bulk_client, args=(c,)) for c in range(args.bulk_clients)]
    threads += [threading.Thread(target=single_client, args=(c,)) for c in range(args.single_clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.monotonic() - began


def stored_rows(server: Server, database_url: str) -> list[tuple[str, str]]:
    """(id, content) of every memory in the server's database, ids in canonical UUID text."""
    import uuid

    query = "SELECT id, content FROM memories_memory"
    if database_url:
        import psycopg

        with psycopg.connect(database_url) as connection:
            return [(str(row[0]), row[1]) for row in connection.execute(query)]
    with sqlite3.connect(server.data_dir / "mnemo.sqlite3") as connection:
        return [(str(uuid.UUID(row[0])), row[1]) for row in connection.execute(query)]


def check(tally: Tally, rows: list[tuple[str, str]]) -> dict[str, int]:
    by_id = dict(rows)
    contents = Counter(content for _, content in rows)
    return {
        "acknowledged": len(tally.acknowledged),
        "repeats counted": tally.counted,
        "stored": len(rows),
        "acknowledged but missing": sum(1 for memory_id in tally.acknowledged if memory_id not in by_id),
        "stored twice": sum(1 for count in contents.values() if count > 1),
        "stored but never acknowledged": sum(1 for memory_id in by_id if memory_id not in tally.acknowledged),
    }


@contextmanager
def served(args: argparse.Namespace):
    if args.stack == "embedded":
        with mnemo(["writer"], threads=8, keep=args.keep) as server:
            yield server, "", "the embedded defaults (SQLite in WAL mode, Qdrant Edge, the in-process pool)"
        return
    from production_stack import celery_worker, production_stack

    with (
        production_stack() as stack,
        mnemo(["writer"], threads=8, stack_env=stack.env, keep=args.keep) as server,
        celery_worker(_server_env(server.data_dir) | stack.env, server.data_dir / "worker.log"),
    ):
        yield server, stack.database_url, stack.described


def run(args: argparse.Namespace) -> None:
    pool = [item["content"] for item in latency_memories(5_000)]
    started_at = datetime.now(UTC)
    info = machine()
    print(
        f"{args.bulk_clients} bulk clients ({args.items} items) + {args.single_clients} single-add clients for "
        f"{args.seconds:.0f} s on the {args.stack} stack …",
        flush=True,
    )
    with served(args) as (server, database_url, described):
        tally, elapsed = hammer(server, args, pool)
        rows = stored_rows(server, database_url)
        if any(tally.errors.values()):
            print(server_errors(server.log), flush=True)
    found = check(tally, rows)
    table = [
        "| client | clients | requests | items/s | p50 s | p95 s | max s | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, clients in (("bulk", args.bulk_clients), ("single", args.single_clients)):
        seconds = np.array(tally.latency[kind])
        errors = tally.errors[kind]
        kinds = ", ".join(f"{n}× {what}" for what, n in Counter(errors).most_common(3))
        table.append(
            f"| {kind} | {clients} | {len(seconds):,} | {tally.sent[kind] / elapsed:.1f} | "
            f"{pct(seconds, 50):.2f} | {pct(seconds, 95):.2f} | {seconds.max():.2f} | "
            f"{len(errors)}{' (' + kinds + ')' if kinds else ''} |"
        )
    checks = ["| check | count |", "|---|---|", *(f"| {name} | {count:,} |" for name, count in found.items())]
    met = (
        not any(tally.errors.values())
        and found["acknowledged but missing"] == 0
        and found["stored twice"] == 0
        and found["stored but never acknowledged"] == 0
    )
    verdict = f"Target ({TARGET}): {'met' if met else 'NOT met'}."
    print("\n".join(table), "", "\n".join(checks), "", verdict, sep="\n")
    if args.no_write:
        return
    production = args.stack == "production"
    command = "bench/concurrent_writes.py" + (" --stack production" if production else "")
    report = f"""# Concurrent bulk and single writes{" on the production stack" if production else ""}

Measured {started_at:%Y-%m-%d %H:%M} UTC by `{command} --bulk-clients {args.bulk_clients} --items {args.items}
--single-clients {args.single_clients} --seconds {args.seconds:.0f}`. Machine: nproc {info["nproc"]}, {info["cpu"]};
load average {info["load"]} before, {load()} after. Versions: {versions(["psycopg", "celery"] if production else ())}.

## Method

A fresh Mnemo on {described}, served as `make run` serves it (gunicorn, one worker, 8 threads). For
{args.seconds:.0f} s, {args.bulk_clients} client threads each send `POST /api/v1/memories/bulk` with {args.items}
memories (half semantic, half episodic; LoCoMo turns made distinct by client, round and item) back to back, while
{args.single_clients} threads each send `POST /api/v1/memories/` one memory at a time. Each thread has its own
keep-alive connection; latency is client-side wall time. Then the database is read directly and compared with what
the clients were told.

## Results

{chr(10).join(table)}

{chr(10).join(checks)}

{verdict} The clients run on the same two cores as the server; items/s counts the items sent.
"""
    path = RESULTS / ("concurrent_writes_production.md" if production else "concurrent_writes.md")
    path.write_text(report)
    print(f"Wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", choices=("embedded", "production"), default="embedded")
    parser.add_argument("--bulk-clients", type=int, default=10)
    parser.add_argument("--items", type=int, default=200, help="memories per bulk request")
    parser.add_argument("--single-clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--keep", action="store_true", help="keep the data dir")
    parser.add_argument("--no-write", action="store_true")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
