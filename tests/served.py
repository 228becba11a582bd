"""Mnemo served as `make run` serves it: gunicorn on the embedded defaults, in its own data folder."""

import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# shutdown() waits for the serving loop to look at its flag: every 0.5 s by default, in every teardown.
SHUTDOWN_POLL_SECONDS = 0.02


def serve_in_background(server: socketserver.BaseServer) -> threading.Thread:
    """A scripted server (the fake LLM, the Qdrant stand-in, ...) serving in a daemon thread that its
    shutdown() stops within SHUTDOWN_POLL_SECONDS."""
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), daemon=True)
    thread.start()
    return thread


class ServedInstance:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None):
        """`env`: settings beyond the embedded defaults (DATABASE_URL, CELERY_BROKER_URL, ...)."""
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "QDRANT_", "NEO4J_", "LLM_", "DATABASE_", "CELERY_"))
        }
        self.env.update(MNEMO_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings", **(env or {}))
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server: subprocess.Popen | None = None

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def set_up(self, username: str) -> str:
        """Migrate, add `username` and return a write key of theirs."""
        self.manage("migrate", "-v", "0")
        self.manage(
            "shell",
            "-c",
            f"from django.contrib.auth.models import User; User.objects.create_user({username!r})",
        )
        return self.manage("create_api_key", username, "--name", "tests").strip().splitlines()[-1]

    def start(self) -> None:
        self.server = subprocess.Popen(
            # `make run`'s settings (one process, its control socket in the data folder), on a port of its own.
            [str(BIN / "gunicorn"), "-c", "config/gunicorn.conf.py", "--bind", f"127.0.0.1:{self.port}"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=(self.data_dir / "gunicorn.log").open("ab"),  # read it when a test fails
            start_new_session=True,  # its own process group, so kill() reaches the worker too
        )
        for _ in range(240):
            if self.server.poll() is not None:
                raise RuntimeError(f"gunicorn exited; see {self.data_dir / 'gunicorn.log'}")
            try:
                httpx.get(f"{self.url}/api/v1/health", timeout=10)
                return
            except httpx.TransportError:
                time.sleep(0.5)
        raise RuntimeError("gunicorn did not start answering")

    def kill(self) -> None:
        """SIGKILL the server and its worker: nothing gets to clean up, as in a crash."""
        os.killpg(self.server.pid, signal.SIGKILL)
        self.server.wait(timeout=30)
        for _ in range(100):  # the worker, not our child, may hold the listening socket a moment longer
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                time.sleep(0.1)
            except OSError:
                return

    def stop(self) -> None:
        if self.server and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(timeout=30)
