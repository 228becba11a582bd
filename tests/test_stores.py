"""The embedded stores have one owner process; a second process gets a clear error, not a crash."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from core import stores
from memories import mirror
from memories.actions.write import memory_create
from memories.retrieval import search_memories

ROOT = Path(__file__).resolve().parent.parent

HOLD_THE_STORE = """
import os, sys, django
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()
from core.stores import vector_store
vector_store().ping()
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_second_process_is_told_who_holds_the_embedded_vector_store(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_"))}
    env["MNEMO_DATA_DIR"] = str(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_STORE],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        result = subprocess.run(
            [sys.executable, "manage.py", "check_backends"], cwd=ROOT, env=env, capture_output=True, text=True
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=20)
    assert result.returncode == 1
    vectors_line = next(line for line in result.stdout.splitlines() if " vectors " in line)
    assert vectors_line.startswith("ERR")
    assert f"pid {holder.pid}" in vectors_line
    assert "only one process can open it" in vectors_line
    assert "unreachable: vectors" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_check_backends_passes_on_the_embedded_defaults(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_", "NEO4J_", "LLM_"))}
    env["MNEMO_DATA_DIR"] = str(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    result = subprocess.run(
        [sys.executable, "manage.py", "check_backends"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split()[1] for line in result.stdout.splitlines()] == [
        "database",
        "disk",
        "vectors",
        "mirrors",
        "graph",
        "embeddings",
        "worker",
        "llm",
    ]


MEMORY_TOOL_IN_A_SHELL = """
from memories.tools import MemoryTool
tool = MemoryTool(user_id="shell_user")
print(tool.run({"action": "add", "content": "李四是前端工程师", "memory_type": "semantic"}))
print(tool.run({"action": "search", "query": "前端工程师"}))
"""


def test_memory_tool_in_a_shell_while_the_server_holds_the_store(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_"))}
    env["MNEMO_DATA_DIR"] = str(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_STORE],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", MEMORY_TOOL_IN_A_SHELL],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=20)
    assert result.returncode == 0, result.stderr
    assert "✅ 记忆已添加" in result.stdout
    # The row is committed; search still answers, from a plain text match, and says why.
    assert "李四是前端工程师" in result.stdout
    assert "only one process can open it" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.django_db
def test_optimize_vectors_optimizes_each_embedded_collection_and_keeps_it_searchable(
    user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # the mirror writes on commit
        memory_create(user=user, content="李四是前端工程师", memory_type="semantic")
        memory_create(user=user, content="王五是产品经理", memory_type="semantic")
    out = io.StringIO()
    call_command("optimize_vectors", stdout=out)
    assert re.search(
        rf"^{mirror.COLLECTION}: 2 points; indexed vectors \d+ -> \d+; segments", out.getvalue(), re.M
    )
    hits = search_memories(user=user, query="前端工程师", limit=1).hits
    assert hits[0].memory.content == "李四是前端工程师"


def test_optimize_vectors_leaves_a_qdrant_server_alone(settings):
    settings.QDRANT_URL = ":memory:"
    stores.reset(embeddings=False)
    out = io.StringIO()
    call_command("optimize_vectors", stdout=out)
    assert "optimizes its collections itself" in out.getvalue()
