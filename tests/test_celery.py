"""The Celery path against a real redis-server and a real worker process."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import dispatch
from core.tasks import ping, write_marker
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.celery


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    if not shutil.which("redis-server"):
        pytest.fail("redis-server is not installed: `make test` installs it (apt-get install redis-server)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        if (
            subprocess.run(
                ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
            ).stdout.strip()
            == "PONG"
        ):
            break
        time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait(timeout=10)


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
    yield
    app.conf.broker_url = None
    app.conf.result_backend = None


def test_dispatch_goes_through_redis_to_a_worker_process(celery_settings, worker):
    result = dispatch.dispatch(ping, "celery")
    assert result.get(timeout=60) == "pong:celery"


def test_a_task_runs_in_the_worker_process_not_here(celery_settings, worker, tmp_path):
    marker = tmp_path / "from-worker.txt"
    dispatch.dispatch(write_marker, str(marker), f"pid-free marker {os.getpid()}").get(timeout=60)
    assert marker.read_text() == f"pid-free marker {os.getpid()}"
    assert dispatch.worker_description().startswith("Celery via redis://127.0.0.1:")
