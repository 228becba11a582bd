"""The Celery path against a real redis-server and a real worker process."""

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import dispatch
from core.outbox import outbox
from core.tasks import ping
from tests.conftest import forget_broker_connections

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.celery


@pytest.fixture(scope="module")
def worker(redis_url, tmp_path_factory):
    env = {
        **os.environ,
        "CELERY_BROKER_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "MNEMO_DATA_DIR": str(tmp_path_factory.mktemp("worker-data")),
        "C_FORCE_ROOT": "1",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def celery_settings(settings, redis_url):
    from config.celery import app

    settings.CELERY_BROKER_URL = redis_url
    app.conf.broker_url = redis_url
    app.conf.result_backend = redis_url
    outbox.discard_waiting()  # no task of another test, meant for another broker
    forget_broker_connections(app)
    yield
    outbox.discard_waiting()
    app.conf.broker_url = None
    app.conf.result_backend = None


def test_a_dispatched_task_runs_in_the_worker_process_not_here(celery_settings, worker):
    result = dispatch.dispatch(ping, "celery").result(timeout=30).get(timeout=60)
    assert result == {"pong": "celery", "pid": worker.pid}  # --pool=solo: the worker process itself
    assert worker.pid != os.getpid()
    assert dispatch.worker_description().startswith("Celery via redis://127.0.0.1:")


def test_health_pings_the_worker_through_the_project_celery_app(celery_settings, worker, monkeypatch):
    """core.health finds the Celery app as the current one (core imports nothing of config)."""
    from core import health

    monkeypatch.setattr(health, "BUDGET_SECONDS", 30.0)  # the outcome, not the speed, of a loaded machine
    check = next(check for check in health.run_checks() if check.concern == "worker")
    assert (check.backend, check.ok) == ("celery", True), check.detail
    assert check.detail.endswith(", 1 worker(s) answering")


CREATE_PENDING_MEMORY = """
from django.contrib.auth import get_user_model
from memories.models import Memory
user = get_user_model().objects.create_user("beat-user")
# As an outage leaves it: the row committed, its mirror write failed and its task's retries ran out.
(memory,) = Memory.objects.bulk_create([Memory(user=user, content="李四是前端工程师", memory_type="semantic")])
print(memory.pk.hex)
"""


def mirror_state(database: Path, memory_hex: str) -> str:
    with sqlite3.connect(database) as connection:
        row = connection.execute(
            "SELECT mirror_state FROM memories_memory WHERE id = ?", (memory_hex,)
        ).fetchone()
    return row[0]


def test_beat_sweeps_up_a_memory_a_vector_store_outage_left_pending(redis_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_", "CELERY_"))}
    env.update(
        MNEMO_DATA_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="config.settings",
        # Its own redis database: the module's worker serves another data dir.
        CELERY_BROKER_URL=redis_url.rsplit("/", 1)[0] + "/1",
        MNEMO_MIRROR_SWEEP_SECONDS="1",
        C_FORCE_ROOT="1",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    created = subprocess.run(
        [*manage, "shell", "-c", CREATE_PENDING_MEMORY],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    memory_hex = created.stdout.strip().splitlines()[-1]
    database = tmp_path / "mnemo.sqlite3"
    assert mirror_state(database, memory_hex) == "pending"

    celery = [sys.executable, "-m", "celery", "-A", "config"]
    processes = [
        subprocess.Popen(
            [*celery, "worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [*celery, "beat", "--loglevel=WARNING", "--schedule", str(tmp_path / "beat-schedule")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    try:
        deadline = time.monotonic() + 90
        while mirror_state(database, memory_hex) != "synced" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert mirror_state(database, memory_hex) == "synced"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def test_a_task_dispatched_while_the_broker_is_down_is_sent_once_it_is_back(settings, tmp_path):
    """Nothing listens on the broker's port at first: the dispatch returns at once and the outbox keeps the
    task; then Redis and a worker start there, and the outbox's next try delivers it."""
    import shutil

    from config.celery import app
    from tests.served import free_port

    assert shutil.which("redis-server")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    settings.CELERY_BROKER_URL = url
    app.conf.broker_url = url
    app.conf.result_backend = None  # the worker's log says what ran
    outbox.discard_waiting()
    forget_broker_connections(app)
    redis = [*("redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "")]
    worker = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=INFO"]
    worker += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = {
        **os.environ,
        "CELERY_BROKER_URL": url,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "MNEMO_DATA_DIR": str(tmp_path / "worker-data"),
        "C_FORCE_ROOT": "1",
    }
    log = tmp_path / "worker.log"
    processes: list[subprocess.Popen] = []
    try:
        started = time.perf_counter()
        future = dispatch.dispatch(ping, "late")
        assert time.perf_counter() - started < 0.5
        time.sleep(1.5)
        assert not future.done() and outbox.waiting() == 1
        processes.append(subprocess.Popen([*redis, "--dir", str(tmp_path)], stdout=subprocess.DEVNULL))
        with log.open("wb") as out:
            processes.append(subprocess.Popen(worker, cwd=ROOT, env=env, stdout=out, stderr=out))
        sent = future.result(timeout=90)  # the outbox's retries back off to at most 30 s
        assert outbox.waiting() == 0
        deadline = time.monotonic() + 120
        while f"Task core.ping[{sent.id}] succeeded" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(1)
        assert "'pong': 'late'" in log.read_text(errors="replace")
    finally:
        outbox.discard_waiting()
        app.conf.broker_url = None
        forget_broker_connections(app)
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
