"""The memory pages: browser (filters, search, keyset pages, inline edit, bulk forget), detail, sessions."""

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from agents.models import AgentSession
from core.models import MirrorState
from memories.models import EditVia, Entity, Memory, MemoryEdit, MemoryEntity
from memories.retrieval import SCORE_PARTS
from memories.services import memory_archive, memory_create, memory_update, session_for_key
from memories.views import PAGE_SIZE, Cursor

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


def test_pagination_stays_cheap_at_100000_memories(logged_in, user, django_assert_max_num_queries):
    started = time.monotonic()
    session = session_for_key(user=user, key="big")
    now = timezone.now()
    types = ["working", "episodic", "semantic", "perceptual"]
    Memory.objects.bulk_create(
        (
            Memory(
                user=user,
                session=session if i % 10 == 0 else None,
                memory_type=types[i % 4],
                content=f"memory number {i}",
                importance=(i % 100) / 100,
                created_at=now - timedelta(seconds=i),
            )
            for i in range(100_000)
        ),
        batch_size=5000,
    )
    seeded = time.monotonic()

    # session, user, session keys, the total (one COUNT), the page, the rows' entity links
    with django_assert_max_num_queries(6):
        first = logged_in.get(reverse("memory_list"))
    assert first.status_code == 200
    assert ">memory number 0<" in first.text and ">memory number 49<" in first.text

    deep = Memory.objects.get(content="memory number 90000")
    with django_assert_max_num_queries(7):  # … plus one EXISTS for "← Newer"
        page = logged_in.get(reverse("memory_list") + f"?before={Cursor.of(deep)}")
    assert page.status_code == 200
    assert [m.content for m in page.context["page"].memories] == [
        f"memory number {i}" for i in range(90_001, 90_051)
    ]
    assert "← Newer" in page.text and "Older →" in page.text

    with django_assert_max_num_queries(6):
        typed = table(logged_in, f"?type=semantic&before={Cursor.of(deep)}")
    assert [m.content for m in typed.context["page"].memories][:2] == [
        "memory number 90002",
        "memory number 90006",
    ]

    with django_assert_max_num_queries(6):
        in_session = table(logged_in, "?session=big&min_importance=0.5")
    assert [m.content for m in in_session.context["page"].memories][:2] == [
        "memory number 50",
        "memory number 60",
    ]
    assert time.monotonic() - seeded < 5, "the pages took too long"
    assert time.monotonic() - started < 30


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
    assert '<code>content</code> <span class="old">first words</span>' in html
    assert '<span class="new">second words</span>' in html
    assert '<code>importance</code> <span class="old">0.5</span>' in html
    assert '<span class="new">0.7</span>' in html
    assert "<td>alice</td>" in html
    assert '<span class="tag">page</span>' in html


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
    assert '<span class="tag">Alice</span>' in html and '<span class="tag">travel</span>' in html
    assert "<dt>Tokens</dt><dd>" in html
    assert '<span class="mirror-failed">failed</span>' in html
    assert "qdrant: connection refused" in html
    assert "3 times" in html
    assert '<strong>Lisbon</strong> <span class="tag">place</span>' in html
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
