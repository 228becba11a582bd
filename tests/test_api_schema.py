"""Schemathesis generates requests from /api/v1/openapi.json and checks every answer against the schema.

It runs against the server as `make run` serves it (gunicorn on the embedded defaults, in its own data folder).
"""

import subprocess
from pathlib import Path

import pytest

from tests.served import BIN, ServedInstance

# What a generated request must never get: a 5xx, a status or content type the schema does not list, or a body
# that does not match its documented schema. And the schema must say what the API enforces: every schema-valid
# request is accepted (or refused only for auth, a missing id or a conflict) and every invalid one refused.
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "positive_data_acceptance",
        "negative_data_rejection",
    ]
)
# The few operations whose rules OpenAPI cannot state (across fields, or in a file's content), each with why.
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture
def served(tmp_path):
    """(base URL, write key) of a gunicorn serving a fresh embedded instance."""
    instance = ServedInstance(tmp_path)
    key = instance.set_up("schema")
    instance.start()
    yield instance.url, key
    instance.stop()


def test_generated_requests_get_documented_answers_and_valid_ones_only_are_accepted(served):
    url, key = served
    result = subprocess.run(
        [
            str(BIN / "st"),
            "--config-file",
            str(CONFIG),
            "run",
            f"{url}/api/v1/openapi.json",
            "--header",
            f"X-API-Key: {key}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "15",
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
