"""The memory pages: browser (filters, search, keyset pages, inline edit, bulk forget), detail, sessions."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from conversations.models import AgentSession, ChatMessage
from core.models import MirrorState
from memories.actions.edit import memory_archive, memory_update
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.listing import PAGE_SIZE, Cursor
from memories.models import EditVia, Entity, Memory, MemoryEdit, MemoryEntity
from memories.retrieval import SCORE_PARTS

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def table(client: Client, query: str = "", **headers):
    return client.get(reverse("memory_list") + query, HTTP_HX_TARGET="memory-table", **HTMX, **headers)


def row_htmx(memory: Memory) -> dict:
    return {**HTMX, "HTTP_HX_TARGET": f"memory-{memory.pk}"}


def bulk(
    user, count: int, *, start: datetime | None = None, step=timedelta(minutes=1), **fields
) -> list[Memory]:
    """`count` memories, newest first, without services: fast, and no mirror."""
    start = start or timezone.now()
    fields = {"memory_type": "episodic", **fields}
    return Memory.objects.bulk_create(
        [
            Memory(user=user, content=f"memory {i}", created_at=start - i * step, **fields)
            for i in range(count)
        ]
    )


# --- the browser ---------------------------------------------------------------------------------------------


def test_browser_lists_my_memories_newest_first(logged_in, user, other_user):
    now = timezone.now()
    memory_create(
        user=user, content="older fact", memory_type="semantic", created_at=now - timedelta(hours=2)
    )
    memory_create(
        user=user, content="newer fact", memory_type="semantic", created_at=now - timedelta(hours=1)
    )
    memory_create(user=other_user, content="mallory's secret", memory_type="semantic")
    response = logged_in.get(reverse("memory_list"))
    assert response.status_code == 200
    html = response.text
    assert html.index("newer fact") < html.index("older fact")
    assert "mallory" not in html
    assert 'id="memory-filters"' in html
    assert "Older →" not in html and "← Newer" not in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?type=semantic", {"semantic fact"}),
        ("?type=episodic", {"episodic low", "episodic in session"}),
        ("?session=chat-1", {"episodic in session"}),
        ("?min_importance=0.5", {"semantic fact", "episodic in session"}),
        ("?max_importance=0.5", {"episodic low", "episodic in session"}),
        ("?min_importance=0.6&max_importance=1", {"semantic fact"}),
        ("?date_from=2024-03-02", {"semantic fact", "episodic in session"}),
        ("?date_to=2024-03-01", {"episodic low"}),
        ("?date_from=2024-03-02&date_to=2024-03-02", {"episodic in session"}),
        ("?archived=on", {"archived note"}),
        ("?type=episodic&session=chat-1&min_importance=0.5", {"episodic in session"}),
        ("?session=no-such-session", set()),
    ],
)
def test_filters(logged_in, user, query, expected):
    session = session_for_key(user=user, key="chat-1")
    day = datetime(2024, 3, 1, 12, tzinfo=UTC)
    memory_create(user=user, content="episodic low", memory_type="episodic", importance=0.2, created_at=day)
    memory_create(
        user=user,
        content="episodic in session",
        memory_type="episodic",
        importance=0.5,
        session=session,
        created_at=day + timedelta(days=1),
    )
    memory_create(
        user=user,
        content="semantic fact",
        memory_type="semantic",
        importance=0.9,
        created_at=day + timedelta(days=2),
    )
    archived = memory_create(user=user, content="archived note", memory_type="semantic", created_at=day)
    memory_archive(memory=archived, via=EditVia.PAGE)

    response = table(logged_in, query)

    assert response.status_code == 200
    assert "<html" not in response.text
    shown = {m.content for m in response.context["page"].memories}
    assert shown == expected
    for content in {"episodic low", "episodic in session", "semantic fact", "archived note"} - expected:
        assert f">{content}<" not in response.text


def test_unknown_session_says_so(logged_in, user):
    response = table(logged_in, "?session=nope")
    assert "No session has the key “nope”." in response.text


def test_invalid_filters_are_reported_and_the_valid_ones_still_apply(logged_in, user):
    memory_create(user=user, content="semantic fact", memory_type="semantic", importance=0.9)
    memory_create(user=user, content="episodic event", memory_type="episodic", importance=0.9)
    response = logged_in.get(reverse("memory_list") + "?type=semantic&min_importance=7&date_from=yesterday")
    assert response.status_code == 200
    assert "Importance from: Ensure this value is less than or equal to 1." in response.text
    assert "Created from: Enter a valid date." in response.text
    assert [m.content for m in response.context["page"].memories] == ["semantic fact"]


def test_filter_form_works_without_js_and_the_table_swaps_with_htmx(logged_in, user):
    memory_create(user=user, content="semantic fact", memory_type="semantic")
    full = logged_in.get(reverse("memory_list") + "?q=&type=semantic&session=&min_importance=")
    assert full.status_code == 200
    assert full.text.count("<html") == 1
    assert 'hx-get="/memories/" hx-target="#memory-table"' in full.text
    partial = table(logged_in, "?q=&type=semantic&session=&min_importance=")
    assert partial.status_code == 200
    assert "<html" not in partial.text
    assert partial.text.lstrip().startswith('<section id="memory-table"')
    # The pushed URL drops the empty fields the form sent.
    assert partial["HX-Push-Url"] == "/memories/?type=semantic"


def test_type_tabs_keep_the_other_filters(logged_in, user):
    session_for_key(user=user, key="chat-1")
    html = table(logged_in, "?session=chat-1&min_importance=0.3").text
    assert 'href="/memories/?session=chat-1&amp;min_importance=0.3&amp;type=semantic"' in html
    assert '<input type="hidden" name="type" value="" form="memory-filters">' in html


@pytest.mark.django_db(transaction=True)
def test_search_shows_each_score_part(logged_in, user):
    memory_create(user=user, content="the meeting moved to Lisbon", memory_type="episodic", importance=0.8)
    memory_create(user=user, content="bought apples and pears", memory_type="episodic")
    response = table(logged_in, "?q=Lisbon+meeting")
    assert response.status_code == 200
    hits = response.context["hits"]
    assert hits[0].memory.content == "the meeting moved to Lisbon"
    html = response.text
    assert "the meeting moved to Lisbon" in html
    # Each part carries its one-line explanation, and the legend lists them all.
    for key, part in [
        ("score", "score"),
        ("dense", "dense"),
        ("lexical", "lexical"),
        ("fused", "fused"),
        ("recency", "recency"),
        ("importance", "importance ×"),
        ("graph", "graph"),
    ]:
        assert f'<dt title="{escape(SCORE_PARTS[key])}">{part}</dt>' in html
        assert f"<dt>{key}</dt><dd>{escape(SCORE_PARTS[key])}</dd>" in html
    assert "What the scores mean" in html
    assert f"<dd>{hits[0].score:.3f}</dd>" in html
    assert f"<dd>{hits[0].scores['lexical']:.3f}</dd>" in html
    assert hits[0].scores["lexical"] > 0
    assert "result" in html and "for “Lisbon meeting”" in html
    assert "Older →" not in html


@pytest.mark.django_db(transaction=True)
def test_a_search_nothing_matches_says_so(logged_in, user):
    memory_create(user=user, content="the meeting moved to Lisbon", memory_type="episodic")
    html = table(logged_in, "?q=zzqxj").text
    assert "No memory matches this search." in html
    assert "0 results" not in html and "What the scores mean" not in html


@pytest.mark.django_db(transaction=True)
def test_search_applies_the_filters(logged_in, user):
    memory_create(user=user, content="Lisbon trip planning", memory_type="episodic", importance=0.9)
    memory_create(
        user=user, content="Lisbon is the capital of Portugal", memory_type="semantic", importance=0.9
    )
    memory_create(user=user, content="Lisbon restaurant list", memory_type="episodic", importance=0.1)
    response = table(logged_in, "?q=Lisbon&type=episodic&min_importance=0.5")
    assert [hit.memory.content for hit in response.context["hits"]] == ["Lisbon trip planning"]
    response = table(logged_in, "?q=Lisbon&max_importance=0.5")
    assert [hit.memory.content for hit in response.context["hits"]] == ["Lisbon restaurant list"]


def test_keyset_pages_walk_older_and_back_newer(logged_in, user):
    memories = bulk(user, 120)
    first = table(logged_in)
    assert [m.pk for m in first.context["page"].memories] == [m.pk for m in memories[:PAGE_SIZE]]
    older = first.context["page"].older
    assert older == Cursor.of(memories[PAGE_SIZE - 1])
    assert first.context["page"].newer is None
    assert f"before={older}" in first.text

    second = table(logged_in, f"?before={older}")
    assert [m.pk for m in second.context["page"].memories] == [m.pk for m in memories[50:100]]
    assert "← Newer" in second.text and "Older →" in second.text

    third = table(logged_in, f"?before={second.context['page'].older}")
    assert [m.pk for m in third.context["page"].memories] == [m.pk for m in memories[100:]]
    assert third.context["page"].older is None
    assert "Older →" not in third.text

    back = table(logged_in, f"?after={third.context['page'].newer}")
    assert [m.pk for m in back.context["page"].memories] == [m.pk for m in memories[50:100]]
    top = table(logged_in, f"?after={back.context['page'].newer}")
    assert [m.pk for m in top.context["page"].memories] == [m.pk for m in memories[:PAGE_SIZE]]
    assert top.context["page"].newer is None


def test_keyset_pages_cover_rows_with_the_same_timestamp_once(logged_in, user):
    bulk(user, 130, step=timedelta(0))  # every row created in the same microsecond: the id breaks the tie
    seen, query = [], ""
    while True:
        page = table(logged_in, query).context["page"]
        seen += [m.pk for m in page.memories]
        if page.older is None:
            break
        query = f"?before={page.older}"
    assert len(seen) == len(set(seen)) == 130


def test_a_garbled_cursor_shows_the_first_page(logged_in, user):
    bulk(user, 3)
    response = table(logged_in, "?before=yesterday_nope")
    assert response.status_code == 200
    assert len(response.context["page"].memories) == 3


def insert_memories(template: Memory, rows: list[dict]) -> None:
    """Rows straight into the table, each the template with some fields changed. bulk_create compiles its SQL
    per row (35 s for 100,000 here); one executemany of the values each field prepares itself takes ~10 s, most
    of it preparing the template's values again for every row: they are prepared once, the changed ones per row."""
    fields = Memory._meta.concrete_fields
    base = [field.get_db_prep_save(field.pre_save(template, add=True), connection) for field in fields]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {Memory._meta.db_table} ({columns}) VALUES ({placeholders})"  # noqa: S608 (model metadata only)
    changed = [(position, field) for position, field in enumerate(fields) if field.attname in rows[0]]
    assert all(row.keys() == rows[0].keys() for row in rows), "every row changes the same fields"
    params = []
    for row in rows:
        values = base.copy()
        for position, field in changed:
            values[position] = field.get_db_prep_save(row[field.attname], connection)
        params.append(values)
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def test_pagination_stays_cheap_at_100000_memories(logged_in, user, django_assert_max_num_queries):
    """Cheap by the number of queries each page makes (the seconds are bench/console_pages.py's to measure)."""
    session = session_for_key(user=user, key="big")
    now = timezone.now()
    types = ["working", "episodic", "semantic", "perceptual"]
    insert_memories(
        Memory(user=user, content="", memory_type="working"),
        [
            {
                "id": uuid.uuid4(),
                "session_id": session.pk if i % 10 == 0 else None,
                "memory_type": types[i % 4],
                "content": f"memory number {i}",
                "importance": (i % 100) / 100,
                "created_at": now - timedelta(seconds=i),
            }
            for i in range(100_000)
        ],
    )

    # session, user, the API keys (the key filter), session keys, the tags the tag field suggests, the total
    # (one COUNT), the page, the rows' entity links
    with django_assert_max_num_queries(8):
        first = logged_in.get(reverse("memory_list"))
    assert first.status_code == 200
    assert ">memory number 0<" in first.text and ">memory number 49<" in first.text

    deep = Memory.objects.get(content="memory number 90000")
    with django_assert_max_num_queries(9):  # … plus one EXISTS for "← Newer"
        page = logged_in.get(reverse("memory_list") + f"?before={Cursor.of(deep)}")
    assert page.status_code == 200
    assert [m.content for m in page.context["page"].memories] == [
        f"memory number {i}" for i in range(90_001, 90_051)
    ]
    assert "← Newer" in page.text and "Older →" in page.text

    with django_assert_max_num_queries(7):  # the table alone: no session keys or tag names
        typed = table(logged_in, f"?type=semantic&before={Cursor.of(deep)}")
    assert [m.content for m in typed.context["page"].memories][:2] == [
        "memory number 90002",
        "memory number 90006",
    ]

    with django_assert_max_num_queries(7):
        in_session = table(logged_in, "?session=big&min_importance=0.5")
    assert [m.content for m in in_session.context["page"].memories][:2] == [
        "memory number 50",
        "memory number 60",
    ]


# --- inline edit, archive, delete ------------------------------------------------------------------------------


def test_edit_swaps_the_row_for_a_form(logged_in, user):
    memory = memory_create(user=user, content="the meeting is in Berlin", memory_type="episodic")
    response = logged_in.get(reverse("memory_edit", args=[memory.pk]), **row_htmx(memory))
    assert response.status_code == 200
    assert "<html" not in response.text
    html = response.text
    assert html.lstrip().startswith(f'<tr id="memory-{memory.pk}"')
    assert f'hx-post="/memories/{memory.pk}/edit/"' in html
    assert f'id="edit-{memory.pk}-content"' in html
    assert "the meeting is in Berlin</textarea>" in html


def test_inline_edit_saves_through_the_service_and_returns_the_row(logged_in, user):
    memory = memory_create(
        user=user, content="the meeting is in Berlin", memory_type="episodic", importance=0.5
    )
    response = logged_in.post(
        reverse("memory_edit", args=[memory.pk]),
        {"content": "the meeting moved to Lisbon", "importance": "0.8", "memory_type": "semantic"},
        **row_htmx(memory),
    )
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.text.lstrip().startswith(f'<tr id="memory-{memory.pk}" class="memory-row is-saved">')
    assert "the meeting moved to Lisbon" in response.text
    memory.refresh_from_db()
    assert (memory.content, memory.importance, memory.memory_type) == (
        "the meeting moved to Lisbon",
        0.8,
        "semantic",
    )
    assert memory.mirror_state == MirrorState.PENDING
    edit = MemoryEdit.objects.get(memory=memory)
    assert (edit.via, edit.editor) == (EditVia.PAGE, user)
    assert edit.changes == {
        "content": ["the meeting is in Berlin", "the meeting moved to Lisbon"],
        "importance": [0.5, 0.8],
        "memory_type": ["episodic", "semantic"],
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"content": "x", "importance": "2", "memory_type": "episodic"},
            "Ensure this value is less than or equal to 1.",
        ),
        ({"content": "   ", "importance": "0.5", "memory_type": "episodic"}, "This field is required."),
        (
            {"content": "x", "importance": "0.5", "memory_type": "dream"},
            "Select a valid choice. dream is not one of",
        ),
        ({"content": "x", "importance": "lots", "memory_type": "episodic"}, "Enter a number."),
    ],
)
def test_invalid_inline_edit_is_422_with_the_form_and_changes_nothing(logged_in, user, data, message):
    memory = memory_create(user=user, content="unchanged", memory_type="episodic", importance=0.5)
    response = logged_in.post(reverse("memory_edit", args=[memory.pk]), data, **row_htmx(memory))
    assert response.status_code == 422
    assert "<html" not in response.text
    assert response.text.lstrip().startswith(f'<tr id="memory-{memory.pk}" class="memory-row is-editing">')
    assert message in response.text
    assert "The memory was not saved: fix the fields marked below." in response.text
    memory.refresh_from_db()
    assert (memory.content, memory.importance) == ("unchanged", 0.5)
    assert not MemoryEdit.objects.exists()


def test_edit_without_js_is_a_page_and_redirects_to_the_detail(logged_in, user):
    memory = memory_create(user=user, content="old text", memory_type="semantic")
    page = logged_in.get(reverse("memory_edit", args=[memory.pk]))
    assert page.status_code == 200
    assert "<h1>Edit memory</h1>" in page.text
    response = logged_in.post(
        reverse("memory_edit", args=[memory.pk]),
        {"content": "new text", "importance": "0.4", "memory_type": "semantic"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("memory_detail", args=[memory.pk])
    invalid = logged_in.post(
        reverse("memory_edit", args=[memory.pk]),
        {"content": "", "importance": "0.4", "memory_type": "semantic"},
    )
    assert invalid.status_code == 422
    assert "<h1>Edit memory</h1>" in invalid.text


def test_cancel_brings_the_row_back(logged_in, user):
    memory = memory_create(user=user, content="keep me", memory_type="semantic")
    response = logged_in.get(reverse("memory_row", args=[memory.pk]), **row_htmx(memory))
    assert response.status_code == 200
    assert response.text.lstrip().startswith(f'<tr id="memory-{memory.pk}" class="memory-row">')
    assert "keep me" in response.text


def test_edit_history_is_shown_on_the_detail_page(logged_in, user):
    memory = memory_create(user=user, content="first words", memory_type="episodic", importance=0.5)
    logged_in.post(
        reverse("memory_edit", args=[memory.pk]),
        {"content": "second words", "importance": "0.7", "memory_type": "episodic"},
        **row_htmx(memory),
    )
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert '<span class="change-field">Content</span> <span class="old">first words</span>' in html
    assert '<span class="new">second words</span>' in html
    assert '<span class="change-field">Importance</span> <span class="old">0.5</span>' in html
    assert '<span class="new">0.7</span>' in html
    assert "<td>alice</td>" in html
    assert '<span class="tag">page</span>' in html


def test_an_edit_record_reads_as_field_old_new_rows_even_when_it_is_not_a_mapping():
    from memories.history import change_rows

    record = {"tags": [["rust"], ["rust", "go"]], "archived_at": [None, "2026-01-02T03:04:05+00:00"]}
    assert change_rows(record) == [
        ("archived_at", "—", "2026-01-02T03:04:05+00:00"),
        ("tags", '["rust"]', '["rust", "go"]'),
    ]
    # A record written by hand or by an older version: shown as it is, never an error on the page.
    assert change_rows("merged by an operator") == [("?", "—", "merged by an operator")]


def test_delete_from_the_row_removes_it(logged_in, user):
    memory = memory_create(user=user, content="delete me", memory_type="semantic")
    response = logged_in.post(reverse("memory_delete", args=[memory.pk]), **row_htmx(memory))
    assert response.status_code == 200
    assert response.content == b""
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_delete_from_the_detail_page_goes_back_to_the_list(logged_in, user):
    memory = memory_create(user=user, content="delete me", memory_type="semantic")
    response = logged_in.post(reverse("memory_delete", args=[memory.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("memory_list")
    assert not Memory.objects.filter(pk=memory.pk).exists()
    # With htmx (hx-confirm on the detail page) the browser is told to navigate.
    other = memory_create(user=user, content="delete me too", memory_type="semantic")
    response = logged_in.post(reverse("memory_delete", args=[other.pk]), **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("memory_list")


def test_archive_and_restore_from_the_row(logged_in, user):
    memory = memory_create(user=user, content="archive me", memory_type="semantic")
    response = logged_in.post(reverse("memory_archive", args=[memory.pk]), **row_htmx(memory))
    assert response.status_code == 200
    assert "<html" not in response.text
    assert "is-archived" in response.text and ">Restore</button>" in response.text
    memory.refresh_from_db()
    assert memory.archived_at is not None
    assert table(logged_in).context["page"].memories == []
    assert [m.pk for m in table(logged_in, "?archived=on").context["page"].memories] == [memory.pk]

    response = logged_in.post(reverse("memory_restore", args=[memory.pk]), **row_htmx(memory))
    assert response.status_code == 200
    assert ">Archive</button>" in response.text
    memory.refresh_from_db()
    assert memory.archived_at is None
    assert list(MemoryEdit.objects.filter(memory=memory).values_list("via", flat=True)) == ["page", "page"]


def test_archive_without_js_redirects_to_the_detail(logged_in, user):
    memory = memory_create(user=user, content="archive me", memory_type="semantic")
    response = logged_in.post(reverse("memory_archive", args=[memory.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("memory_detail", args=[memory.pk])
    response = logged_in.post(reverse("memory_restore", args=[memory.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("memory_detail", args=[memory.pk])


def test_forget_selected_deletes_only_my_selected_memories(logged_in, user, other_user):
    mine = [memory_create(user=user, content=f"mine {i}", memory_type="semantic") for i in range(3)]
    theirs = memory_create(user=other_user, content="theirs", memory_type="semantic")
    response = logged_in.post(
        reverse("memories_bulk_delete") + "?type=semantic",
        {"ids": [mine[0].pk, mine[1].pk, theirs.pk, "not-a-uuid"]},
        HTTP_HX_TARGET="memory-table",
        **HTMX,
    )
    assert response.status_code == 200
    assert "<html" not in response.text
    assert "Forgot 2 selected memories." in response.text
    assert [m.pk for m in response.context["page"].memories] == [mine[2].pk]
    assert set(Memory.objects.values_list("pk", flat=True)) == {mine[2].pk, theirs.pk}


def test_forget_selected_without_js_redirects_with_the_filters(logged_in, user):
    memory = memory_create(user=user, content="gone", memory_type="semantic")
    response = logged_in.post(reverse("memories_bulk_delete") + "?type=semantic&q=", {"ids": [memory.pk]})
    assert response.status_code == 302
    assert response["Location"] == "/memories/?type=semantic"
    assert "Forgot 1 selected memory." in logged_in.get(response["Location"]).text
    response = logged_in.post(reverse("memories_bulk_delete"), {}, HTTP_HX_TARGET="memory-table", **HTMX)
    assert "Select at least one memory first." in response.text


def test_forget_runs_the_strategy_for_me_only(logged_in, user, other_user):
    memory_create(user=user, content="trivial", memory_type="semantic", importance=0.05)
    memory_create(user=user, content="minor", memory_type="semantic", importance=0.2)
    keep = memory_create(user=user, content="vital", memory_type="semantic", importance=0.9)
    theirs = memory_create(user=other_user, content="their trivia", memory_type="semantic", importance=0.05)
    response = logged_in.post(
        reverse("memories_forget"),
        {"strategy": "importance_based", "threshold": "0.3", "max_age_days": "30", "max_capacity": "100"},
        HTTP_HX_TARGET="memory-table",
        **HTMX,
    )
    assert response.status_code == 200
    assert "Forgot 2 memories (importance based)." in response.text
    assert set(Memory.objects.values_list("pk", flat=True)) == {keep.pk, theirs.pk}


def test_forget_by_age(logged_in, user):
    memory_create(
        user=user, content="ancient", memory_type="semantic", created_at=timezone.now() - timedelta(days=90)
    )
    memory_create(user=user, content="recent", memory_type="semantic")
    response = logged_in.post(
        reverse("memories_forget"),
        {"strategy": "time_based", "threshold": "0.1", "max_age_days": "60", "max_capacity": "100"},
    )
    assert response.status_code == 302
    assert list(Memory.objects.values_list("content", flat=True)) == ["recent"]


def test_invalid_forget_is_422_and_forgets_nothing(logged_in, user):
    memory_create(user=user, content="trivial", memory_type="semantic", importance=0.05)
    response = logged_in.post(
        reverse("memories_forget"),
        {"strategy": "everything", "threshold": "5", "max_age_days": "30", "max_capacity": "100"},
        HTTP_HX_TARGET="memory-table",
        **HTMX,
    )
    assert response.status_code == 422
    assert "Nothing was forgotten." in response.text
    assert "Select a valid choice." in response.text
    assert Memory.objects.count() == 1


# --- detail ---------------------------------------------------------------------------------------------------


def test_detail_shows_everything_about_a_memory(logged_in, user):
    session = session_for_key(user=user, key="trip-planning")
    memory = memory_create(
        user=user,
        content="Met Alice in Lisbon to plan the launch",
        memory_type="episodic",
        importance=0.75,
        session=session,
        metadata={"source": "chat", "nested": {"n": 1}, "quote": '"<b>"'},
        context="planning call",
        outcome="launch date agreed",
        participants=["Alice", "Bob"],
        tags=["launch", "travel"],
        extract_entities=False,  # the link below is made by hand
    )
    entity = Entity.objects.create(user=user, name="Lisbon", key="lisbon", entity_type="PLACE")
    MemoryEntity.objects.create(memory=memory, entity=entity, mention="Lisbon")
    Memory.objects.filter(pk=memory.pk).update(
        mirror_state=MirrorState.FAILED, mirror_error="qdrant: connection refused", access_count=3
    )
    response = logged_in.get(reverse("memory_detail", args=[memory.pk]))
    assert response.status_code == 200
    html = response.text
    assert "Met Alice in Lisbon to plan the launch" in html
    assert '<span class="tag type-episodic">episodic</span>' in html
    assert "0.75" in html
    assert f'<a href="/memories/sessions/{session.pk}/">trip-planning</a>' in html
    assert "&quot;nested&quot;: {\n    &quot;n&quot;: 1\n  }," in html
    assert "&quot;\\&quot;&lt;b&gt;\\&quot;&quot;" in html  # JSON of "<b>" in quotes, escaped for HTML
    assert "planning call" in html and "launch date agreed" in html
    assert '<span class="tag">Alice</span>' in html
    assert (
        '<a class="tag label" href="/memories/?tag=travel" title="Memories tagged travel">travel</a>' in html
    )
    assert "<dt>Tokens</dt><dd>" in html
    assert '<span class="mirror-failed">failed</span>' in html
    assert "qdrant: connection refused" in html
    assert "3 times" in html
    assert (
        '<a href="/graph/?q=Lisbon" title="Show Lisbon in the graph"><strong>Lisbon</strong></a> '
        '<span class="tag">place</span>'
    ) in html
    assert "Never edited." in html
    assert f'action="/memories/{memory.pk}/archive/"' in html
    assert f'hx-post="/memories/{memory.pk}/delete/"' in html


def test_detail_of_a_semantic_memory_lists_its_extracted_entities(logged_in, user):
    memory = memory_create(user=user, content="Alice works at Acme in Berlin", memory_type="semantic")
    names = list(memory.entities.values_list("name", flat=True))
    assert names
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    for name in names:
        assert f"<strong>{name}</strong>" in html


# --- sessions -------------------------------------------------------------------------------------------------


def test_session_list_counts_memories(logged_in, user, other_user):
    busy = session_for_key(user=user, key="busy")
    session_for_key(user=user, key="quiet")
    session_for_key(user=other_user, key="mallory-session")
    for i in range(3):
        memory_create(user=user, content=f"note {i}", memory_type="episodic", session=busy)
    response = logged_in.get(reverse("session_list"))
    assert response.status_code == 200
    html = response.text
    assert f'<a href="/memories/sessions/{busy.pk}/">busy</a>' in html
    assert '<a href="/memories/?session=busy">3</a>' in html
    assert "quiet" in html
    assert "mallory-session" not in html


def test_session_timeline_groups_by_day_in_order(logged_in, user):
    session = session_for_key(user=user, key="trip")
    day = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    memory_create(
        user=user,
        content="booked flights",
        memory_type="episodic",
        session=session,
        created_at=day,
        context="travel desk",
        outcome="flights confirmed",
    )
    memory_create(
        user=user,
        content="Lisbon is sunny",
        memory_type="semantic",
        session=session,
        created_at=day + timedelta(hours=3),
    )
    memory_create(
        user=user,
        content="arrived",
        memory_type="episodic",
        session=session,
        created_at=day + timedelta(days=1),
    )
    memory_create(user=user, content="not in this session", memory_type="episodic", created_at=day)
    response = logged_in.get(reverse("session_detail", args=[session.pk]))
    assert response.status_code == 200
    assert [(d.isoformat(), [m.content for m in ms]) for d, ms in response.context["days"]] == [
        ("2024-05-01", ["booked flights", "Lisbon is sunny"]),
        ("2024-05-02", ["arrived"]),
    ]
    html = response.text
    assert html.index("Wednesday 1 May 2024") < html.index("booked flights") < html.index("Lisbon is sunny")
    assert html.index("Lisbon is sunny") < html.index("Thursday 2 May 2024") < html.index("arrived")
    assert "<dt>Context</dt><dd>travel desk</dd>" in html
    assert "<dt>Outcome</dt><dd>flights confirmed</dd>" in html
    assert '<time class="timeline-time" datetime="2024-05-01T09:30:00+00:00">09:30</time>' in html
    assert "not in this session" not in html


# --- security -------------------------------------------------------------------------------------------------


def _other_users_things(other_user):
    session = session_for_key(user=other_user, key="secret-session")
    memory = memory_create(
        user=other_user, content="mallory's secret", memory_type="episodic", session=session
    )
    return memory, session


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "memory_detail"),
        ("get", "memory_row"),
        ("get", "memory_edit"),
        ("post", "memory_edit"),
        ("post", "memory_archive"),
        ("post", "memory_restore"),
        ("post", "memory_delete"),
    ],
)
def test_another_users_memory_is_404_everywhere(logged_in, other_user, method, name):
    memory, _ = _other_users_things(other_user)
    data = {"content": "hacked", "importance": "1", "memory_type": "semantic"} if method == "post" else None
    for headers in ({}, row_htmx(memory)):
        response = getattr(logged_in, method)(reverse(name, args=[memory.pk]), data, **headers)
        assert response.status_code == 404
    memory.refresh_from_db()
    assert (memory.content, memory.archived_at) == ("mallory's secret", None)
    assert not MemoryEdit.objects.exists()


def test_another_users_session_is_404_and_its_key_filters_nothing(logged_in, user, other_user):
    memory, session = _other_users_things(other_user)
    assert logged_in.get(reverse("session_detail", args=[session.pk])).status_code == 404
    assert logged_in.get(reverse("session_detail", args=[uuid.uuid4()])).status_code == 404
    assert logged_in.get(reverse("memory_detail", args=[uuid.uuid4()])).status_code == 404
    response = table(logged_in, "?session=secret-session")
    assert response.context["page"].memories == []
    assert "mallory's secret" not in response.text


def test_user_content_is_escaped_everywhere(logged_in, user):
    session = session_for_key(user=user, key=f"s{XSS}")
    memory = memory_create(
        user=user,
        content=XSS,
        memory_type="episodic",
        session=session,
        metadata={"x": XSS},
        context=XSS,
        outcome=XSS,
        tags=[XSS],
    )
    memory_update(memory=memory, via=EditVia.PAGE, editor=user, content=f"{XSS} v2")
    pages = [
        logged_in.get(reverse("memory_list")),
        logged_in.get(reverse("memory_detail", args=[memory.pk])),
        logged_in.get(reverse("memory_edit", args=[memory.pk])),
        logged_in.get(reverse("memory_edit", args=[memory.pk]), **row_htmx(memory)),
        logged_in.get(reverse("session_list")),
        logged_in.get(reverse("session_detail", args=[session.pk])),
        table(logged_in, "?session=" + f"s{XSS}"),
    ]
    for response in pages:
        assert response.status_code == 200
        assert "<script>alert(1)" not in response.text
        assert ESCAPED in response.text


@pytest.mark.parametrize("name", ["memory_list", "session_list", "memories_bulk_delete", "memories_forget"])
def test_pages_need_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("name", ["memory_archive", "memory_restore", "memory_delete", "memory_detail"])
def test_memory_pages_need_login(client, user, name):
    memory = memory_create(user=user, content="private", memory_type="semantic")
    response = client.post(reverse(name, args=[memory.pk]))
    assert response.status_code == 302
    assert Memory.objects.get(pk=memory.pk).archived_at is None


@pytest.mark.parametrize("name", ["memory_archive", "memory_restore", "memory_delete"])
def test_actions_are_post_only(logged_in, user, name):
    memory = memory_create(user=user, content="stay", memory_type="semantic")
    assert logged_in.get(reverse(name, args=[memory.pk])).status_code == 405
    assert logged_in.get(reverse("memories_bulk_delete")).status_code == 405
    assert logged_in.get(reverse("memories_forget")).status_code == 405
    assert logged_in.post(reverse("memory_list")).status_code == 405
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_actions_need_the_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    memory = memory_create(user=user, content="stay", memory_type="semantic")
    assert client.post(reverse("memory_delete", args=[memory.pk]), **row_htmx(memory)).status_code == 403
    assert client.post(reverse("memories_bulk_delete"), {"ids": [memory.pk]}).status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()
    # The page hands htmx the token in hx-headers on <body>.
    html = client.get(reverse("memory_list")).text
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_the_session_filter_offers_my_session_keys(logged_in, user, other_user):
    session_for_key(user=user, key="mine-1")
    session_for_key(user=other_user, key="theirs-1")
    html = logged_in.get(reverse("memory_list")).text
    assert '<option value="mine-1"></option>' in html
    assert "theirs-1" not in html
    assert AgentSession.objects.count() == 2


# --- authoring: add, edit every field, restore a version, the file of a perceptual memory ---------------------

# A 1×1 PNG: the page shows it inline because its bytes say PNG, whatever the upload claimed.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2b3a4a70000000049454e44ae426082"
)


def add(client: Client, **fields):
    data = {"memory_type": "semantic", "content": "", "importance": "0.5", **fields}
    return client.post(reverse("memory_add"), data)


def test_the_add_page_offers_every_type_and_field(logged_in, user):
    session_for_key(user=user, key="trip-2026")
    response = logged_in.get(reverse("memory_add"))
    assert response.status_code == 200
    html = response.text
    assert 'enctype="multipart/form-data"' in html
    for memory_type in ("working", "episodic", "semantic", "perceptual"):
        assert f'<option value="{memory_type}"' in html
    for name in (
        "content",
        "importance",
        "session",
        "tags",
        "expires_at",
        "metadata",
        "file",
        "participants",
    ):
        assert f'name="{name}"' in html
    assert '<option value="trip-2026">' in html  # the session key list
    assert 'src="/static/js/memory-form.js"' in html
    assert f'href="{reverse("memory_add")}"' in logged_in.get(reverse("memory_list")).text


@pytest.mark.parametrize("memory_type", ["working", "episodic", "semantic"])
def test_add_a_memory_of_each_text_type_with_every_setting(logged_in, user, memory_type):
    expires = (timezone.localtime() + timedelta(days=3)).replace(second=0, microsecond=0)
    response = add(
        logged_in,
        memory_type=memory_type,
        content=f"the {memory_type} note about Lisbon",
        importance="0.8",
        session="trip-2026",
        tags="travel, work，travel",
        expires_at=expires.strftime("%Y-%m-%dT%H:%M"),
        metadata='{"source": "notes", "page": 3}',
        context="planning the trip",
        outcome="booked",
        participants="Ana, Bo",
    )
    memory = Memory.objects.get(user=user)
    assert response.status_code == 302
    assert response["Location"] == reverse("memory_detail", args=[memory.pk])
    assert (memory.memory_type, memory.content, memory.importance) == (
        memory_type,
        f"the {memory_type} note about Lisbon",
        0.8,
    )
    assert memory.session.key == "trip-2026"
    assert memory.tags == ["travel", "work"]
    assert memory.expires_at == expires
    assert memory.metadata == {"source": "notes", "page": 3}
    assert (memory.context, memory.outcome, memory.participants) == (
        "planning the trip",
        "booked",
        ["Ana", "Bo"],
    )
    assert [source["via"] for source in memory.sources] == ["page"]
    assert "Memory added." in logged_in.get(response["Location"]).text


def test_a_working_memory_without_an_expiry_gets_the_two_hour_ttl(logged_in, user):
    add(logged_in, memory_type="working", content="the kettle is on")
    memory = Memory.objects.get(user=user)
    assert timedelta(minutes=119) < memory.expires_at - memory.created_at <= timedelta(minutes=120)
    add(logged_in, memory_type="semantic", content="tea needs 95 degrees")
    assert Memory.objects.get(content="tea needs 95 degrees").expires_at is None


def test_adding_a_repeat_counts_it_on_the_stored_memory(logged_in, user):
    stored = memory_create(user=user, content="my cat is called Tom", memory_type="semantic")
    response = add(logged_in, content="my cat is called Tom")
    assert response["Location"] == reverse("memory_detail", args=[stored.pk])
    stored.refresh_from_db()
    assert (Memory.objects.count(), stored.seen_count) == (1, 2)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": ""}, "Write what to remember."),
        ({"content": "x", "metadata": "{not json"}, "Metadata is not valid JSON"),
        ({"content": "x", "metadata": "[1, 2]"}, "Metadata must be a JSON object"),
        # Valid JSON syntax, but past Python's 4,300-digit integer limit: a ValueError without a line number.
        ({"content": "x", "metadata": '{"n": ' + "9" * 5000 + "}"}, "Metadata is not valid JSON (Exceeds"),
        ({"content": "x", "importance": "1.5"}, "less than or equal to 1"),
        ({"content": "x", "expires_at": "2001-01-01T10:00"}, "The expiry is in the past"),
        ({"content": "x", "memory_type": "dream"}, "Select a valid choice"),
        ({"content": "x", "session": "s" * 201}, "at most 200 characters"),
    ],
)
def test_bad_input_on_the_add_page_is_422_and_stores_nothing(logged_in, user, fields, message):
    response = add(logged_in, **{"session": "new-session", **fields})
    assert response.status_code == 422
    assert escape(message) in response.text or message in response.text
    assert 'role="alert"' in response.text
    assert not Memory.objects.exists()
    assert not AgentSession.objects.exists()


def test_a_refused_memory_leaves_no_new_session_behind(logged_in, user):
    # The service refuses over-long working memory after the session was looked up: one transaction undoes both.
    response = add(logged_in, memory_type="working", content="word " * 3000, session="brand-new")
    assert response.status_code == 422
    assert "working memory holds at most" in response.text
    assert not Memory.objects.exists() and not AgentSession.objects.exists()


def _upload(client, *, name="cat.png", body=PNG, content_type="image/png", **fields):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(name, body, content_type=content_type)
    data = {"memory_type": "perceptual", "importance": "0.7", "content": "", "file": upload, **fields}
    return client.post(reverse("memory_add"), data)


def test_add_a_perceptual_image_then_see_and_download_it(logged_in, user, other_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    response = _upload(logged_in, content="my cat asleep on the sofa", session="photos")
    memory = Memory.objects.get(user=user)
    assert response.status_code == 302
    assert (memory.memory_type, memory.modality, memory.session.key) == ("perceptual", "image", "photos")
    assert memory.metadata == {"filename": "cat.png", "content_type": "image/png", "size": len(PNG)}
    assert memory.file.read() == PNG

    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    image_url, file_url = reverse("memory_image", args=[memory.pk]), reverse("memory_file", args=[memory.pk])
    assert f'<img class="memory-image" src="{image_url}" alt="my cat asleep on the sofa">' in html
    assert f'href="{file_url}" download>Download cat.png</a>' in html

    download = logged_in.get(file_url)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == PNG
    assert download["Content-Disposition"] == 'attachment; filename="cat.png"'
    shown = logged_in.get(image_url)
    assert (shown.status_code, shown["Content-Type"]) == (200, "image/png")
    assert "sandbox" in shown["Content-Security-Policy"]

    mallory = Client()
    mallory.force_login(other_user)
    assert mallory.get(file_url).status_code == 404
    assert mallory.get(image_url).status_code == 404
    anonymous = Client().get(file_url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))


def test_a_perceptual_file_without_a_description_is_named_by_its_file(logged_in, user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    _upload(logged_in, name="voice.ogg", body=b"OggS" + b"\0" * 40, content_type="audio/ogg")
    memory = Memory.objects.get(user=user)
    assert (memory.content, memory.modality) == ("[audio] voice.ogg", "audio")
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert "memory-image" not in html and "Download voice.ogg" in html


def test_a_file_that_only_claims_to_be_an_image_is_never_shown_inline(logged_in, user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    _upload(logged_in, name="evil.png", body=b"<svg onload=alert(1)></svg>", content_type="image/png")
    memory = Memory.objects.get(user=user)
    assert logged_in.get(reverse("memory_image", args=[memory.pk])).status_code == 404
    assert logged_in.get(reverse("memory_file", args=[memory.pk])).status_code == 200  # still downloadable


def test_a_memory_without_a_file_has_no_file_url(logged_in, user):
    memory = memory_create(user=user, content="plain text", memory_type="semantic")
    assert logged_in.get(reverse("memory_file", args=[memory.pk])).status_code == 404
    assert logged_in.get(reverse("memory_image", args=[memory.pk])).status_code == 404


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"memory_type": "semantic", "content": "x"}, "Only a perceptual memory keeps a file"),
        ({"body": b""}, "The submitted file is empty."),
    ],
)
def test_a_bad_upload_is_422_and_stores_nothing(logged_in, user, settings, tmp_path, fields, message):
    settings.MEDIA_ROOT = tmp_path
    response = _upload(logged_in, **fields)
    assert response.status_code == 422
    assert message in response.text
    assert "Choose the file again" in response.text
    assert not Memory.objects.exists()


def test_an_upload_over_the_limit_is_422(logged_in, user, settings, tmp_path):
    settings.MEDIA_ROOT, settings.MNEMO_MAX_UPLOAD_MB = tmp_path, 1
    response = _upload(logged_in, body=PNG + b"\0" * (1024 * 1024))
    assert response.status_code == 422
    assert "The file is larger than 1 MB." in response.text
    assert not Memory.objects.exists()


def test_the_edit_page_changes_metadata_session_tags_and_expiry(logged_in, user):
    memory = memory_create(
        user=user, content="the meeting is in Berlin", memory_type="episodic", metadata={"a": 1}
    )
    expires = (timezone.localtime() + timedelta(days=7)).replace(second=0, microsecond=0)
    page = logged_in.get(reverse("memory_edit", args=[memory.pk]))
    assert page.status_code == 200
    assert "&quot;a&quot;: 1" in page.text  # the metadata as JSON, ready to edit
    data = {
        "memory_type": "episodic",
        "content": "the meeting is in Berlin",
        "importance": "0.5",
        "session": "work-week",
        "tags": "work",
        "expires_at": expires.strftime("%Y-%m-%dT%H:%M"),
        "metadata": '{"a": 2, "room": "4.01"}',
        "context": "",
        "outcome": "",
        "participants": "",
    }
    response = logged_in.post(reverse("memory_edit", args=[memory.pk]), data)
    assert response.status_code == 302
    memory.refresh_from_db()
    assert (memory.session.key, memory.tags, memory.expires_at) == ("work-week", ["work"], expires)
    assert memory.metadata == {"a": 2, "room": "4.01"}
    edit = MemoryEdit.objects.get(memory=memory)
    assert edit.changes == {
        "session": [None, "work-week"],
        "tags": [[], ["work"]],
        "expires_at": [None, expires.isoformat()],
        "metadata": [{"a": 1}, {"a": 2, "room": "4.01"}],
    }
    # Saving the page again as it is records nothing (the expiry round-trips at minute precision).
    again = logged_in.get(reverse("memory_edit", args=[memory.pk])).context["form"].initial
    logged_in.post(
        reverse("memory_edit", args=[memory.pk]),
        {**data, "expires_at": again["expires_at"].strftime("%Y-%m-%dT%H:%M")},
    )
    assert MemoryEdit.objects.filter(memory=memory).count() == 1
    # An empty session and expiry clear them.
    logged_in.post(reverse("memory_edit", args=[memory.pk]), {**data, "session": "", "expires_at": ""})
    memory.refresh_from_db()
    assert (memory.session, memory.expires_at) == (None, None)


def test_bad_input_on_the_edit_page_is_422_and_changes_nothing(logged_in, user):
    memory = memory_create(user=user, content="keep me", memory_type="semantic", metadata={"a": 1})
    data = {"memory_type": "semantic", "content": "changed", "importance": "0.5", "metadata": "{oops"}
    response = logged_in.post(reverse("memory_edit", args=[memory.pk]), data)
    assert response.status_code == 422
    assert "Metadata is not valid JSON" in response.text
    assert "{oops" in response.text  # what was typed is kept in the form
    memory.refresh_from_db()
    assert (memory.content, memory.metadata) == ("keep me", {"a": 1})
    assert not MemoryEdit.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_restore_an_earlier_version_is_an_edit_and_search_finds_the_restored_text(logged_in, user, api):
    memory = memory_create(user=user, content="my cat is called Tom", memory_type="semantic", importance=0.4)
    first = memory_update(memory=memory, via=EditVia.API, content="my cat is called Felix", importance=0.9)
    memory_update(memory=memory, via=EditVia.API, tags=["pets"])

    def lexical(query: str) -> dict[str, float]:
        """Each hit's lexical score: above 0 only when the mirrored point holds the words."""
        results = api("post", "/memories/search", {"query": query}).json()["results"]
        return {hit["id"]: hit["scores"]["lexical"] for hit in results}

    assert lexical("Tom").get(str(memory.pk), 0) == 0

    edit = MemoryEdit.objects.get(
        pk=MemoryEdit.objects.filter(memory=memory).order_by("created_at").first().pk
    )
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    url = reverse("memory_restore_version", args=[memory.pk, edit.pk])
    assert f'action="{url}"' in html
    response = logged_in.post(url)
    assert response.status_code == 302
    memory.refresh_from_db()
    # The version before the first edit: both edits undone.
    assert (memory.content, memory.importance, memory.tags) == ("my cat is called Tom", 0.4, [])
    restore = MemoryEdit.objects.filter(memory=memory).order_by("-created_at").first()
    assert restore.pk not in (edit.pk, first.pk)
    assert (restore.via, restore.editor) == ("page", user)
    assert restore.changes == {
        "content": ["my cat is called Felix", "my cat is called Tom"],
        "importance": [0.9, 0.4],
        "tags": [["pets"], []],
    }
    assert restore.reason.startswith("restored the version from before the edit of ")
    assert MemoryEdit.objects.filter(memory=memory).count() == 3
    assert lexical("Tom")[str(memory.pk)] > 0
    assert memory.mirror_state == MirrorState.SYNCED
    assert "The earlier version is restored" in logged_in.get(reverse("memory_detail", args=[memory.pk])).text


def test_restoring_the_version_it_already_has_changes_nothing(logged_in, user):
    memory = memory_create(user=user, content="one", memory_type="semantic")
    edit = memory_update(memory=memory, via=EditVia.PAGE, content="two") and MemoryEdit.objects.get()
    memory_update(memory=memory, via=EditVia.PAGE, content="one")
    response = logged_in.post(reverse("memory_restore_version", args=[memory.pk, edit.pk]), follow=True)
    assert "Not restored: the memory already reads like that version" in response.text
    assert MemoryEdit.objects.count() == 2


def test_an_archive_edit_offers_no_restore(logged_in, user):
    memory = memory_create(user=user, content="one", memory_type="semantic")
    memory_archive(memory=memory, via=EditVia.PAGE)
    edit = MemoryEdit.objects.get()
    assert "Restore the version before" not in logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    logged_in.post(reverse("memory_restore_version", args=[memory.pk, edit.pk]))
    assert MemoryEdit.objects.count() == 1


def test_restore_is_404_for_another_users_memory_or_another_memorys_edit(logged_in, user, other_user):
    theirs, _ = _other_users_things(other_user)
    memory_update(memory=theirs, via=EditVia.PAGE, content="changed by mallory")
    their_edit = MemoryEdit.objects.get()
    mine = memory_create(user=user, content="mine", memory_type="semantic")
    assert (
        logged_in.post(reverse("memory_restore_version", args=[theirs.pk, their_edit.pk])).status_code == 404
    )
    assert logged_in.post(reverse("memory_restore_version", args=[mine.pk, their_edit.pk])).status_code == 404
    assert logged_in.get(reverse("memory_restore_version", args=[mine.pk, their_edit.pk])).status_code == 405
    theirs.refresh_from_db()
    assert theirs.content == "changed by mallory"


@pytest.mark.django_db(transaction=True)
def test_detail_shows_provenance_and_each_retrieval_through_the_api(logged_in, user, api):
    created = api("post", "/memories/", {"content": "the office is in Lisbon", "memory_type": "semantic"})
    memory_id = created.json()["id"]
    api("post", "/memories/", {"content": "lunch is at noon", "memory_type": "semantic"})
    results = api("post", "/memories/search", {"query": "office Lisbon"}).json()["results"]
    rank = [hit["id"] for hit in results].index(memory_id) + 1
    score = results[rank - 1]["score"]

    html = logged_in.get(reverse("memory_detail", args=[memory_id])).text
    assert "Where it came from" in html and "API key “agent”" in html
    retrievals = html[html.index('id="retrievals"') :]
    assert "1 in all" in retrievals
    assert "key “agent”" in retrievals
    assert '<td class="query">office Lisbon</td>' in retrievals
    assert f'<td class="number">{rank}</td>' in retrievals
    assert f'<td class="number">{score:.3f}</td>' in retrievals
    assert Memory.objects.get(pk=memory_id).accesses.get().rank == rank


def test_a_search_on_the_memory_page_is_recorded_as_a_retrieval_by_page(logged_in, user, api):
    memory_id = api(
        "post", "/memories/", {"content": "the office is in Lisbon", "memory_type": "semantic"}
    ).json()["id"]
    assert logged_in.get(reverse("memory_list"), {"q": "office Lisbon"}).status_code == 200
    access = Memory.objects.get(pk=memory_id).accesses.get()
    assert (access.via, access.query, access.rank, access.api_key) == ("page", "office Lisbon", 1, None)
    assert (
        logged_in.get(reverse("memory_list")).status_code == 200
    )  # browsing without a query records nothing
    assert Memory.objects.get(pk=memory_id).access_count == 1


def test_provenance_names_the_chat_message_and_document(logged_in, user):
    from knowledge.models import Document

    session = session_for_key(user=user, key="chat-9")
    message = ChatMessage.objects.create(session=session, role="user", content="I live in Porto")
    document = Document.objects.create(user=user, title="handbook.pdf", sha256="0" * 64)
    memory = Memory.objects.create(
        user=user,
        content="lives in Porto",
        sources=[
            {"via": "chat", "at": "2026-01-02T10:00:00+00:00", "message": str(message.pk)},
            {"via": "system", "at": "2026-01-03T10:00:00+00:00", "document": str(document.pk)},
            {"via": "api", "at": "2026-01-04T10:00:00+00:00", "api_key": 99999},
        ],
    )
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    chat_url = reverse("chat_session", args=[session.pk])
    assert f'href="{chat_url}#message-{message.pk}">chat message in “chat-9”</a>' in html
    assert f'href="{reverse("document_detail", args=[document.pk])}">document “handbook.pdf”</a>' in html
    assert 'API key #99999 <span class="muted">(deleted)</span>' in html


def test_retrievals_page_through_every_access(logged_in, user):
    from memories.actions.access import record_access
    from memories.history import RETRIEVALS_PER_PAGE

    memory = memory_create(user=user, content="often found", memory_type="semantic")
    for i in range(RETRIEVALS_PER_PAGE + 3):
        record_access(user=user, memories=[(memory, 0.5)], query=f"query {i:02d}", via=EditVia.CHAT)
    first = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert f"{RETRIEVALS_PER_PAGE + 3} in all" in first and "Page 1 of 2" in first
    second = logged_in.get(reverse("memory_detail", args=[memory.pk]) + "?retrievals=2").text
    assert "query 00" in second and f"query {RETRIEVALS_PER_PAGE + 2:02d}" not in second


def test_retrievals_older_than_the_retention_are_deleted_and_the_rest_kept(
    logged_in, user, settings, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from memories import tasks
    from memories.actions.access import record_access
    from memories.models import MemoryAccess

    memory = memory_create(user=user, content="found for months", memory_type="semantic")
    for age_days in (400, 120, 91, 89, 1):
        record_access(user=user, memories=[(memory, 0.5)], query=f"{age_days} days ago", via=EditVia.API)
        MemoryAccess.objects.filter(query=f"{age_days} days ago").update(
            created_at=timezone.now() - timedelta(days=age_days)
        )
    settings.MNEMO_ACCESS_LOG_DAYS = 0  # keeps every record
    assert tasks.prune_access_log() == 0
    settings.MNEMO_ACCESS_LOG_DAYS = 90
    monkeypatch.setattr(tasks, "ACCESS_PRUNE_BATCH", 2)  # more old records than one batch
    assert tasks.prune_access_log() == 3
    kept = sorted(MemoryAccess.objects.values_list("query", flat=True))
    assert kept == ["1 days ago", "89 days ago"]
    html = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert "2 in all" in html and "89 days ago" in html and "91 days ago" not in html
    memory.refresh_from_db()
    assert memory.access_count == 5  # the counter on the memory is its lifetime's


def test_dashboard_lists_the_most_and_least_retrieved_memories_as_links(logged_in, user, other_user):
    from memories.actions.access import record_access

    popular = memory_create(user=user, content="popular fact", memory_type="semantic")
    once = memory_create(user=user, content="found once", memory_type="semantic")
    never = memory_create(user=user, content="never found", memory_type="semantic")
    archived = memory_create(user=user, content="archived but popular", memory_type="semantic")
    memory_archive(memory=archived, via=EditVia.PAGE)
    theirs = memory_create(user=other_user, content="mallory's favourite", memory_type="semantic")
    for _ in range(3):
        record_access(user=user, memories=[(popular, 0.9), (archived, 0.8)], query="q", via=EditVia.API)
    record_access(user=user, memories=[(once, 0.5)], query="q", via=EditVia.API)
    for _ in range(5):
        record_access(user=other_user, memories=[(theirs, 0.9)], query="q", via=EditVia.API)

    response = logged_in.get(reverse("dashboard"))
    assert [m.content for m in response.context["most_retrieved"]] == ["popular fact", "found once"]
    assert [m.content for m in response.context["least_retrieved"]] == ["never found"]
    html = response.text
    most = html[html.index('data-list="most-retrieved"') : html.index('data-list="least-retrieved"')]
    assert most.index("popular fact") < most.index("found once")
    assert f'<a href="{reverse("memory_detail", args=[popular.pk])}">popular fact</a>' in most
    least = html[html.index('data-list="least-retrieved"') : html.index("Recent memories")]
    assert "3 times" in most
    assert "mallory" not in most + least and "archived but popular" not in most + least
    assert f'<a href="{reverse("memory_detail", args=[never.pk])}">never found</a>' in least


@pytest.mark.parametrize("name", ["memory_file", "memory_image"])
def test_another_users_file_is_404(logged_in, other_user, settings, tmp_path, name):
    from django.core.files.base import ContentFile

    settings.MEDIA_ROOT = tmp_path
    theirs, _ = _other_users_things(other_user)
    theirs.file.save("secret.png", ContentFile(PNG))
    assert logged_in.get(reverse(name, args=[theirs.pk])).status_code == 404


def test_the_add_page_needs_login(client):
    response = client.get(reverse("memory_add"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_api_file_url_also_answers_the_owners_browser_session(
    logged_in, user, other_user, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    _upload(logged_in, content="a red square")
    url = f"/api/v1/memories/{Memory.objects.get(user=user).pk}/file"
    download = logged_in.get(url)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == PNG
    mallory = Client()
    mallory.force_login(other_user)
    assert mallory.get(url).status_code == 404
    assert Client().get(url).status_code == 401
