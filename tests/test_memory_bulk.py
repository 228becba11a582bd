"""The memory browser's bulk actions and undo (memories.bulk, memories.bulk_views) and its totals, page numbers,
page sizes and entity links (memories.listing)."""

import pytest
from django.urls import reverse

from memories.actions.edit import memory_archive
from memories.actions.write import memory_create
from memories.bulk import MAX_BULK
from memories.models import EditVia, Entity, Memory, MemoryEdit, MemoryEntity
from memories.retrieval import search_memories

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "memory-table"}


def bulk_post(client, data: dict, query: str = ""):
    return client.post(reverse("memories_bulk") + query, data, **HTMX)


@pytest.fixture
def mine(user):
    return [
        memory_create(
            user=user, content=f"note {i} about the Berlin office", memory_type="semantic", importance=0.5
        )
        for i in range(3)
    ]


@pytest.fixture
def theirs(other_user):
    return memory_create(user=other_user, content="mallory's note", memory_type="semantic", importance=0.5)


def test_bulk_archive_changes_only_my_selected_memories_and_records_edits(logged_in, user, mine, theirs):
    response = bulk_post(logged_in, {"action": "archive", "ids": [mine[0].pk, mine[1].pk, theirs.pk, "nope"]})
    assert response.status_code == 200
    assert "<html" not in response.text
    assert "Archived 2 memories." in response.text
    assert [m.pk for m in response.context["page"].memories] == [mine[2].pk]
    assert set(Memory.objects.exclude(archived_at=None).values_list("pk", flat=True)) == {
        mine[0].pk,
        mine[1].pk,
    }
    theirs.refresh_from_db()
    assert theirs.archived_at is None
    edit = MemoryEdit.objects.get(memory=mine[0])
    assert (edit.via, edit.editor, list(edit.changes)) == (EditVia.PAGE, user, ["archived_at"])
    assert not MemoryEdit.objects.filter(memory=theirs).exists()
    # Archived memories leave search: the mirror ran for the batch.
    hits = search_memories(user=user, query="Berlin office", limit=10).hits
    assert [hit.memory.pk for hit in hits] == [mine[2].pk]


def test_bulk_restore_type_importance_and_tags(logged_in, user, mine):
    memory_archive(memory=mine[0], via=EditVia.PAGE, archived=True)
    ids = {"ids": [m.pk for m in mine]}
    assert "Restored 1 memory." in bulk_post(logged_in, {"action": "restore", **ids}).text
    response = bulk_post(logged_in, {"action": "set_type", "type_value": "episodic", **ids})
    assert "Changed to episodic: 3 memories." in response.text
    response = bulk_post(logged_in, {"action": "set_importance", "importance_value": "0.9", **ids})
    assert "Set importance 0.90 on 3 memories." in response.text
    bulk_post(logged_in, {"action": "add_tags", "tags_value": "berlin, work", **ids})
    response = bulk_post(logged_in, {"action": "remove_tags", "tags_value": "work", "ids": [mine[0].pk]})
    assert "Removed tags work from 1 memory." in response.text
    rows = {m.pk: m for m in Memory.objects.all()}
    assert [(rows[m.pk].archived_at, rows[m.pk].memory_type, rows[m.pk].importance) for m in mine] == [
        (None, "episodic", 0.9)
    ] * 3
    assert [rows[m.pk].tags for m in mine] == [["berlin"], ["berlin", "work"], ["berlin", "work"]]


def test_bulk_delete_is_gone_from_search_and_undo_brings_it_back(logged_in, user, mine):
    memory_update_edit = MemoryEdit.objects.create(memory=mine[0], via=EditVia.PAGE, changes={"x": [1, 2]})
    response = bulk_post(logged_in, {"action": "delete", "ids": [mine[0].pk, mine[1].pk]})
    assert "Deleted 2 memories." in response.text
    assert "Undo: Deleted 2 memories" in response.text
    assert list(Memory.objects.values_list("pk", flat=True)) == [mine[2].pk]
    assert [h.memory.pk for h in search_memories(user=user, query="Berlin office", limit=10).hits] == [
        mine[2].pk
    ]

    response = logged_in.post(reverse("memories_bulk_undo"), **HTMX)
    assert response.status_code == 200
    assert "Undone: Deleted 2 memories (2 memories put back)." in response.text
    assert "Undo:" not in response.text
    restored = Memory.objects.get(pk=mine[0].pk)
    assert (restored.content, restored.created_at) == (mine[0].content, mine[0].created_at)
    assert (
        MemoryEdit.objects.filter(pk=memory_update_edit.pk).exists() is False
    )  # edits come back as new rows
    assert list(
        MemoryEdit.objects.filter(memory=restored).order_by("created_at").values_list("changes", flat=True)
    ) == [
        {"x": [1, 2]},
        {"deleted": [True, False]},
    ]
    hits = search_memories(user=user, query="Berlin office", limit=10).hits
    assert {h.memory.pk for h in hits} == {m.pk for m in mine}
    # Only the last action: a second undo has nothing to do.
    assert "There is no bulk action to undo." in logged_in.post(reverse("memories_bulk_undo"), **HTMX).text


def test_undo_puts_fields_back_through_the_services(logged_in, user, mine):
    bulk_post(
        logged_in, {"action": "set_importance", "importance_value": "0.1", "ids": [mine[0].pk, mine[1].pk]}
    )
    bulk_post(logged_in, {"action": "archive", "ids": [mine[0].pk]})
    logged_in.post(reverse("memories_bulk_undo"), **HTMX)  # undoes the archive only
    rows = {m.pk: m for m in Memory.objects.all()}
    assert [(rows[m.pk].importance, rows[m.pk].archived_at) for m in mine] == [
        (0.1, None),
        (0.1, None),
        (0.5, None),
    ]
    assert MemoryEdit.objects.filter(memory=mine[0]).count() == 3  # importance, archive, the undo


def test_undo_of_a_type_change(logged_in, mine):
    bulk_post(logged_in, {"action": "set_type", "type_value": "working", "ids": [mine[0].pk]})
    assert Memory.objects.get(pk=mine[0].pk).expires_at is not None
    logged_in.post(reverse("memories_bulk_undo"), **HTMX)
    memory = Memory.objects.get(pk=mine[0].pk)
    assert (memory.memory_type, memory.expires_at) == ("semantic", None)


def test_all_matching_applies_to_exactly_the_filtered_set(logged_in, user, other_user):
    semantic = [memory_create(user=user, content=f"fact {i}", memory_type="semantic") for i in range(4)]
    episodic = memory_create(user=user, content="an episode", memory_type="episodic")
    theirs = memory_create(user=other_user, content="their fact", memory_type="semantic")
    response = bulk_post(
        logged_in,
        {"action": "add_tags", "tags_value": "facts", "scope": "all", "ids": [semantic[0].pk]},
        "?type=semantic",
    )
    assert "Tagged facts on 4 memories." in response.text
    tagged = {m.pk for m in Memory.objects.all() if "facts" in m.tags}
    assert tagged == {m.pk for m in semantic}
    assert Memory.objects.get(pk=episodic.pk).tags == []
    assert Memory.objects.get(pk=theirs.pk).tags == []


def test_bad_input_changes_nothing_and_keeps_the_selection(logged_in, user, mine):
    cases = [
        ({"action": "archive"}, "Select at least one memory first."),
        ({"action": "", "ids": [mine[0].pk]}, "Choose an action for the selected memories."),
        (
            {"action": "set_importance", "importance_value": "2", "ids": [mine[0].pk]},
            "Importance must be between 0 and 1",
        ),
        ({"action": "set_importance", "importance_value": "lots", "ids": [mine[0].pk]}, "must be a number"),
        ({"action": "set_type", "type_value": "dream", "ids": [mine[0].pk]}, "Choose a memory type"),
        ({"action": "add_tags", "tags_value": " , ", "ids": [mine[0].pk]}, "Give one or more tags"),
    ]
    for data, message in cases:
        response = bulk_post(logged_in, data)
        assert response.status_code == 422, data
        assert "Nothing was changed." in response.text and message in response.text
    assert f'value="{mine[0].pk}" form="bulk-form" aria-label="Select memory" checked' in response.text
    assert MemoryEdit.objects.count() == 0
    assert all(m.importance == 0.5 and m.archived_at is None for m in Memory.objects.all())


def test_all_matching_past_the_limit_is_refused(logged_in, user, monkeypatch):
    monkeypatch.setattr("memories.bulk.MAX_BULK", 2)
    monkeypatch.setattr("memories.bulk_views.bulk.MAX_BULK", 2)
    for i in range(3):
        memory_create(user=user, content=f"fact {i}", memory_type="semantic")
    response = bulk_post(logged_in, {"action": "archive", "scope": "all"})
    assert response.status_code == 422
    assert "3 memories selected; one bulk action takes at most 2." in response.text
    assert not Memory.objects.exclude(archived_at=None).exists()
    assert MAX_BULK == 1000


def test_bulk_without_js_redirects_with_a_message(logged_in, mine):
    response = logged_in.post(
        reverse("memories_bulk") + "?type=semantic", {"action": "archive", "ids": [mine[0].pk]}
    )
    assert response.status_code == 302
    assert response["Location"] == "/memories/?type=semantic"
    assert "Archived 1 memory." in logged_in.get(response["Location"]).text


def test_bulk_needs_login_and_post(client, logged_in):
    assert client.post(reverse("memories_bulk"), {"action": "archive"}).status_code == 302
    assert logged_in.get(reverse("memories_bulk")).status_code == 405
    assert logged_in.get(reverse("memories_bulk_undo")).status_code == 405


# --- totals, page numbers, page sizes, entity links ------------------------------------------------------------


def many(user, count: int) -> list[Memory]:
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    return Memory.objects.bulk_create(
        Memory(
            user=user, content=f"memory {i}", memory_type="episodic", created_at=now - timedelta(minutes=i)
        )
        for i in range(count)
    )


def test_the_list_shows_the_total_page_numbers_and_sizes(logged_in, user):
    rows = many(user, 130)
    response = logged_in.get(reverse("memory_list"))
    page = response.context["page"]
    assert (page.total, page.number, page.num_pages, page.links) == (130, 1, 3, [1, 2, 3])
    assert "Page 1 of 3 · 50 shown of 130 memories" in response.text
    assert 'href="/memories/?page=3"' in response.text
    third = logged_in.get(reverse("memory_list") + "?page=3")
    assert [m.pk for m in third.context["page"].memories] == [m.pk for m in rows[100:]]
    assert third.context["page"].older is None
    second = logged_in.get(reverse("memory_list") + "?page=2&size=25")
    assert [m.pk for m in second.context["page"].memories] == [m.pk for m in rows[25:50]]
    last = logged_in.get(reverse("memory_list") + "?page=last&size=25")
    assert last.context["page"].number == 6
    assert [m.pk for m in last.context["page"].memories] == [m.pk for m in rows[125:]]
    # Out of range and garbage pages land on a real page; an unknown size is the default.
    assert logged_in.get(reverse("memory_list") + "?page=99").context["page"].number == 3
    assert logged_in.get(reverse("memory_list") + "?page=x&size=7").context["page"].size == 50


def test_page_links_skip_the_middle():
    from core.pagination import page_links

    assert page_links(10, 2000) == [1, 2, None, 8, 9, 10, 11, 12, None, 1999, 2000]
    assert page_links(None, 5) == [1, 2, None, 4, 5]
    assert page_links(1, 1) == [1]


def test_rows_link_their_entities_into_the_graph(logged_in, user):
    memory = memory_create(user=user, content="Alice works at Acme", memory_type="semantic")
    entity = Entity.objects.create(user=user, name="Zoë & Co", key="zoë & co")
    MemoryEntity.objects.create(memory=memory, entity=entity)
    response = logged_in.get(reverse("memory_list"))
    assert 'href="/graph/?q=Zo%C3%AB%20%26%20Co"' in response.text


def test_the_detail_page_links_entities_into_the_graph(logged_in, user):
    memory = memory_create(user=user, content="Alice works at Acme", memory_type="semantic")
    entity = Entity.objects.create(user=user, name="Acme Corp", key="acme corp")
    MemoryEntity.objects.get_or_create(memory=memory, entity=entity)
    response = logged_in.get(reverse("memory_detail", args=[memory.pk]))
    assert 'href="/graph/?q=Acme%20Corp"' in response.text


def test_dashboard_rows_are_links(logged_in, user):
    memory = memory_create(user=user, content="the dashboard row", memory_type="episodic")
    response = logged_in.get(reverse("dashboard"))
    assert f'<a href="/memories/{memory.pk}/">the dashboard row</a>' in response.text
    assert '<a href="/memories/?type=episodic">episodic</a>' in response.text


def test_a_row_swapped_back_keeps_its_entity_links(logged_in, user):
    memory = memory_create(user=user, content="Alice works at Acme", memory_type="semantic")
    entity = Entity.objects.create(user=user, name="Acme Corp", key="acme corp")
    MemoryEntity.objects.get_or_create(memory=memory, entity=entity)
    row = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"memory-{memory.pk}"}
    archived = logged_in.post(reverse("memory_archive", args=[memory.pk]), **row)
    assert 'href="/graph/?q=Acme%20Corp"' in archived.text
    assert (
        'href="/graph/?q=Acme%20Corp"' in logged_in.get(reverse("memory_row", args=[memory.pk]), **row).text
    )
