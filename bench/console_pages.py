"""Server time of every console page at 100,000 memories and 100,000 chunks, and of the operator's pages at
10,000 users.

    .venv/bin/python bench/console_pages.py            # full run: 100,000 memories, 100,000 chunks, 10,000 users,
                                                       # 5 requests a page
    .venv/bin/python bench/console_pages.py --quick    # 10,000 memories and chunks, 1,000 users, 3 requests a page
                                                       # (prints only)

In-process, on the embedded defaults (SQLite + Qdrant Edge, no LLM) in a fresh temporary MNEMO_DATA_DIR that is
removed at the end (--keep keeps it). Rows go in with bulk_create (no services, no embedding, no mirror): the
pages read the relational store only, except the memory search filter, which asks the (empty) vector store too.
Each page is requested once to warm up and then --repeat times with Django's test client as a logged-in user;
the table shows the median and the slowest, and bench/results/console_pages.md gets the same table. The memories
carry a tag each (one of 12) and a source (API, MCP, page, chat; the keyed ones with one of two keys). Besides the
bench user there are `users` others, each with 5 memories, 2 sessions and a key: a staff member opens the Users
page (search, a deep page) and the bench user's pages under /users/<id>/ (core.acting).
The bar (issues 15 and 35) is under 300 ms a page.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

# isort: off
import config  # noqa: E402,F401 - the app's process setup must run before numpy loads
from report import load, machine, markdown, revision  # noqa: E402

# isort: on

BAR_MS = 300
TYPES = ["working", "episodic", "semantic", "perceptual"]
ORIGINS = ["api", "mcp", "page", "chat"]
WORDS = "alpha beta gamma delta Berlin Lisbon meeting project budget release review coffee".split()


def seed(memories: int, chunks: int) -> dict:
    """One user with `memories` memories (a tenth in one session, some archived, entities on a few) and
    `chunks` chunks over 50 documents, one of them holding a fifth of all chunks."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from conversations.models import AgentSession
    from core.models import ApiKey
    from knowledge.models import Chunk, Document
    from memories.models import Entity, Memory, MemoryEntity, Relation

    user = get_user_model().objects.create_user(username="bench", password="bench-password")
    session = AgentSession.objects.create(user=user, key="bench-session", title="bench session")
    keys = [
        ApiKey.objects.create(user=user, name=f"agent-{n}", prefix=f"benchkey{n}", hashed_secret="-")
        for n in range(2)
    ]
    now = timezone.now()
    started = time.monotonic()
    Memory.objects.bulk_create(
        (
            Memory(
                user=user,
                session=session if i % 10 == 0 else None,
                memory_type=TYPES[i % 4],
                content=f"memory {i}: {' '.join(WORDS[(i + k) % len(WORDS)] for k in range(12))}",
                importance=(i % 100) / 100,
                tags=[WORDS[i % len(WORDS)]],
                origin=ORIGINS[i % 4],
                origin_key=keys[i % 2] if ORIGINS[i % 4] in ("api", "mcp") else None,
                archived_at=now if i % 50 == 7 else None,
                created_at=now - timedelta(seconds=i),
            )
            for i in range(memories)
        ),
        batch_size=5000,
    )
    entities = Entity.objects.bulk_create(
        Entity(user=user, name=f"Entity {i}", key=f"entity {i}", frequency=1 + i % 20) for i in range(2000)
    )
    first = list(Memory.objects.filter(user=user).order_by("-created_at").values_list("pk", flat=True)[:4000])
    MemoryEntity.objects.bulk_create(
        MemoryEntity(memory_id=pk, entity=entities[i % len(entities)]) for i, pk in enumerate(first)
    )
    Relation.objects.bulk_create(
        Relation(user=user, source=entities[i], target=entities[(i * 7 + 1) % len(entities)])
        for i in range(2000)
    )
    documents = []
    text = " ".join(WORDS * 60)  # ~4 KB of Markdown per chunk
    for d in range(50):
        documents.append(
            Document(
                user=user,
                title=f"Document {d}",
                original_name=f"doc-{d}.md",
                sha256=f"{d:064d}",
                status="ready",
                progress=100,
                markdown="",
            )
        )
    Document.objects.bulk_create(documents)
    big = chunks // 5
    sizes = [big] + [(chunks - big) // 49] * 49
    sizes[-1] += chunks - sum(sizes)
    for document, size in zip(documents, sizes, strict=True):
        Chunk.objects.bulk_create(
            (
                Chunk(
                    document=document,
                    user=user,
                    namespace=document.namespace,
                    ordinal=i,
                    heading_path=f"Part {i // 100}",
                    text=f"{i} {text[: 600 + i % 200]}",
                    token_count=150,
                )
                for i in range(size)
            ),
            batch_size=5000,
        )
        document.markdown = text * max(1, size // 200)  # large Markdown, as a real big document has
        document.save(update_fields=["markdown"])
    print(f"seeded {memories:,} memories and {chunks:,} chunks in {time.monotonic() - started:.1f} s")
    return {"user": user, "big_document": documents[0], "session": session, "key": keys[1]}


def seed_users(count: int) -> None:
    """`count` more users, as agents create them (a user_id each): 5 memories, 2 sessions and a key apiece."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from conversations.models import AgentSession
    from core.models import ApiKey
    from memories.models import Memory

    started = time.monotonic()
    User = get_user_model()
    users = User.objects.bulk_create(
        (User(username=f"end-user-{n:05d}", first_name="Agent", last_name=f"User {n}") for n in range(count)),
        batch_size=2000,
    )
    now = timezone.now()
    AgentSession.objects.bulk_create(
        (AgentSession(user=u, key=f"s{k}") for u in users for k in range(2)), batch_size=5000
    )
    ApiKey.objects.bulk_create(
        (ApiKey(user=u, name="agent", prefix=f"u{u.pk:09d}", hashed_secret="-") for u in users),
        batch_size=5000,
    )
    Memory.objects.bulk_create(
        (
            Memory(
                user=u,
                memory_type="semantic",
                content=f"end-user {u.pk} fact {k}",
                tags=[WORDS[k]],
                created_at=now - timedelta(minutes=k),
            )
            for u in users
            for k in range(5)
        ),
        batch_size=5000,
    )
    print(f"seeded {count:,} more users in {time.monotonic() - started:.1f} s")


def pages(seeded: dict) -> list[tuple[str, str]]:
    from django.urls import reverse

    from memories.listing import Cursor
    from memories.models import Memory

    user = seeded["user"]
    memories = Memory.objects.filter(user=user, archived_at=None)
    oldest = memories.order_by("created_at", "id").first()
    newest = memories.order_by("-created_at", "-id").first()
    total = memories.count()
    last_page = -(-total // 50)
    memory_list = reverse("memory_list")
    document = seeded["big_document"]
    return [
        ("dashboard", reverse("dashboard")),
        ("memory list, page 1", memory_list),
        ("memory list, last page", f"{memory_list}?page={last_page}"),
        ("memory list, page 1,000", f"{memory_list}?page=1000"),
        ("memory list, older than the oldest but one (cursor)", f"{memory_list}?before={Cursor.of(oldest)}"),
        ("memory list, 200 a page", f"{memory_list}?size=200"),
        ("memory list, type filter", f"{memory_list}?type=semantic"),
        ("memory list, session + importance", f"{memory_list}?session=bench-session&min_importance=0.5"),
        ("memory list, date range", f"{memory_list}?date_from=2000-01-01&date_to=2100-01-01"),
        ("memory list, archived", f"{memory_list}?archived=on"),
        ("memory list, search", f"{memory_list}?q=Berlin+meeting"),
        ("memory detail", reverse("memory_detail", args=[newest.pk])),
        ("sessions", reverse("session_list")),
        ("review", reverse("memory_review")),
        ("knowledge list", reverse("library")),
        ("document page (20% of chunks)", reverse("document_detail", args=[document.pk])),
        ("document page, last chunk page", reverse("document_detail", args=[document.pk]) + "?page=last"),
        ("graph page", reverse("graph")),
        ("graph data", reverse("graph_data")),
        ("chat", reverse("chat")),
        ("evaluation", reverse("evaluation")),
        ("memory list, tag filter", f"{memory_list}?tag=Berlin"),
        ("memory list, source filter", f"{memory_list}?origin=mcp"),
        ("memory list, API key filter", f"{memory_list}?origin_key={seeded['key'].pk}"),
        ("memory list, tag + search", f"{memory_list}?q=Berlin+meeting&tag=Berlin"),
    ]


def operator_pages(seeded: dict, users: int) -> list[tuple[str, str]]:
    """What a staff member opens: the Users page, and the bench user's pages as they see them."""
    from django.urls import reverse

    from core.acting import subject_url
    from memories.models import Memory

    user = seeded["user"]
    newest = Memory.objects.filter(user=user, archived_at=None).order_by("-created_at", "-id").first()
    users_url = reverse("users")

    def at(name: str, *args) -> str:
        return subject_url(user, name, *args)

    return [
        (f"Users, page 1 of {users:,}", users_url),
        ("Users, last page", f"{users_url}?page=last"),
        ("Users, search", f"{users_url}?q=User+77"),
        ("a user's dashboard", at("dashboard")),
        ("a user's memory list", at("memory_list")),
        ("a user's memory list, tag filter", at("memory_list") + "?tag=Berlin"),
        ("a user's memory list, page 1,000", at("memory_list") + "?page=1000"),
        ("a user's memory", at("memory_detail", newest.pk)),
        ("a user's sessions", at("session_list")),
        ("a user's graph data", at("graph_data")),
        ("a user's documents", at("library")),
        ("a user's evaluation", at("evaluation")),
    ]


def measure(client, url: str, repeat: int) -> tuple[int, float, float]:
    response = client.get(url)  # warm up: template loading, first-touch caches
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
    return response.status_code, statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10,000 memories and chunks; prints only")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    parser.add_argument("--write", action="store_true", help="write the report even with --quick")
    args = parser.parse_args()
    size = 10_000 if args.quick else 100_000
    repeat = 3 if args.quick else args.repeat
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-bench-pages-"))
    try:
        setup_django(data_dir, MNEMO_TASKS_EAGER="1")
        from django.conf import settings
        from django.test import Client

        # No collectstatic in a temp folder: serve static names as they are, as the tests do.
        settings.STORAGES = {
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
        logging.getLogger("django").setLevel(logging.CRITICAL)

        seeded = seed(size, size)
        users = 1_000 if args.quick else 10_000
        seed_users(users)
        from django.contrib.auth import get_user_model

        staff = get_user_model().objects.create_user(username="operator", is_staff=True)
        client = Client(HTTP_HOST="localhost")
        client.force_login(seeded["user"])
        operator = Client(HTTP_HOST="localhost")
        operator.force_login(staff)
        rows = []
        runs = [(client, name, url) for name, url in pages(seeded)]
        runs += [(operator, name, url) for name, url in operator_pages(seeded, users + 2)]
        for who, name, url in runs:
            status, median, worst = measure(who, url, repeat)
            verdict = (
                "ok" if status == 200 and median < BAR_MS else "OVER" if status == 200 else f"HTTP {status}"
            )
            rows.append([name, f"`{url[:60]}`", f"{median:.0f}", f"{worst:.0f}", verdict])
            print(f"{name:55} {status} median {median:7.1f} ms  max {worst:7.1f} ms  {verdict}", flush=True)
        table = markdown(["page", "URL", "median ms", "max ms", f"under {BAR_MS} ms"], rows)
        if not args.quick or args.write:
            report = "\n".join(
                [
                    "# Console pages: server time at 100,000 memories, 100,000 chunks and 10,000 users",
                    "",
                    f"`.venv/bin/python bench/console_pages.py` · {revision()} · {machine()} · load {load()}",
                    "",
                    f"One user holding {size:,} memories (2% archived, a tenth in one session, 4,000 entity links,"
                    f" 2,000 entities and relations) and {size:,} chunks in 50 documents (one with a fifth of"
                    f" them), each memory with a tag (one of 12) and a source (API, MCP, page or chat; two keys);"
                    f" {users:,} more users with 5 memories, 2 sessions and a key each, and a staff member who"
                    " opens the Users page and the bench user's pages (the rows from “Users” on). Django test"
                    " client, logged in, in-process on the embedded defaults (SQLite in WAL"
                    f" mode); median and slowest of {repeat} requests after one warm-up. Server time only: no"
                    " network, no browser rendering.",
                    "",
                    table,
                    "",
                ]
            )
            out = ROOT / "bench" / "results" / "console_pages.md"
            out.write_text(report)
            print(f"wrote {out.relative_to(ROOT)}")
        print(table)
    finally:
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
