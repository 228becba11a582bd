"""One search over all requested memory types of one user, with every score part kept.

1. Candidates from each signal: one dense search per embedding space and one sparse lexical search, all under
   the same filter (user, types, importance, session, time range, not expired).
2. Fusion (core.hybrid): each model's cosines as z-scores over this query's candidates, averaged over the models
   that read both texts' languages, plus a bounded lexical part. A candidate under the relevance floor is left
   out: it is only the nearest there is, not related.
3. The graph: memories linked to entities the query names, weighted by how specific the entity is (a name in
   every memory says nothing) and by hops. A fact linked to them comes back even when the signals missed it.
4. Shaping (memories.scoring): bonuses in σ for the graph (and recency and importance where core.ranking gives
   them weight), a penalty for replaced facts.
Every number is core.ranking's RANKING. The limit applies to the merged list: never split per type and
re-sorted by importance (Hello-Agents' defect).
"""

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connections, router
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from conversations.models import AgentSession
from core import hybrid, stores
from core.cpu_slots import uses_cpu
from core.limits import MAX_QUERY_CHARS, check_text
from core.parallel import side_by_side
from core.queries import owned_by_pk, owned_rows, quoted_column, raw_rows, uuid_text, with_ids
from core.ranking import RANKING, RankingConfig
from core.stored_text import Text, in_language
from core.text import CJK_RUN, lexical_terms, without_paths
from core.vectorstore import VectorStoreError, Where
from memories import mirror
from memories.entities import name_keys
from memories.models import CHAT_ORIGIN, Entity, EntityType, Memory, MemoryEntity, MemoryQuerySet
from memories.scoring import Candidate, rank
from memories.types import names_where

logger = logging.getLogger(__name__)

GRAPH_DEPTH = 2


def score_parts(config: RankingConfig = RANKING) -> dict[str, str]:
    """Every part of a memory hit's scores, explained with the configuration's values (pages, API docs)."""
    parts = config.score_parts()
    return {
        "score": parts["score"],
        **hybrid.score_parts(config),
        **{name: parts[name] for name in ("recency", "importance", "graph", "superseded")},
    }


SCORE_PARTS = score_parts()


@dataclass
class MemoryHit:
    memory: Memory
    score: float
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class SearchResult:
    hits: list[MemoryHit]
    notice: str = ""  # e.g. the vector store was unavailable and a plain text match was used


def build_where(
    *,
    user: User,
    memory_types: Sequence[str] | None,
    min_importance: float,
    session: AgentSession | None,
    time_range: tuple[datetime | None, datetime | None] | None,
    now: datetime,
    include_chat_copies: bool = False,
    tag: str | None = None,
) -> Where:
    # Expiry to the minute: the store's filter only narrows the candidates (SQL applies `now` exactly), and a
    # filter that changes every call made every search count its words' frequencies afresh (count_cached).
    where: Where = {"user_id": str(user.pk), "expires_ts": {"gt": math.floor(now.timestamp() / 60) * 60.0}}
    if memory_types:
        where["memory_type"] = list(memory_types)
    if min_importance > 0:
        where["importance"] = {"gte": float(min_importance)}
    if tag:
        where["tags"] = tag  # a point matches when its list of tags holds it
    if session is not None:
        where["session_id"] = str(session.pk)
    if _leaves_out_chat_copies(include_chat_copies, session):
        where[mirror.ORIGIN] = {"not": CHAT_ORIGIN}
    if time_range:
        start, end = time_range
        bounds = {}
        if start:
            bounds["gte"] = start.timestamp()
        if end:
            bounds["lte"] = end.timestamp()
        if bounds:
            where["created_ts"] = bounds
    return where


@uses_cpu
def search_memories(
    *,
    user: User,
    query: str,
    limit: int = 5,
    memory_types: Sequence[str] | None = None,
    min_importance: float = 0.0,
    session: AgentSession | None = None,
    time_range: tuple[datetime | None, datetime | None] | None = None,
    include_superseded: bool = False,
    include_chat_copies: bool = False,
    require_match: bool = False,
    tag: str | None = None,
    config: RankingConfig = RANKING,
) -> SearchResult:
    """`include_superseded` also returns facts a newer one replaced (memories.curation); by default only
    current memories come back. `include_chat_copies` also returns the working-memory copies of chat messages,
    which a search within their own session returns anyway. `require_match` leaves out memories only the graph
    found (linked to an entity the query names, matching none of its words or meaning): what goes into an
    answer or a model's context must be above the relevance floor itself. `tag` keeps memories carrying it."""
    now = timezone.now()
    scope = _Scope(
        memory_types, min_importance, session, time_range, include_superseded, include_chat_copies, tag
    )
    query = check_text(query.strip(), "query", MAX_QUERY_CHARS)
    if not query:
        return SearchResult(_by_importance(user, limit, scope, now))
    where = build_where(
        user=user,
        memory_types=memory_types,
        min_importance=min_importance,
        session=session,
        time_range=time_range,
        now=now,
        include_chat_copies=include_chat_copies,
        tag=tag,
    )

    def signals() -> tuple[hybrid.Fused, str]:
        try:
            fused = hybrid.search(
                mirror.memory_store(), mirror.COLLECTION, query=query, where=where, config=config
            )
        except VectorStoreError as exc:
            logger.warning("vector search unavailable, falling back to text match: %s", exc)
            # What went wrong helps (another process holds the embedded store); where on the disk does not.
            reason = without_paths(str(exc) or exc.__class__.__name__)
            return (
                hybrid.Fused(),
                # Built in a worker thread, which has no request language: worded when returned, below.
                Text(
                    gettext_noop(
                        "The vector store is unavailable (%(reason)s); results come from a plain text match."
                    ),
                    reason=reason,
                ),
            )
        return fused, ""

    # The graph's reach and the mirror's count need only the query and the user: they are read here (SQL, this
    # thread's connection) while the models embed the query and the store searches in other threads.
    (reach, missing), (fused, notice) = side_by_side(
        lambda: (_graph_reach(user, query, config), mirror.missing_points(user)), signals
    )
    if missing and not notice:
        # A store deleted or damaged under the server: say so, and let the text match find what it lacks.
        notice = gettext(
            "The vector store is missing %(count)s of your memories until it is repaired; plain text matches "
            "are included meanwhile."
        ) % {"count": f"{missing:,}"}
    evidence = fused.evidence
    graph = _graph_scores(reach, set(evidence), config)
    candidates = _candidates(user, set(evidence) | set(graph), scope, now)
    text_matched: set[str] = set()
    if notice:
        # The store could not serve every memory: a memory containing the query's words counts as a match too,
        # beside what the store found for it.
        for memory_id, (candidate, overlap) in _text_match(user, query, scope, now).items():
            candidates[memory_id] = candidate
            evidence.setdefault(memory_id, hybrid.Evidence(relevance=overlap, coverage=overlap))
            text_matched.add(memory_id)
    ranked = rank(
        evidence=evidence,
        graph=graph,
        candidates=candidates,
        now=now,
        config=config,
        text_matched=frozenset(text_matched),
        require_match=require_match,
    )[:limit]
    rows = _rows(user, [memory_id for _, memory_id, _ in ranked])
    # A memory deleted between the two queries is simply left out.
    hits = [
        MemoryHit(rows[memory_id], score, scores) for score, memory_id, scores in ranked if memory_id in rows
    ]
    return SearchResult(hits, " ".join(in_language(text) for text in (notice, reach.notice) if text))


_CANDIDATE_COLUMNS = ("pk", "memory_type", "importance", "created_at", "superseded_by")


@dataclass(frozen=True)
class _GraphReach:
    """What the graph says about a query before any memory is found: the entities it names and their
    neighbours (entity id → hops), how specific each is (_specificity), the links of the user's facts to them,
    and a notice when the graph server could not answer (the SQL graph answered instead: core.stores.read_graph)."""

    distance: dict[str, int] = field(default_factory=dict)
    specificity: dict[str, float] = field(default_factory=dict)
    fact_links: list[tuple[object, str]] = field(default_factory=list)  # (raw memory id, entity id)
    notice: str = ""


def _graph_reach(user: User, query: str, config: RankingConfig = RANKING) -> _GraphReach:
    """The query's entities are the user's known entities whose name it contains (entities.name_keys): an
    indexed lookup, where running NER over every query cost ~9 ms and missed names asked in lower case. A person
    is also named by a first or last name alone ("Kofi" for Kofi Mensah), read from the user's people (its own
    lookup: in one OR with the names, SQLite scanned every user's entities), unless that word belongs to a name
    the query gives in full: "Ana Costa" must not start from Ana Silva too. A one-word name is no name given in
    full: "Amara", an entity of its own where a memory wrote her first name alone, still starts from Amara Okafor."""
    keys = name_keys(query)
    found = _entities_named(user, keys)
    given_in_full = {word for _, key in found if key in keys and " " in key for word in key.split()}
    start = {uuid_text(pk) for pk, key in found if key in keys or not given_in_full.intersection(key.split())}
    if not start:
        return _GraphReach()
    distance = dict.fromkeys(start, 0)
    neighbors, notice = stores.read_graph(
        lambda graph: graph.neighbors(str(user.pk), sorted(start), depth=GRAPH_DEPTH)
    )
    for neighbor in neighbors:
        distance.setdefault(neighbor.entity_id, neighbor.distance)
    # Entity.frequency is the count of an entity's links (memories.entity_links keeps it): read for the ≤ 301
    # entities in reach, where counting their links read every link of a speaker's name.
    linked = {
        uuid_text(pk): frequency for pk, frequency in owned_rows(Entity, user, distance, ("id", "frequency"))
    }
    memories = memory_count(user)
    specificity = {entity: _specificity(linked.get(entity, 1), memories) for entity in distance}
    fact_links = _fact_links(user, distance, linked, specificity, config)
    return _GraphReach(distance, specificity, fact_links, notice)


def _entities_named(user: User, keys: set[str]) -> list[tuple[object, str]]:
    """(raw id, key) of the user's entities whose key is one of `keys`, then of the user's people whose first or
    last name is one of its words. In SQL, not through the ORM: building the OR of two LIKEs per word cost
    about a millisecond of Python per search, three times what the database took to answer."""
    connection = connections[router.db_for_read(Entity)]
    table = connection.ops.quote_name(Entity._meta.db_table)
    pk, owner, name_key, entity_type = (
        quoted_column(Entity, name, connection) for name in ("id", "user", "key", "entity_type")
    )
    # Letters only: no word holds a LIKE wildcard.
    words = sorted(key for key in keys if key.isalpha() and not CJK_RUN.search(key))
    found: list[tuple[object, str]] = []
    with connection.cursor() as cursor:
        if keys:
            marks = ", ".join(["%s"] * len(keys))
            cursor.execute(
                f"SELECT {pk}, {name_key} FROM {table} WHERE {owner} = %s AND {name_key} IN ({marks})",  # noqa: S608
                [user.pk, *sorted(keys)],
            )
            found += cursor.fetchall()
        if words:
            # Its own query: in one OR with the names, SQLite scanned every user's entities.
            first_or_last = " OR ".join([f"{name_key} LIKE %s OR {name_key} LIKE %s"] * len(words))
            cursor.execute(
                f"SELECT {pk}, {name_key} FROM {table} "  # noqa: S608 - names from the model, values as parameters
                f"WHERE {owner} = %s AND {entity_type} = %s AND ({first_or_last})",
                [
                    user.pk,
                    EntityType.PERSON.value,
                    *(like for word in words for like in (f"{word} %", f"% {word}")),
                ],
            )
            found += cursor.fetchall()
    return found


def _graph_scores(reach: _GraphReach, found: set[str], config: RankingConfig = RANKING) -> dict[str, float]:
    """Memories linked to the query's entities or to their neighbours within two hops.

    Only facts rank by their links alone (memories.scoring.rank); any other memory needs a relevance of its own, so of those
    only the ones the signals `found` are scored. A speaker's name in a conversation links hundreds of events:
    reading every link cost half of a LoCoMo search.

    A link counts by hops (config.graph_hops) times the entity's specificity, log(1 + N/n) / log(1 + N) for an
    entity linked to n of the user's N memories: 1 for an entity on one memory, log 2 / log(1 + N) for one on
    every memory (0.1 at 1,000 memories), so the user's own name no longer lifts them all.
    """
    distance = reach.distance
    if not distance:
        return {}
    # Two lookups, not one OR: SQLite answers `memory IN … OR memory.type = …` by scanning every link.
    # The found memories' links are read by memory and kept for the entities in reach here, in Python: with
    # the entity ids in SQL too, SQLite probed every (memory, entity) pair, 100 × 300 probes (12 ms).
    found_links = _links_to(distance, with_ids(MemoryEntity.objects.all(), "memory", found))
    specificity = reach.specificity
    # A memory counts by its closest entities: one that names Ana and Porto is about Ana. Porto is Ana's
    # neighbour only because this very memory names both, so it must not lift it above Ana's other memories.
    # Keyed by the memory's raw id until the end: each id is turned into text once, not once per link.
    closest: dict[object, tuple[int, float]] = {}
    for raw_memory_id, entity in {*found_links, *reach.fact_links}:
        link = (-distance[entity], specificity[entity])
        closest[raw_memory_id] = max(closest.get(raw_memory_id, link), link)
    scores = {
        uuid_text(raw_memory_id): _hop_weight(-negative_hops, config) * entity_specificity
        for raw_memory_id, (negative_hops, entity_specificity) in closest.items()
    }
    return {memory_id: score for memory_id, score in scores.items() if score > 0}


# Up to this many facts, reading all their links (~4 each) costs less than reading the links of the entities in
# reach.
FACTS_READ_WHOLE = 500
# Past that, the links read from the entities in reach, the most specific first, stop at this many: the graph
# step's bound, whatever the size of the store.
FACT_LINKS_BUDGET = 2_000
# The user's memory count, for specificity, is counted again after this long: counting walks the user's index
# (~5 ms at 100,000 memories), and a minute's writes hardly move log(1 + N/n) / log(1 + N).
MEMORY_COUNT_SECONDS = 60


def _links_to(distance: dict[str, int], links: QuerySet[MemoryEntity]) -> list[tuple[object, str]]:
    """The (memory, entity) rows of the MemoryEntity queryset `links` whose entity is in `distance`: the memory
    id raw, as the database stores it (core.queries.raw_rows), the entity id as text, like the graph's.
    Thousands of ids pass here per search, so each entity id is turned into text once."""
    entity_text: dict[object, str] = {}
    kept = []
    for memory_id, entity_id in raw_rows(links.values_list("memory_id", "entity_id")):
        entity = entity_text.get(entity_id)
        if entity is None:
            entity = entity_text[entity_id] = uuid_text(entity_id)
        if entity in distance:
            kept.append((memory_id, entity))
    return kept


def _fact_links(
    user: User,
    distance: dict[str, int],
    linked: dict[str, int],
    specificity: dict[str, float],
    config: RankingConfig,
) -> list[tuple[object, str]]:
    """The links of the user's facts to the entities in reach, read within a bound that does not grow with the
    store.

    A user with few facts has all of their links read (two indexes, cheap). Otherwise they are read from the
    entities in reach, at most FACT_LINKS_BUDGET links: the entities by the score a link to them gives (hops
    times specificity), highest first, each while its links fit in what is left. A fact reached only through
    a name on thousands of memories would score next to nothing (specificity 0.1 at 1,000 memories); reading
    every link of a speaker's name cost 80 ms at 20,000 memories (bench/results/graph_step.md). The fact's
    own relevance still counts when the signals find it: its links are read by memory (_graph_scores)."""
    fact_types = names_where(lambda policy: policy.states_facts)
    facts = Memory.objects.filter(user=user, memory_type__in=fact_types).order_by()
    few = facts[: FACTS_READ_WHOLE + 1].count()  # stops counting past the threshold
    if not few:
        return []
    if few <= FACTS_READ_WHOLE:
        return _links_to(distance, MemoryEntity.objects.filter(memory__in=facts))

    link_scores = {
        entity: _hop_weight(hops, config) * specificity[entity] for entity, hops in distance.items()
    }
    chosen, budget = [], FACT_LINKS_BUDGET
    for entity in sorted(distance, key=lambda entity: (-link_scores[entity], entity)):
        links = linked.get(entity, 0)
        if link_scores[entity] > 0 and links <= budget:
            chosen.append(entity)
            budget -= links
    in_reach = MemoryEntity.objects.filter(entity_id__in=chosen, memory__memory_type__in=fact_types)
    return _links_to(distance, in_reach)


def memory_count(user: User) -> int:
    """How many memories `user` has, counted at most once every MEMORY_COUNT_SECONDS (Django's cache)."""
    key = f"mnemo:memory-count:{user.pk}"
    count = cache.get(key)
    if count is None:
        count = Memory.objects.filter(user=user).count()
        cache.set(key, count, MEMORY_COUNT_SECONDS)
    return int(count)


def _hop_weight(hops: int, config: RankingConfig) -> float:
    """What a link to an entity `hops` away from the query's own is worth (config.graph_hops; 0 past them)."""
    return config.graph_hops[hops] if hops < len(config.graph_hops) else 0.0


def _specificity(linked: int, memories: int) -> float:
    memories = max(memories, linked, 1)
    return math.log(1 + memories / max(linked, 1)) / math.log(1 + memories)


@dataclass(frozen=True)
class _Scope:
    """Which memories a search may return, besides the owner: applied in SQL to every candidate."""

    memory_types: Sequence[str] | None
    min_importance: float
    session: AgentSession | None
    time_range: tuple[datetime | None, datetime | None] | None
    include_superseded: bool
    include_chat_copies: bool = False
    tag: str | None = None


def _leaves_out_chat_copies(include_chat_copies: bool, session: AgentSession | None) -> bool:
    """Chat copies are a session's own context: a search scoped to their session returns them, others only
    when asked."""
    return not include_chat_copies and session is None


def _filtered(
    user: User, scope: _Scope, now: datetime, ids: Iterable[str] | None = None
) -> MemoryQuerySet[Memory]:
    if ids is None:
        memories = Memory.objects.for_user(user)
    else:  # owned_by_pk filters the queryset it is given, so it stays a MemoryQuerySet
        memories = cast(MemoryQuerySet[Memory], owned_by_pk(Memory.objects.all(), user, ids))
    start, end = scope.time_range or (None, None)
    if _leaves_out_chat_copies(scope.include_chat_copies, scope.session):
        memories = memories.without_chat_copies()
    return memories.active(now).filtered(
        memory_types=scope.memory_types,
        session=scope.session,
        min_importance=scope.min_importance if scope.min_importance > 0 else None,
        since=start,
        until=end,
        superseded=None if scope.include_superseded else False,
        tag=scope.tag,
    )


def _candidates(user: User, ids: Iterable[str], scope: _Scope, now: datetime) -> dict[str, Candidate]:
    # The filters are applied again in SQL: the database, not the mirror, decides what a user may see.
    # No order: rank() sorts, and the model's default order sorted every candidate by date for nothing.
    memories = _filtered(user, scope, now, ids=ids).order_by()
    return {
        str(pk): Candidate(memory_type, importance, created_at, successor is not None)
        for pk, memory_type, importance, created_at, successor in memories.values_list(*_CANDIDATE_COLUMNS)
    }


def _rows(user: User, ids: Sequence[str]) -> dict[str, Memory]:
    memories = owned_by_pk(Memory.objects.select_related("session", "origin_key"), user, ids)
    return {str(memory.pk): memory for memory in memories}


def _by_importance(user: User, limit: int, scope: _Scope, now: datetime) -> list[MemoryHit]:
    memories = _filtered(user, scope, now)
    hits = []
    for memory in memories.select_related("session").order_by("-importance", "-created_at")[:limit]:
        hits.append(MemoryHit(memory, round(memory.importance, 6), {"importance": memory.importance}))
    return hits


def _text_match(user: User, query: str, scope: _Scope, now: datetime) -> dict[str, tuple[Candidate, float]]:
    """Memories containing the query's terms, each with the share of terms it contains."""
    terms = sorted(set(lexical_terms(query, for_query=True)), key=len, reverse=True)[:8]
    if not terms:
        return {}
    condition = Q()
    for term in terms:
        condition |= Q(content__icontains=term)
    memories = _filtered(user, scope, now).filter(condition)[:500]
    return {
        str(pk): (
            Candidate(memory_type, importance, created_at, successor is not None),
            _text_overlap(query, content),
        )
        for pk, memory_type, importance, created_at, successor, content in memories.values_list(
            *_CANDIDATE_COLUMNS, "content"
        )
    }


def _text_overlap(query: str, content: str) -> float:
    terms = set(lexical_terms(query, for_query=True))
    if not terms:
        return 0.0
    lowered = content.lower()
    return sum(1 for term in terms if term in lowered) / len(terms)
