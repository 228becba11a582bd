"""CPU per search and per add, process by process, on the embedded defaults and on the production stack.

    .venv/bin/python bench/stack_cpu.py [--stacks embedded,production] [--size 10000] [--requests 200]
                                        [--no-neo4j] [--no-write]

For an operator sizing a deployment: how much CPU one search and one add cost in each process of a stack, and
so how many of each one core serves. Each stack is started fresh (bench/production_stack.py for PostgreSQL,
Redis, the Qdrant stand-in and a Celery worker; scripts/neo4j-harness.sh for Neo4j), served as `make run` serves
it, and loaded with `--size` LoCoMo turns. Then one client sends `--requests` searches one after another, and
as many adds; the CPU time of every process of the stack (user + system, read from /proc, children that ended
included) is read before each phase and again once the stack has gone quiet after it, so work a request leaves
to the Celery worker counts for that request. What the stack burns while idle (Neo4j's JVM, PostgreSQL's
background writers) over the same time is subtracted. Writes bench/results/stack_cpu.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_bench import (  # noqa: E402
    RESULTS,
    Client,
    _server_env,
    latency_memories,
    latency_queries,
    load_indexed,
    machine,
    mnemo,
    versions,
)

TICK = os.sysconf("SC_CLK_TCK")

#: What each process of a stack is, by its command line (first match wins).
ROLES = (
    ("gunicorn", "web server (gunicorn: Django, the embedding models; embedded: also the stores and tasks)"),
    ("celery", "Celery worker"),
    ("qdrant_standin", "Qdrant stand-in (qdrant-client's local engine over REST)"),
    ("redis-server", "Redis"),
    ("postgres", "PostgreSQL"),
    ("neo4j", "Neo4j (JVM)"),
)
STANDIN = ROLES[2][1]
CLIENT = "the benchmark's client"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    seconds: float  # user + system, with the children it has reaped
    cmdline: str


def _processes() -> dict[int, Proc]:
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ticks = sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        found[int(entry.name)] = Proc(int(entry.name), int(fields[1]), ticks / TICK, cmdline)
    return found


def _role(cmdline: str) -> str | None:
    return next((role for needle, role in ROLES if needle in cmdline), None)


class StackMeter:
    """CPU seconds by role of the processes under this benchmark and under `roots` (daemons it started that
    their launcher left, as PostgreSQL and the Neo4j JVM)."""

    def __init__(self, roots: tuple[int, ...] = ()) -> None:
        self.roots = roots

    def read(self) -> dict[str, float]:
        procs = _processes()
        children: dict[int, list[int]] = {}
        for proc in procs.values():
            children.setdefault(proc.ppid, []).append(proc.pid)
        seen: set[int] = set()
        todo = [*children.get(os.getpid(), []), *(pid for pid in self.roots if pid in procs)]
        totals: dict[str, float] = {}
        while todo:
            pid = todo.pop()
            if pid in seen or pid not in procs:
                continue
            seen.add(pid)
            todo.extend(children.get(pid, []))
            # A live child's time is its own; once its parent reaps it, it is in the parent's (cutime, cstime).
            if (role := _role(procs[pid].cmdline)) is not None:
                totals[role] = totals.get(role, 0.0) + procs[pid].seconds
        times = os.times()
        totals[CLIENT] = times.user + times.system
        return totals


def settle(
    meter: StackMeter, limit_s: float = 900.0, window_s: float = 3.0, idle_share: float = 0.05
) -> None:
    """Wait until the stack has gone quiet (under `idle_share` of a core over `window_s`, the client aside)."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        before = meter.read()
        time.sleep(window_s)
        after = meter.read()
        spent = sum(after.get(k, 0.0) - before.get(k, 0.0) for k in after if k != CLIENT)
        if spent < idle_share * window_s:
            return


def idle_rates(meter: StackMeter, seconds: float = 15.0) -> dict[str, float]:
    """CPU seconds per second that each role spends with no request."""
    before = meter.read()
    time.sleep(seconds)
    after = meter.read()
    return {role: max(0.0, (after[role] - before.get(role, 0.0)) / seconds) for role in after}


@dataclass
class Phase:
    requests: int
    wall_s: float  # from the first request to the stack quiet again
    request_s: float  # the requests alone, back to back
    cpu: dict[str, float]  # per role, CPU seconds over the phase, the idle rate's share taken off


def measure(meter: StackMeter, idle: dict[str, float], requests: list, send) -> Phase:
    before = meter.read()
    started = time.monotonic()
    for item in requests:
        send(item)
    request_s = time.monotonic() - started
    settle(meter)
    wall_s = time.monotonic() - started
    after = meter.read()
    cpu = {
        role: max(0.0, after[role] - before.get(role, 0.0) - idle.get(role, 0.0) * wall_s) for role in after
    }
    return Phase(len(requests), wall_s, request_s, cpu)


@contextmanager
def served_stack(stack: str, size: int, with_neo4j: bool) -> Iterator[tuple[Client, StackMeter, str]]:
    """A loaded, quiet Mnemo on `stack`: a client, a meter over its processes, and a line naming the stack."""
    if stack == "embedded":
        with mnemo(["cpu"], threads=8) as server:
            client = Client(server, "cpu")
            indexed = load_indexed(server, client, latency_memories(size))
            print(f"embedded: {indexed}", flush=True)
            yield (
                client,
                StackMeter(),
                f"the embedded defaults (SQLite, Qdrant Edge, the in-process worker pool); {indexed}",
            )
        return
    from production_stack import celery_worker, neo4j_harness, postmaster_pid, production_stack, wait_mirrored

    with neo4j_harness(with_neo4j) as (uri, jvm), production_stack(uri) as services:
        roots = (postmaster_pid(services.database_url), *([jvm] if jvm else []))
        with mnemo(["cpu"], threads=8, stack_env=services.env) as server:
            worker_env = _server_env(server.data_dir) | services.env
            with celery_worker(worker_env, server.data_dir / "worker.log"):
                client = Client(server, "cpu")
                client.bulk(latency_memories(size))
                wait_mirrored(services.database_url, 1800)
                yield client, StackMeter(roots), services.described


def run_stack(stack: str, args: argparse.Namespace) -> dict:
    print(f"{stack}: loading {args.size:,} memories …", flush=True)
    with served_stack(stack, args.size, not args.no_neo4j) as (client, meter, described):
        settle(meter)
        queries = latency_queries(args.requests + 10)
        for n, query in enumerate(queries[:10]):  # the first of each warms caches (and Neo4j's JIT)
            client.search(query)
            client.add(f"CPU bench warm-up {n}: {query}")
        settle(meter)
        idle = idle_rates(meter)
        print(f"{stack}: idle CPU by process {idle}", flush=True)
        searches = measure(meter, idle, queries[10 : 10 + args.requests], client.search)
        print(f"{stack}: searches {searches}", flush=True)
        contents = [
            f"CPU bench note {n}: " + item["content"]
            for n, item in enumerate(latency_memories(args.requests, offset=args.size))
        ]
        adds = measure(meter, idle, contents, client.add)
        print(f"{stack}: adds {adds}", flush=True)
    return {"described": described, "search": searches, "add": adds, "idle": idle}


def report(args: argparse.Namespace, results: dict[str, dict], info: dict, started_at: datetime) -> str:
    lines = []
    for stack, result in results.items():
        search, add = result["search"], result["add"]
        roles = [role for _, role in ROLES if role in search.cpu or role in add.cpu]
        lines += [
            f"### {stack}",
            "",
            f"{result['described']}.",
            "",
            "| process | CPU ms per search | CPU ms per add | idle CPU, % of a core |",
            "|---|---|---|---|",
        ]
        for role in [*roles, CLIENT]:
            lines.append(
                f"| {role} | {1000 * search.cpu.get(role, 0.0) / search.requests:.1f} "
                f"| {1000 * add.cpu.get(role, 0.0) / add.requests:.1f} | {100 * result['idle'].get(role, 0.0):.1f} |"
            )
        served = [role for role in roles if role != STANDIN]
        per_search = sum(1000 * search.cpu[role] / search.requests for role in served)
        per_add = sum(1000 * add.cpu[role] / add.requests for role in served)
        lines += [
            f"| **Mnemo's stack{' without the stand-in' if STANDIN in roles else ''}** | **{per_search:.1f}** "
            f"| **{per_add:.1f}** | |",
            "",
            f"One core serves about **{1000 / per_search:.0f} searches/s** or **{1000 / per_add:.0f} adds/s** "
            f"(1000 ms over the CPU ms above). The {search.requests} searches took "
            f"{search.request_s:.1f} s back to back ({1000 * search.request_s / search.requests:.0f} ms each), "
            f"the {add.requests} adds {add.request_s:.1f} s; the stack was quiet again "
            f"{search.wall_s - search.request_s:.1f} s and {add.wall_s - add.request_s:.1f} s after them.",
            "",
        ]
    stacks = ",".join(results)
    return f"""# CPU per search and per add, process by process

Measured {started_at:%Y-%m-%d %H:%M} UTC by `bench/stack_cpu.py --stacks {stacks} --size {args.size}
--requests {args.requests}{" --no-neo4j" if args.no_neo4j else ""}`. Machine: nproc {info["nproc"]}, {info["cpu"]};
load average {info["load"]} before, {machine()["load"]} after. {versions(["psycopg", "celery", "redis", "neo4j", "qdrant-client"])}.

## Method

Each stack is started fresh and served as `make run` serves it (gunicorn, one worker, 8 threads): the embedded
defaults in a temporary `MNEMO_DATA_DIR`; the production stack as bench/production_stack.py starts it
(PostgreSQL, redis-server as broker and cache, one Celery worker, the Qdrant stand-in, and Neo4j from
scripts/neo4j-harness.sh unless `--no-neo4j`). Each is loaded with {args.size:,} episodic memories (LoCoMo turns,
`POST /api/v1/memories/bulk`); on the embedded stack the run then waits for the background optimization the load
makes due (Qdrant Edge's HNSW indexes: a server that has been up a while has them), on the production stack
until every memory is mirrored. After ten
warm-up searches and adds, one client sends {args.requests} searches (`POST /api/v1/memories/search`, distinct LoCoMo
questions, limit 10) one after another, then {args.requests} adds (`POST /api/v1/memories/`, distinct contents).
Every process of the stack is read from /proc (user + system time, with the children it has reaped) before a
phase and again once the stack has gone quiet after it (under 5 % of a core for 3 s), so work a request leaves to
the Celery worker counts for it. What each process spends idle (measured over 15 s before the phases) times the
phase's length is taken off. The CPU time is the machine's, not the wall clock's: it holds on a noisy machine
better than latency does, but shared caches and cores still move it by some percent.

The Qdrant stand-in is no Qdrant server (none installs here): qdrant-client's local engine searches exactly in
Python, so its cost is shown apart and left out of the totals; a Qdrant server answers the same calls with an HNSW
index in native code.

## CPU by process

{chr(10).join(lines)}
## Reading

- Sizing: a deployment's searches/s is about the cores given to the web server and its stores times the
  searches/s per core above, as long as the Qdrant server has its own cores; the web server's share is the part
  that grows with traffic on one machine.
- On the embedded stack everything runs inside the gunicorn worker (the models, SQLite, Qdrant Edge, the graph).
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stacks", default="embedded,production")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--no-neo4j", action="store_true", help="the graph in PostgreSQL's tables, not Neo4j")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    info, started_at = machine(), datetime.now(UTC)
    results = {stack: run_stack(stack, args) for stack in args.stacks.split(",")}
    text = report(args, results, info, started_at)
    print(text)
    if not args.no_write:
        (RESULTS / "stack_cpu.md").write_text(text)
        print(f"Wrote {RESULTS / 'stack_cpu.md'}")


if __name__ == "__main__":
    main()
