"""Schemathesis generates requests from /api/v1/openapi.json and checks every answer against the schema.

It runs against the server as `make run` serves it (gunicorn on the embedded defaults, in its own data folder).
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# What a generated request must never get: a 5xx, a status or content type the schema does not list, or a body
# that does not match its documented schema. (Whether the API accepts every schema-valid value and refuses every
# invalid one is not checked yet: the service rules on text, such as no control characters, are not in the schema.)
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.fixture
def served(tmp_path):
    """(base URL, write key) of a gunicorn serving a fresh embedded instance."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_", "NEO4J_", "LLM_"))}
    env.update(MNEMO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "-v", "0")
    manage("shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('schema')")
    key = manage("create_api_key", "schema", "--name", "schemathesis").strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield url, key
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_generated_requests_get_no_server_error_and_only_documented_answers(served):
    url, key = served
    result = subprocess.run(
        [
            str(BIN / "st"),
            "run",
            f"{url}/api/v1/openapi.json",
            "--header",
            f"X-API-Key: {key}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "30",
            "--seed",
            "20261204",
            "--request-timeout",
            "60",
            "--suppress-health-check",
            "all",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:]
    assert " passed" in result.stdout  # generated cases really ran
