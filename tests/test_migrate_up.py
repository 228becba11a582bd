"""migrate_up: an embedded install (SQLite, Qdrant Edge, the SQL graph), filled through its API, moved onto
PostgreSQL + a Qdrant server API + Neo4j, and served from there with nothing lost."""

import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import httpx
import psycopg
import pytest
from openai import OpenAI
from psycopg.types.json import Jsonb

from tests.fake_llm import FakeLLM
from tests.qdrant_standin import QdrantStandIn
from tests.served import ROOT, ServedInstance

pytestmark = [pytest.mark.production, pytest.mark.neo4j]

# The records the move must not lose (issue 16): memories, chunks, entities, relations, edits, accesses.
MUST_HAVE_ROWS = [
    "memories_memory",
    "knowledge_chunk",
    "memories_entity",
    "memories_relation",
    "memories_memoryedit",
    "memories_memoryaccess",
    "memories_memoryentity",
    "conversations_chatmessage",
    "knowledge_document",
    "core_apikey",
]
GUIDE = (
    "# Backups\n\nCopy the data folder every night; the nightly backup keeps fourteen days of snapshots.\n"
)
PNG = b"\x89PNG\r\n\x1a\n" + b"7" * 64


def wait_for(probe, what: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while not (value := probe()):
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.3)
    return value


def fill(instance: ServedInstance, key: str) -> dict[str, str]:
    """Memories (one edited, one archived, one perceptual with its file), searches, a chat, a document."""
    api = httpx.Client(base_url=f"{instance.url}/api/v1", headers={"X-API-Key": key}, timeout=60)
    ids = {}
    for name, body in {
        "skills": {"content": "李四擅长React和Vue.js", "memory_type": "semantic"},
        "retro": {
            "content": "Team retro about the launch",
            "memory_type": "episodic",
            "participants": ["Ana"],
            "created_at": "2024-05-08T13:56:00Z",
        },
        "old": {"content": "The staging server is called bluebird.", "memory_type": "semantic"},
    }.items():
        response = api.post("/memories/", json=body)
        assert response.status_code == 201, response.text
        ids[name] = response.json()["id"]
    assert api.patch(f"/memories/{ids['retro']}", json={"importance": 0.9}).status_code == 200
    assert api.patch(f"/memories/{ids['old']}", json={"archived": True}).status_code == 200
    picture = api.post(
        "/memories/perceptual",
        data={"content": "白板草图"},
        files={"file": ("board.png", PNG, "image/png")},
    )
    assert picture.status_code == 201, picture.text
    ids["picture"] = picture.json()["id"]
    assert api.post("/memories/search", json={"query": "李四 React"}).json()["results"]
    uploaded = api.post("/documents", files={"file": ("backups.md", GUIDE.encode(), "text/markdown")})
    assert uploaded.status_code == 201, uploaded.text
    ids["document"] = uploaded.json()["id"]
    wait_for(lambda: api.get(f"/documents/{ids['document']}/status").json()["status"] == "ready", "ingestion")
    chat = OpenAI(base_url=f"{instance.url}/v1", api_key=key, max_retries=0, timeout=60)
    chat.chat.completions.create(
        model="mnemo-agent",
        messages=[{"role": "user", "content": "Hi! My name is Alice and I work as a data engineer."}],
        user="chat-1",
    )
    return ids


def sqlite_rows(database, query: str) -> list[tuple]:
    with sqlite3.connect(database) as connection:
        return connection.execute(query).fetchall()


def postgres_rows(url: str, query: str) -> list[tuple]:
    with psycopg.connect(url) as connection:
        return connection.execute(query).fetchall()


def normalised(value):
    """A value as SQLite stores it and as PostgreSQL returns it, made comparable."""
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == " ":
        try:
            return datetime.fromisoformat(value).replace(tzinfo=None)
        except ValueError:
            return value
    return value


MEMORY_COLUMNS = "id, user_id, content, memory_type, importance, created_at, updated_at, archived_at, file"
EDIT_COLUMNS = "id, memory_id, editor_id, api_key_id, via, changes, reason, created_at"


def snapshot(rows, tables: list[str]) -> dict:
    """What the move must keep, read with `rows` (SQLite's or PostgreSQL's): each table's count, every memory's
    stored values and the edit history."""
    return {
        "counts": {table: rows(f'SELECT count(*) FROM "{table}"')[0][0] for table in tables},  # noqa: S608
        "memories": [
            tuple(map(normalised, row))
            for row in rows(f"SELECT {MEMORY_COLUMNS} FROM memories_memory ORDER BY content")  # noqa: S608
        ],
        "edits": [
            tuple(map(normalised, row))
            for row in rows("SELECT memory_id, via, created_at FROM memories_memoryedit ORDER BY created_at")
        ],
    }


def run_check(instance: ServedInstance, source) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "migrate_up", "--from", str(source), "--check"],
        cwd=ROOT,
        env=instance.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def check_with_a_lost_edit(
    instance: ServedInstance, source, database_url: str
) -> subprocess.CompletedProcess:
    """`migrate_up --check` while one edit record is missing from PostgreSQL (put back afterwards)."""
    with psycopg.connect(database_url) as connection:
        lost = connection.execute(
            "DELETE FROM memories_memoryedit WHERE id = (SELECT min(id) FROM memories_memoryedit) RETURNING "
            "id, memory_id, editor_id, api_key_id, via, changes, reason, reason_key, created_at"
        ).fetchone()
    try:
        return run_check(instance, source)
    finally:
        with psycopg.connect(database_url) as connection:
            connection.execute(
                "INSERT INTO memories_memoryedit (id, memory_id, editor_id, api_key_id, via, changes, reason, "
                "reason_key, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (*lost[:5], Jsonb(lost[5]), lost[6], Jsonb(lost[7]), lost[8]),
            )


@pytest.fixture(scope="module")
def moved(tmp_path_factory, postgres, neo4j_uri):
    """An embedded install filled through its API, moved up, checked, then served from PostgreSQL."""
    with FakeLLM() as fake, QdrantStandIn() as standin:
        llm = {"LLM_BASE_URL": fake.url, "LLM_API_KEY": "test", "LLM_MODEL": "fake-model"}
        embedded_dir = tmp_path_factory.mktemp("embedded")
        embedded = ServedInstance(embedded_dir, llm)
        key = embedded.set_up("alice")
        embedded.start()
        try:
            ids = fill(embedded, key)
        finally:
            embedded.stop()

        database_url = postgres.create_database(f"moved_{uuid.uuid4().hex[:8]}")
        production_env = llm | {
            "DATABASE_URL": database_url,
            "QDRANT_URL": standin.url,
            "QDRANT_COLLECTION": f"moved{uuid.uuid4().hex[:8]}",
            "NEO4J_URI": neo4j_uri,
        }
        production = ServedInstance(tmp_path_factory.mktemp("production"), production_env)
        output = production.manage("migrate_up", "--from", str(embedded_dir), "-v", "2")
        sqlite = embedded_dir / "mnemo.sqlite3"
        tables = [
            name
            for (name,) in sqlite_rows(
                sqlite, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
            if name != "django_migrations"
        ]
        # Read before the new install serves a request: searches there add access records, as they should.
        before = snapshot(lambda query: sqlite_rows(sqlite, query), tables)
        after = snapshot(lambda query: postgres_rows(database_url, query), tables)
        checked = run_check(production, embedded_dir)
        checked_with_a_lost_edit = check_with_a_lost_edit(production, embedded_dir, database_url)
        production.start()
        try:
            yield {
                "ids": ids,
                "key": key,
                "output": output,
                "before": before,
                "after": after,
                "checked": checked,
                "checked_with_a_lost_edit": checked_with_a_lost_edit,
                "source": embedded_dir,
                "production": production,
                "neo4j_uri": neo4j_uri,
            }
        finally:
            production.stop()


def test_every_table_has_the_same_rows_after_the_move(moved):
    assert "Moved: every table's count matches the source, and the mirrors." in moved["output"]
    before, after = moved["before"], moved["after"]
    assert set(MUST_HAVE_ROWS) <= set(before["counts"])
    for table in MUST_HAVE_ROWS:
        assert before["counts"][table] > 0, f"the test install has no {table} rows to move"
    assert after["counts"] == before["counts"]
    assert after["memories"] == before["memories"]
    assert after["edits"] == before["edits"]


def test_the_check_passes_and_names_a_table_whose_count_differs(moved):
    assert moved["checked"].returncode == 0, moved["checked"].stderr
    assert "Every table's count matches the source, and the mirrors." in moved["checked"].stdout
    failed = moved["checked_with_a_lost_edit"]
    assert failed.returncode == 1
    edits = moved["before"]["counts"]["memories_memoryedit"]
    assert (
        f"Counts differ after the move:\n  memories.MemoryEdit: {edits} in the source, {edits - 1} here"
        in (failed.stderr)
    )


def test_the_moved_install_serves_search_graph_documents_and_files(moved):
    instance, ids = moved["production"], moved["ids"]
    api = httpx.Client(base_url=f"{instance.url}/api/v1", headers={"X-API-Key": moved["key"]}, timeout=60)
    search = api.post("/memories/search", json={"query": "谁会写React？"})
    assert search.status_code == 200, search.text
    hits = search.json()["results"]
    assert hits[0]["id"] == ids["skills"]
    assert any(name.startswith("dense_") and value > 0 for name, value in hits[0]["scores"].items())
    archived = api.post("/memories/search", json={"query": "bluebird"}).json()["results"]
    assert ids["old"] not in {hit["id"] for hit in archived}

    (li_si,) = api.get("/entities", params={"q": "李四"}).json()["items"]
    neighbours = api.get(f"/entities/{li_si['id']}/neighbors").json()
    assert {n["entity"]["name"] for n in neighbours["neighbors"]} >= {"React", "Vue.js"}
    from neo4j import GraphDatabase

    with GraphDatabase.driver(moved["neo4j_uri"], auth=None) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (:Entity {id: $id})-[:REL]->(n:Entity) RETURN n.name AS name", {"id": li_si["id"]}
        )
    assert {record["name"] for record in records} >= {"React", "Vue.js"}

    found = api.post("/knowledge/search", json={"query": "How long are backups kept?"}).json()["results"]
    assert found[0]["document_id"] == ids["document"] and "fourteen days" in found[0]["text"]
    picture = api.get(f"/memories/{ids['picture']}/file")
    assert picture.status_code == 200 and picture.content == PNG


def test_moving_into_a_database_that_holds_data_is_refused(moved):
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate_up", "--from", str(moved["source"])],
        cwd=ROOT,
        env=moved["production"].env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "The target database already holds data" in done.stderr


def test_moving_into_sqlite_is_refused(moved, tmp_path):
    env = {k: v for k, v in moved["production"].env.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate_up", "--from", str(moved["source"])],
        cwd=ROOT,
        env=env | {"MNEMO_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "The target is not PostgreSQL: set DATABASE_URL" in done.stderr
