"""Bulk and single adds at once, served as `make run` serves them: no write is refused, each is stored once.

A bulk write once held SQLite's one write lock while it embedded its items and read them for entities, so every
other writer gave up after the busy timeout with "database is locked". Here the busy timeout is cut to 3 s: a
bulk that did its model work inside the transaction holds the lock longer than that and fails the others.
bench/concurrent_writes.py runs the full load (10 bulks of 200 and 10 single-add clients for 60 s).
"""

import sqlite3
import threading
import uuid
from collections import Counter

import httpx
import pytest

from tests.served import ServedInstance

BULKS = 4
ITEMS = 40
SINGLE_CLIENTS = 2
SINGLES_EACH = 6
# Invented sentences with names, places and products, so each memory is embedded and read for entities.
PEOPLE = ["Ilsa Marrow", "Teodor Quill", "Wren Abernathy", "Oskar Vell", "Nadia Crest"]
PLACES = ["Lisbon", "Tromsø", "Valparaíso", "Kraków", "Hobart"]
THINGS = ["the Kestrel compiler", "a Postgres migration", "the Halcyon dashboard", "an Arduino rig"]


def sentence(n: int) -> str:
    return (
        f"{PEOPLE[n % 5]} met {PEOPLE[(n + 2) % 5]} in {PLACES[n % 5]} on day {n} to talk about "
        f"{THINGS[n % 4]}."
    )


CARGO = ["pears", "copper wire", "wool", "slate tiles", "lamp oil", "rye flour"]
EVENTS = ["harvest fair", "winter market", "regatta", "choir festival"]


def order(n: int) -> str:
    """Unlike any sentence(): curation merges a near-duplicate add into the memory it repeats (a merged add's id
    is the earlier memory's), and "met … on day 1" and "met … on day 1001" read as one fact to it."""
    return f"{PLACES[n % 5]} ordered {n + 3} crates of {CARGO[n % 6]} for the {EVENTS[n % 4]}."


def stored(instance: ServedInstance, database_url: str) -> list[tuple[str, str]]:
    query = "SELECT id, content FROM memories_memory"
    if database_url:
        import psycopg

        with psycopg.connect(database_url) as connection:
            return [(str(row[0]), row[1]) for row in connection.execute(query)]
    with sqlite3.connect(instance.data_dir / "mnemo.sqlite3") as connection:
        return [(str(uuid.UUID(row[0])), row[1]) for row in connection.execute(query)]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.production)])
def served(request, tmp_path):
    env = {"MNEMO_SQLITE_BUSY_SECONDS": "3"}
    database_url = ""
    if request.param == "postgresql":
        database_url = request.getfixturevalue("postgres").create_database(f"writes_{uuid.uuid4().hex[:8]}")
        env["DATABASE_URL"] = database_url
    instance = ServedInstance(tmp_path, env)
    key = instance.set_up("alice")
    instance.start()
    yield instance, key, database_url
    instance.stop()


def test_concurrent_bulk_and_single_adds_all_succeed_and_store_each_memory_once(served):
    instance, key, database_url = served
    acknowledged: dict[str, str] = {}
    failures: list[str] = []
    lock = threading.Lock()

    def send(path: str, body: dict, contents: list[str]) -> None:
        with httpx.Client(base_url=f"{instance.url}/api/v1", headers={"X-API-Key": key}, timeout=600) as http:
            response = http.post(path, json=body)
        with lock:
            if response.status_code >= 400:
                failures.append(f"{path}: {response.status_code} {response.text[:200]}")
                return
            body = response.json()
            ids = body["ids"] if "ids" in body else [body["id"]]
            assert len(ids) == len(contents)
            acknowledged.update(zip(ids, contents, strict=True))

    def bulk(client: int) -> None:
        contents = [f"[{client}.{n}] {sentence(client * ITEMS + n)}" for n in range(ITEMS)]
        items = [
            {
                "content": text,
                "memory_type": "semantic" if n % 2 else "episodic",
                "session_id": f"bulk-{client}",
            }
            for n, text in enumerate(contents)
        ]
        send("/memories/bulk", {"items": items}, contents)

    def singles(client: int) -> None:
        for n in range(SINGLES_EACH):
            text = f"[single {client}.{n}] {order(client * SINGLES_EACH + n)}"
            send("/memories/", {"content": text, "memory_type": "semantic"}, [text])

    threads = [threading.Thread(target=bulk, args=(c,)) for c in range(BULKS)]
    threads += [threading.Thread(target=singles, args=(c,)) for c in range(SINGLE_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    rows = stored(instance, database_url)
    assert len(acknowledged) == BULKS * ITEMS + SINGLE_CLIENTS * SINGLES_EACH
    assert dict(rows) == acknowledged  # every acknowledged memory, with its text, and nothing else
    assert Counter(content for _, content in rows).most_common(1)[0][1] == 1
    log = (instance.data_dir / "gunicorn.log").read_text()
    assert "database is locked" not in log
