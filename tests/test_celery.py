"""The Celery path against a real redis-server and a real worker process."""

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import dispatch
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
    dispatch.broker_breaker.reset()  # no outage carried over from another test
    forget_broker_connections(app)
    yield
    app.conf.broker_url = None
    app.conf.result_backend = None


def test_a_dispatched_task_runs_in_the_worker_process_not_here(celery_settings, worker):
    result = dispatch.dispatch(ping, "celery").get(timeout=60)
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
