"""The graph step of a memory search at two store sizes: does its cost grow with the store?

    .venv/bin/python bench/graph_step.py                         # 10,000 and 100,000 memories (~6 min)
    .venv/bin/python bench/graph_step.py --sizes 2000,20000 --no-write

A search reads the graph twice (memories.retrieval): its reach (the query's entities, their neighbours, the
links of the user's facts to them, the user's memory count) beside the signals, and the scores of the found
memories by their links. Both are SQL only, so this bench builds the stores without embedding anything: the
LoCoMo turns of all ten conversations ("Speaker: text", cycled, as bench/memory_bench.py posts them) run through
the product's extractor (memories.entities.extract) once, and each store gets one row per memory, its entity
links and its relations (memories.entity_links.graph_edges, counted per pair) with bulk_create, as
memories.entity_links would write them. Every tenth memory is a semantic fact, so the facts' links are read as a
user with many facts has them. Two users, one per size, share the database, as users of one server do.

The LoCoMo questions are the queries; each query's "found" memories are 100 of the user's memories drawn at
random, seeded (the signals' hits are the same size; what the graph step costs depends on how many it scores, not
on which). Per size, the same queries, interleaved between the sizes, the first 20 discarded; every SQL statement
is timed through connection.execute_wrapper and grouped by its shape (execute only: SQLite does most of its work
while the rows are fetched, so these add up to less than the parts). With --before REV, memories/retrieval.py as
it was at REV runs beside the current one on the same queries and found memories, in alternating order.
LoCoMo data is read from ../shared/bench/locomo10.json (CC BY-NC 4.0; never copied into the repository).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

# isort: off
import config  # noqa: E402,F401 - the app's process setup (OPENBLAS_NUM_THREADS) must run before numpy loads
from report import load, machine, markdown, pct, revision  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "bench" / "locomo10.json"
RESULTS = ROOT / "bench" / "results"
FOUND_PER_QUERY = 100
FACT_SHARE = 10  # every tenth memory is a semantic fact


def locomo() -> tuple[list[str], list[str]]:
    conversations = json.loads(LOCOMO.read_text())
    turns, questions = [], []
    for conversation in conversations:
        sessions = conversation["conversation"]
        for name, value in sessions.items():
            if re.fullmatch(r"session_\d+", name):
                turns += [f"{turn['speaker']}: {turn['text']}" for turn in value]
        questions += [qa["question"] for qa in conversation["qa"]]
    return turns, questions


def extracted(texts: list[str]) -> list[tuple[list, list]]:
    """Per text: its mentions (key, name, type) and graph edges (source key, target key, type)."""
    from memories.entities import extract
    from memories.entity_links import MAX_ENTITIES_PER_MEMORY, graph_edges

    out = []
    for text in texts:
        extraction = extract(text)
        mentions = list({m.key: m for m in extraction.mentions}.values())[:MAX_ENTITIES_PER_MEMORY]
        keys = [m.key for m in mentions]
        out.append(([(m.key, m.name, m.entity_type) for m in mentions], graph_edges(extraction, keys)))
    return out


def build_store(username: str, size: int, texts: list[str], graphs: list[tuple[list, list]]):
    from django.contrib.auth.models import User

    from memories.models import Entity, Memory, MemoryEntity, Relation

    user = User.objects.create_user(username)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    memories, links, entity_rows = [], [], {}
    edges: Counter = Counter()
    for index in range(size):
        text_index = index % len(texts)
        memory = Memory(
            id=uuid.uuid4(),
            user=user,
            memory_type="semantic" if index % FACT_SHARE == 0 else "episodic",
            content=texts[text_index],
            importance=0.5,
            created_at=start + timedelta(minutes=index),
        )
        memories.append(memory)
        mentions, memory_edges = graphs[text_index]
        for key, name, entity_type in mentions:
            entity_rows.setdefault(key, (name, entity_type))
            links.append((memory.id, key, name))
        edges.update(memory_edges)
    Memory.objects.bulk_create(memories, batch_size=2000)
    entities = {
        key: Entity(id=uuid.uuid4(), user=user, key=key, name=name, entity_type=entity_type)
        for key, (name, entity_type) in entity_rows.items()
    }
    frequency = Counter(key for _, key, _ in links)
    for key, entity in entities.items():
        entity.frequency = frequency[key]
    Entity.objects.bulk_create(entities.values(), batch_size=2000)
    MemoryEntity.objects.bulk_create(
        [MemoryEntity(memory_id=m, entity=entities[key], mention=name) for m, key, name in links],
        batch_size=5000,
    )
    Relation.objects.bulk_create(
        [
            Relation(
                user=user,
                source=entities[source],
                target=entities[target],
                relation_type=relation_type,
                frequency=count,
            )
            for (source, target, relation_type), count in edges.items()
        ],
        batch_size=5000,
    )
    return user, [m.id for m in memories], len(entities), len(links), len(edges)


def retrieval_at(revision: str):
    """memories/retrieval.py as it was at `revision`, loaded as a module of its own beside the current one."""
    source = subprocess.run(
        ["git", "show", f"{revision}:memories/retrieval.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    spec = importlib.util.spec_from_loader(f"retrieval_{revision}", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    exec(compile(source, f"retrieval@{revision}", "exec"), module.__dict__)  # noqa: S102 - the repo's own code
    return module


SHAPE = re.compile(r"\s+")


def shape(sql: str) -> str:
    """A statement's shape: its text with the parameter lists collapsed and the column lists cut."""
    sql = re.sub(r"\((%s, )+%s\)", "(…)", sql)
    sql = re.sub(r"SELECT .*? FROM", "SELECT … FROM", sql, count=1)
    sql = sql.replace('"memories_', '"').replace('"', "")
    return SHAPE.sub(" ", sql)[:150]


@contextmanager
def timed_statements(into: defaultdict):
    from django.db import connection

    def wrapper(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            into[shape(sql)] += time.perf_counter() - started

    with connection.execute_wrapper(wrapper):
        yield


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--before", help="a revision whose memories/retrieval.py runs beside the current one")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    began, load_before = time.monotonic(), load()
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-graph-step-"))
    try:
        setup_django(data_dir)
        from memories import retrieval

        versions = {"now": retrieval}
        if args.before:
            versions = {f"before ({args.before})": retrieval_at(args.before), **versions}
        texts, questions = locomo()
        started = time.perf_counter()
        graphs = extracted(texts)
        extract_seconds = time.perf_counter() - started
        stores = {}
        for size in sizes:
            started = time.perf_counter()
            user, ids, entities, links, relations = build_store(f"size{size}", size, texts, graphs)
            stores[size] = (user, ids)
            print(
                f"{size:,} memories: {entities:,} entities, {links:,} links, {relations:,} relations "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
        rng = random.Random(7)
        queries = rng.sample(questions, min(args.queries + 20, len(questions)))
        parts = {size: defaultdict(list) for size in sizes}
        statements = {size: defaultdict(float) for size in sizes}
        names = list(versions)
        for number, query in enumerate(queries):
            for size in sizes if number % 2 else reversed(sizes):
                user, ids = stores[size]
                found = {str(memory_id) for memory_id in rng.sample(ids, FOUND_PER_QUERY)}
                for name in names if number % 3 else reversed(names):
                    version = versions[name]
                    sql: defaultdict = defaultdict(float)
                    with timed_statements(sql):
                        started = time.perf_counter()
                        reach = version._graph_reach(user, query)
                        reached = time.perf_counter()
                        version._graph_scores(reach, found)
                        scored = time.perf_counter()
                    if number < 20:
                        continue
                    parts[size][(name, "the graph's reach")].append((reached - started) * 1000)
                    parts[size][(name, "graph scores of the found memories")].append(
                        (scored - reached) * 1000
                    )
                    parts[size][(name, "the graph step (both)")].append((scored - started) * 1000)
                    if name == "now":
                        for statement, seconds in sql.items():
                            statements[size][statement] += seconds * 1000
        timed = len(queries) - 20
        rows = []
        for name in names:
            for part in ("the graph's reach", "graph scores of the found memories", "the graph step (both)"):
                row = [f"{name}: {part}"]
                for size in sizes:
                    values = parts[size][(name, part)]
                    row += [f"{pct(values, 50):.2f}", f"{pct(values, 95):.2f}"]
                first, last = (pct(parts[size][(name, part)], 50) for size in (sizes[0], sizes[-1]))
                rows.append([*row, f"{last / first:.2f}×"])
        head = ["part (in-process)"]
        for size in sizes:
            head += [f"p50 ms at {size:,}", f"p95 ms at {size:,}"]
        table = markdown([*head, f"p50 ratio {sizes[-1]:,} / {sizes[0]:,}"], rows)
        shapes = sorted(set().union(*statements.values()), key=lambda s: -statements[sizes[-1]].get(s, 0))
        statement_rows = [
            [f"`{statement}`", *(f"{statements[size].get(statement, 0) / timed:.2f}" for size in sizes)]
            for statement in shapes[:12]
        ]
        statement_table = markdown(
            ["SQL statement (shape)", *(f"mean ms per query at {size:,}" for size in sizes)], statement_rows
        )
        print(table, "\n\n" + statement_table, flush=True)
        if args.no_write:
            return
        report = f"""# The graph step of a memory search at {" and ".join(f"{s:,}" for s in sizes)} memories

Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/graph_step.py --sizes {args.sizes}\
{f" --before {args.before}" if args.before else ""}` \
({(time.monotonic() - began) / 60:.0f} min) on {machine()}; load average {load_before} before, {load()} after.
Revision: {revision()}.

{chr(10).join(__doc__.split(chr(10) + chr(10))[2:]).split("LoCoMo data is read")[0].strip()}

LoCoMo: {len(texts):,} turns extracted in {extract_seconds:.0f} s; {timed} questions timed per size.

{table}

The bound, and why it holds: `memories.retrieval._fact_links` (facts' links read whole only while the user has
at most FACTS_READ_WHOLE facts, else at most FACT_LINKS_BUDGET links from the most specific entities in reach),
the reach's link counts from `Entity.frequency` (≤ 301 entities) and the cached memory count
(MEMORY_COUNT_SECONDS).

Where the time goes, by SQL statement (execute time only):

{statement_table}
"""
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "graph_step.md").write_text(report)
        print(f"Wrote {RESULTS / 'graph_step.md'}")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
