"""The production stack for a benchmark, started on 127.0.0.1 as tests/test_production_stack.py starts it and
thrown away after: PostgreSQL (tests/postgres.py's cluster), a redis-server as the Celery broker and the shared
cache, the Qdrant stand-in (tests/qdrant_standin.py, qdrant-client's own engine over REST), and a real Celery
worker. Neo4j only when a URI is given (neo4j_harness starts one from scripts/neo4j-harness.sh); otherwise the
graph is the Entity/Relation tables.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.postgres import PostgresCluster  # noqa: E402
from tests.served import free_port  # noqa: E402

# The stand-in serves until its stdin closes.
_STANDIN = (
    "import sys\n"
    "from tests.qdrant_standin import QdrantStandIn\n"
    "with QdrantStandIn() as standin:\n"
    "    print(standin.url, flush=True)\n"
    "    sys.stdin.read()\n"
)


@dataclass
class Stack:
    env: dict[str, str]  # what the server and the worker need on top of the embedded defaults
    database_url: str
    described: str  # one line for a report


@contextmanager
def redis_server() -> Iterator[str]:
    """A redis-server on a free port, nothing saved; its URL."""
    if not shutil.which("redis-server"):
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mnemo-bench-redis-"))
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            ping = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
            if ping.stdout.strip() == "PONG":
                break
            if server.poll() is not None:
                raise RuntimeError(f"redis-server exited ({server.returncode})")
            time.sleep(0.1)
        else:
            raise RuntimeError("redis-server did not answer PING within 30 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def qdrant_standin() -> Iterator[str]:
    """tests/qdrant_standin.py in a process of its own, so the benchmark's client threads do not share its
    interpreter lock; its URL."""
    process = subprocess.Popen(
        [sys.executable, "-c", _STANDIN], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the Qdrant stand-in did not start ({process.poll()})")
        yield url
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def production_stack(neo4j_uri: str = "") -> Iterator[Stack]:
    # A SIGTERM ends the run through the finally blocks below, or the cluster and redis-server would outlive it.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    postgres = PostgresCluster()
    postgres.start()
    try:
        with redis_server() as redis_url, qdrant_standin() as qdrant_url:
            database_url = postgres.create_database(f"bench_{uuid.uuid4().hex[:8]}")
            env = {
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": redis_url,
                "MNEMO_CACHE_URL": redis_url,  # the web server and the worker count limits in one place
                "QDRANT_URL": qdrant_url,
                "QDRANT_COLLECTION": f"bench{uuid.uuid4().hex[:8]}",
            }
            if neo4j_uri:
                env["NEO4J_URI"] = neo4j_uri
            version = postgres_version(database_url)
            described = (
                f"PostgreSQL {version} (a throw-away cluster: fsync, synchronous_commit and full_page_writes off), "
                "redis-server as the Celery broker and cache, one Celery worker (solo pool), Qdrant as "
                "qdrant-client's local engine behind the REST stand-in (tests/qdrant_standin.py, a process of "
                "its own), "
                + (
                    f"Neo4j at {neo4j_uri}"
                    if neo4j_uri
                    else "the graph in PostgreSQL's Entity/Relation tables (no Neo4j)"
                )
            )
            yield Stack(env, database_url, described)
    finally:
        postgres.stop()
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def neo4j_harness(enabled: bool) -> Iterator[tuple[str, int | None]]:
    """(bolt URI, JVM pid) of a neo4j-harness of our own, or ("", None)."""
    if not enabled:
        yield "", None
        return
    run_dir = Path(tempfile.mkdtemp(prefix="mnemo-bench-neo4j-"))
    env = {**os.environ, "MNEMO_RUN_DIR": str(run_dir)}
    script = str(ROOT / "scripts" / "neo4j-harness.sh")
    started = subprocess.run(
        [script, "start", str(free_port())], env=env, capture_output=True, text=True, timeout=600
    )
    if started.returncode:
        raise RuntimeError(f"the neo4j-harness did not start:\n{started.stderr[-3000:]}")
    uri = started.stdout.strip().splitlines()[-1].removeprefix("NEO4J_URI=")
    try:
        yield uri, int((run_dir / "neo4j-harness.pid").read_text().strip())
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)


def postmaster_pid(database_url: str) -> int:
    """The PostgreSQL server's own process: the parent of the backend that serves a connection."""
    import psycopg

    with psycopg.connect(database_url) as connection:  # the backend ends with the connection
        backend = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
        return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


def postgres_version(database_url: str) -> str:
    import psycopg

    with psycopg.connect(database_url) as connection:
        return connection.execute("SHOW server_version").fetchone()[0].split()[0]


@contextmanager
def celery_worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """One worker as tests/test_production_stack.py runs it, with the server's environment."""
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING"]
    worker = subprocess.Popen(
        [*command, "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT,
        env={**env, "C_FORCE_ROOT": "1"},
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )
    try:
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


def wait_mirrored(database_url: str, limit_s: float) -> int:
    """Wait until no memory waits for its mirror (the worker's share of a bulk load); the number still waiting."""
    import psycopg

    deadline = time.monotonic() + limit_s
    while True:
        with psycopg.connect(database_url) as connection:
            waiting = connection.execute(
                "SELECT count(*) FROM memories_memory WHERE mirror_state <> 'synced'"
            ).fetchone()[0]
        if not waiting or time.monotonic() > deadline:
            return waiting
        time.sleep(1)
