"""A wrong setting stops the process with one readable line naming the variable, never a traceback."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import manage as manage_py

ROOT = Path(__file__).resolve().parent.parent


def manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_", "NEO4J_", "LLM_"))
    }
    environ.update(MNEMO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DATABASE_URL": "mysql://u:p@db/x"}, "DATABASE_URL"),
        ({"QDRANT_URL": "qdrant:6333"}, "QDRANT_URL"),
        ({"QDRANT_VECTOR_SIZE": "large"}, "QDRANT_VECTOR_SIZE"),
        ({"QDRANT_DISTANCE": "manhattan"}, "QDRANT_DISTANCE"),
        ({"QDRANT_TIMEOUT": "-1"}, "QDRANT_TIMEOUT"),
        ({"NEO4J_URI": "http://neo4j:7474"}, "NEO4J_URI"),
        ({"EMBED_MODEL_TYPE": "word2vec"}, "EMBED_MODEL_TYPE"),
        ({"EMBED_MODEL_TYPE": "dashscope"}, "EMBED_API_KEY"),
        ({"LLM_BASE_URL": "http://127.0.0.1:9/v1"}, "LLM_MODEL"),
        ({"CELERY_BROKER_URL": "localhost:6379"}, "CELERY_BROKER_URL"),
        ({"MNEMO_DEBUG": "maybe"}, "MNEMO_DEBUG"),
        ({"MNEMO_HSTS_SECONDS": "forever"}, "MNEMO_HSTS_SECONDS"),
        ({"MNEMO_CACHE_URL": "localhost:6379"}, "MNEMO_CACHE_URL"),
        ({"MNEMO_CONVERT_SECONDS": "3600"}, "MNEMO_CONVERT_SECONDS"),
    ],
)
def test_a_malformed_setting_names_its_variable(tmp_path, env, named):
    result = manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert result.stderr.startswith("Configuration error:")
    assert named in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_database_names_database_url(tmp_path):
    result = manage(tmp_path, "migrate", DATABASE_URL="postgres://mnemo:x@127.0.0.1:9/mnemo")
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_embedded_defaults_need_no_configuration(tmp_path):
    result = manage(tmp_path, "migrate", "-v", "0")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mnemo.sqlite3").exists()
    assert (tmp_path / "secret_key.txt").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "mnemo.sqlite3").stat().st_mode & 0o777 == 0o600
    assert tmp_path.stat().st_mode & 0o777 == 0o700


PRODUCTION = {
    "MNEMO_SECRET_KEY": "a-long-random-secret-key-for-this-test-only-0123456789abcdefghijklmnop",
    "MNEMO_ALLOWED_HOSTS": "mnemo.example.org",
    "MNEMO_SECURE_COOKIES": "1",
    "MNEMO_SSL_REDIRECT": "1",
    "MNEMO_HSTS_SECONDS": "31536000",
    "MNEMO_HSTS_INCLUDE_SUBDOMAINS": "1",
    "MNEMO_HSTS_PRELOAD": "1",
    "MNEMO_TLS_PROXY": "1",
}


def readme_tls_settings() -> dict[str, str]:
    """The variables README.md's "Behind TLS set ..." line names, with their values."""
    readme = (ROOT / "README.md").read_text()
    line = next(block for block in readme.split("\n- ") if block.startswith("Behind TLS set"))
    return dict(re.findall(r"`(MNEMO_[A-Z_]+)=([^`]+)`", line.split("check --deploy")[0]))


def test_check_deploy_is_clean_with_the_settings_the_readme_gives(tmp_path):
    tls = readme_tls_settings()
    assert {"MNEMO_SECURE_COOKIES", "MNEMO_SSL_REDIRECT", "MNEMO_HSTS_SECONDS"} <= set(tls)
    # Nothing else: the secret key and the hosts keep their embedded defaults (a generated key in the folder).
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **tls)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_a_command_without_mnemo_data_dir_opens_the_folder_make_run_served(tmp_path, monkeypatch):
    served = tmp_path / "elsewhere"
    served.mkdir()
    pointer = tmp_path / ".mnemo-data-dir"
    pointer.write_text(f"{served}\n")
    monkeypatch.setattr(manage_py, "ROOT", tmp_path)
    monkeypatch.setattr(manage_py, "SERVED", pointer)
    monkeypatch.delenv("MNEMO_DATA_DIR")

    notice = manage_py.choose_data_folder(["manage.py", "create_api_key", "demo"])

    assert os.environ["MNEMO_DATA_DIR"] == str(served)
    assert (
        notice
        == f"Using the data folder `make run` served last: {served} (set MNEMO_DATA_DIR to choose another)."
    )


def test_a_command_that_would_only_find_a_new_empty_folder_stops_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(manage_py, "ROOT", tmp_path)
    monkeypatch.setattr(manage_py, "SERVED", tmp_path / ".mnemo-data-dir")
    monkeypatch.delenv("MNEMO_DATA_DIR")
    with pytest.raises(SystemExit) as stopped:
        manage_py.choose_data_folder(["manage.py", "create_api_key", "demo"])
    assert "MNEMO_DATA_DIR is not set" in str(stopped.value) and str(tmp_path / "var") in str(stopped.value)
    assert not (tmp_path / "var").exists()
    assert manage_py.choose_data_folder(["manage.py", "migrate"]) is None  # migrate may start one


def test_a_database_error_names_the_data_folder_the_command_opened(tmp_path):
    result = manage(tmp_path, "create_api_key", "demo")  # a folder nobody migrated
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"This opened the SQLite database in the data folder {tmp_path}" in result.stderr
    assert "DATABASE_URL" not in result.stderr


def test_the_production_settings_reach_django(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    result = manage(tmp_path, "shell", "-c", code, **PRODUCTION)
    assert result.stdout.splitlines()[-1].split() == [
        "True",
        "31536000",
        "True",
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
    ]
