"""The queries behind the console's pages at scale (bench/console_pages.py times them at 100,000 memories): each
page's number of queries stays the same however many memories there are, and on SQLite each heavy query reads the
index it was given (memories/migrations/0013_console_page_indexes.py) rather than every row."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from core.models import ApiKey
from memories import facets
from memories.models import Memory, MemoryEdit

pytestmark = pytest.mark.django_db
sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plans")

COLOURS = ["teal", "ochre", "umber"]


def memories(user, count: int, *, start: int = 0, key: ApiKey | None = None) -> list[Memory]:
    """`count` rows without services, newest first: a tag each (of three), importance 0.00-0.99, and an API
    source on the even ones."""
    now = timezone.now()
    return Memory.objects.bulk_create(
        Memory(
            user=user,
            content=f"note {i}",
            memory_type=["semantic", "episodic"][i % 2],
            importance=(i % 100) / 100,
            tags=[COLOURS[i % 3]],
            origin="api" if i % 2 == 0 else "page",
            origin_key=key if i % 2 == 0 else None,
            created_at=now - timedelta(minutes=i),
        )
        for i in range(start, start + count)
    )


def plan(sql: str, params) -> str:
    with connection.cursor() as cursor:
        return " | ".join(row[-1] for row in cursor.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall())


def plans_of(call) -> list[tuple[str, str]]:
    """(SQL, plan) of each query `call` makes; the SQL as run, so the plan is the one SQLite chose for it."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return [(query["sql"], plan(query["sql"], [])) for query in captured.captured_queries]


def only_plan(call, *, reading: str) -> str:
    """The plan of the one query of `call` that reads the memory table with `reading` in its SQL."""
    found = [
        query_plan
        for sql, query_plan in plans_of(call)
        if '"memories_memory"' in sql.split(" FROM ", 1)[-1][:40] and reading in sql
    ]
    assert len(found) == 1, found
    return found[0]


# --- the number of queries does not grow with the memories -------------------------------------------------


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def test_the_dashboard_makes_as_many_queries_for_30_memories_as_for_3(
    logged_in, user, django_assert_max_num_queries
):
    key = ApiKey.objects.create(user=user, name="agent", prefix="pagesq01", hashed_secret="-")
    memories(user, 3, key=key)
    few = queries_of(logged_in, reverse("dashboard"))
    memories(user, 27, start=3, key=key)
    with django_assert_max_num_queries(few):
        response = logged_in.get(reverse("dashboard"))
    assert response.context["memory_count"] == 30
    assert response.context["tags"] == [("ochre", 10), ("teal", 10), ("umber", 10)]
    assert [(source.label, source.count) for source in response.context["sources"]] == [
        ("API · agent", 15),
        ("page", 15),
    ]


def test_a_memorys_page_makes_as_many_queries_for_30_replaced_facts_and_edits_as_for_3(
    logged_in, user, django_assert_max_num_queries
):
    [fact] = memories(user, 1)

    def replaced(count: int, start: int) -> None:
        for older in memories(user, count, start=start):
            older.superseded_by, older.valid_to = (
                fact,
                timezone.now() - timedelta(days=older.importance * 100),
            )
            older.save(update_fields=["superseded_by", "valid_to"])
            MemoryEdit.objects.create(memory=fact, via="page", changes={"importance": [0.1, 0.2]})

    replaced(3, 1)
    url = reverse("memory_detail", args=[fact.pk])
    few = queries_of(logged_in, url)
    replaced(27, 4)
    with django_assert_max_num_queries(few):
        response = logged_in.get(url)
    assert len(response.context["replaced"]) == 30
    assert len(response.context["edits"]) == 30


# --- the plans SQLite chooses --------------------------------------------------------------------------------


@sqlite_only
def test_the_counts_per_tag_source_and_type_are_read_from_indexes_alone(logged_in, user):
    memories(user, 30)
    tags_plan = only_plan(lambda: facets.tag_counts(user), reading='"tags"')
    assert "COVERING INDEX memory_user_tags" in tags_plan
    sources_plan = only_plan(lambda: facets.source_counts(user), reading='"origin_key_id"')
    assert "COVERING INDEX memory_user_origin_key" in sources_plan
    types_plan = only_plan(lambda: logged_in.get(reverse("dashboard")), reading='"memory_type" AS')
    assert "COVERING INDEX memory_user_type_created" in types_plan


@sqlite_only
def test_the_memories_a_fact_replaced_are_found_by_its_index(logged_in, user):
    [fact] = memories(user, 1)
    replaced_plan = only_plan(
        lambda: logged_in.get(reverse("memory_detail", args=[fact.pk])), reading='"superseded_by_id" ='
    )
    assert "INDEX memory_superseded_by_user (superseded_by_id=? AND user_id=?)" in replaced_plan


@sqlite_only
def test_a_deep_page_skips_its_rows_in_the_index_and_shows_the_same_rows(logged_in, user):
    rows = memories(user, 130)
    with CaptureQueriesContext(connection) as captured:
        response = logged_in.get(reverse("memory_list") + "?page=2&size=25")
    assert [m.pk for m in response.context["page"].memories] == [m.pk for m in rows[25:50]]
    skipping = [query["sql"] for query in captured.captured_queries if "OFFSET 25" in query["sql"]]
    assert len(skipping) == 1
    assert "COVERING INDEX memory_user_archived_order" in plan(skipping[0], [])
    # Nearer the oldest end, the ids are read from there and turned round.
    fourth = logged_in.get(reverse("memory_list") + "?page=4&size=25")
    assert [m.pk for m in fourth.context["page"].memories] == [m.pk for m in rows[75:100]]


@sqlite_only
def test_an_importance_filter_walks_the_date_order_instead_of_sorting_by_importance(logged_in, user):
    rows = memories(user, 200)
    response = logged_in.get(reverse("memory_list") + "?min_importance=0.5&max_importance=0.6")
    shown = [m.pk for m in response.context["page"].memories]
    assert shown == [m.pk for m in rows if 0.5 <= m.importance <= 0.6]  # 0.50-0.60, twice: 22, newest first
    assert response.context["page"].total == 22
    page_plan = only_plan(
        lambda: logged_in.get(reverse("memory_list") + "?min_importance=0.5"), reading="LIMIT 51"
    )
    assert "memory_user_importance" not in page_plan
    assert "TEMP B-TREE" not in page_plan


def test_a_tag_filter_finds_exactly_the_memories_holding_the_tag(user):
    lists = [
        ["kiln"],
        ["kiln-yard"],
        ["Kiln"],
        ["x", "kiln"],
        ["Ölmühle"],
        ['say "ho"'],
        ["a/b"],
        ['"kiln"'],
        [],
    ]
    rows = Memory.objects.bulk_create(
        Memory(user=user, content=f"row {i}", tags=tags) for i, tags in enumerate(lists)
    )
    owned = Memory.objects.filter(user=user)

    def holding(tag: str) -> list[str]:
        return sorted(m.content for m in owned.filtered(tag=tag))

    assert holding("kiln") == ["row 0", "row 3"]
    assert holding("Ölmühle") == ["row 4"]
    assert holding('say "ho"') == ["row 5"]
    assert holding("a/b") == ["row 6"]
    assert holding('"kiln"') == ["row 7"]
    assert holding("kil") == []
    assert sorted(m.content for m in owned.exclude(tags__has_tag="kiln")) == [
        f"row {i}" for i in (1, 2, 4, 5, 6, 7, 8)
    ]
    assert len(rows) == len(lists)


@sqlite_only
def test_a_plain_tag_is_looked_for_in_the_stored_text_before_the_list_is_read(user):
    sql, params = Memory.objects.filter(user=user).filtered(tag="kiln").query.sql_with_params()
    assert 'instr("memories_memory"."tags", %s) > 0 AND EXISTS' in sql
    assert '"kiln"' in params
    accented, _ = Memory.objects.filter(user=user).filtered(tag="Ölmühle").query.sql_with_params()
    assert "instr" not in accented
