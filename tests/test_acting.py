"""Staff opening another user's pages under /users/<id>/ (core.acting): who may, what they see, what is recorded."""

import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from console.models import GoldenQuestion
from conversations.models import AgentSession
from core.acting import PREFIX
from core.models import SubjectChange
from knowledge.models import Document
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import Entity, GraphEdit, Memory, MemoryEdit

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
# Views that always show the signed-in person's own things, never a subject's: under /users/<id>/ a GET to one
# is sent to the viewer's own address and anything else is refused. Every other view must be a subject view.
OWN_ONLY = {
    "chat",
    "chat_new",
    "chat_session",
    "chat_send",
    "chat_stream",
    "chat_end",
    "chat_undo",
    "health",
    "settings",
    "api_keys",
    "api_key_revoke",
    "privacy_settings",
    "secret_scan",
    "data_settings",
    "data_export",
    "data_import",
    "moved_api_keys",
    "moved_api_key_revoke",
    "moved_privacy_settings",
    "moved_secret_scan",
    "moved_data_export",
    "moved_data_import",
    "users",
    "login",
    "logout",
    "favicon",
    "set_language",  # the language switch: a cookie, for whoever is signed in (or not)
    "javascript-catalog",
    "openai_models",
    "openai_chat_completions",
    "mcp",
}


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(
        username="operator", password="staff pass 123", is_staff=True
    )


@pytest.fixture
def as_staff(client: Client, staff) -> Client:
    client.force_login(staff)
    return client


@pytest.fixture
def end_user(django_user_model):
    return django_user_model.objects.create_user(
        username="agent-user-42", first_name="Lena", last_name="Berg"
    )


def under(user, url: str) -> str:
    return f"/users/{user.pk}{url}"


def _sample(route: str) -> str:
    """A concrete path for a route pattern, each converter given a value of its type."""
    values = {"uuid": str(uuid.uuid4()), "int": "1", "str": "approve", "path": "x", "slug": "x"}
    return re.sub(r"<(?:(\w+):)?\w+>", lambda m: values.get(m.group(1) or "str", "x"), route)


def _routes(patterns=None, prefix: str = "") -> list[tuple[str, str, object]]:
    """(path, URL name, view) of every page route; the admin and the JSON API are left to their own tests."""
    found = []
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(pattern.pattern)
        if route.startswith(("admin/", "api/", "^admin")):
            continue
        if isinstance(pattern, URLResolver):
            found += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            found.append(("/" + _sample(route), pattern.name or "", pattern.callback))
    return found


ROUTES = _routes()


def test_every_page_route_is_a_subject_view_or_named_own_only():
    unmarked = {name for _, name, view in ROUTES if not getattr(view, "subject_view", False)}
    assert unmarked == OWN_ONLY
    assert len(ROUTES) > 60  # the walk found the apps' routes, not just a few


@pytest.mark.parametrize("path", [path for path, _, _ in ROUTES], ids=[name for _, name, _ in ROUTES])
def test_a_user_who_is_not_staff_gets_404_under_every_users_route(client, user, other_user, path):
    memory_create(user=other_user, content="mallory keeps this", memory_type="semantic")
    client.force_login(user)
    for target in (under(other_user, path), under(user, path), f"/users/987654{path}"):
        for method in ("get", "post"):
            response = getattr(client, method)(target)
            assert response.status_code == 404, (method, target)
            assert b"mallory" not in response.content
    assert not SubjectChange.objects.exists()


def test_a_signed_out_visitor_is_sent_to_sign_in_whatever_the_id(client, other_user):
    existing = client.get(under(other_user, "/memories/"))
    missing = client.get("/users/987654/memories/")
    assert existing.status_code == missing.status_code == 302
    assert existing["Location"] == f"/login/?next=/users/{other_user.pk}/memories/"
    assert missing["Location"] == "/login/?next=/users/987654/memories/"


def test_staff_get_404_for_a_user_that_does_not_exist(as_staff):
    assert as_staff.get("/users/987654/memories/").status_code == 404


def test_staff_see_the_subjects_memories_with_a_banner_and_links_that_stay_with_them(
    as_staff, staff, end_user
):
    theirs = memory_create(user=end_user, content="Lena works at the harbour office", memory_type="semantic")
    memory_create(user=staff, content="operator own note", memory_type="semantic")
    response = as_staff.get(under(end_user, "/memories/"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Lena works at the harbour office" in html
    assert "operator own note" not in html
    assert "Viewing <strong>Lena Berg</strong>’s data (agent-user-42)." in html
    assert f'href="/users/{end_user.pk}/memories/{theirs.pk}/"' in html  # links keep the subject
    assert 'href="/memories/">Back to your own</a>' in html
    assert 'href="/settings/"' in html  # pages that are only ever one's own link without the prefix
    own = as_staff.get("/memories/").content.decode()
    assert "Viewing <strong>" not in own and "operator own note" in own


SUBJECT_PAGES = [
    ("dashboard", "/", "Lena works at the harbour office"),
    ("memory detail", "/memories/{memory}/", "Lena works at the harbour office"),
    ("memory edit page", "/memories/{memory}/edit/", "Lena works at the harbour office"),
    ("add memory", "/memories/add/", "Add memory"),
    ("sessions", "/memories/sessions/", "harbour-shift"),
    ("session timeline", "/memories/sessions/{session}/", "Lena works at the harbour office"),
    ("review queue", "/memories/review/", "Review"),
    ("graph", "/graph/", "graph"),
    ("knowledge library", "/knowledge/", "Harbour manual"),
    ("document", "/knowledge/{document}/", "Harbour manual"),
    ("evaluation", "/evaluation/", "Where does Lena work?"),
]


@pytest.mark.parametrize(("name", "path", "expected"), SUBJECT_PAGES, ids=[p[0] for p in SUBJECT_PAGES])
def test_staff_open_each_of_the_subjects_pages(as_staff, end_user, name, path, expected):
    session = session_for_key(user=end_user, key="harbour-shift")
    memory = memory_create(
        user=end_user, content="Lena works at the harbour office", memory_type="semantic", session=session
    )
    document = Document.objects.create(user=end_user, title="Harbour manual", original_name="manual.md")
    GoldenQuestion.objects.create(user=end_user, text="Where does Lena work?")
    url = under(end_user, path.format(memory=memory.pk, session=session.pk, document=document.pk))
    response = as_staff.get(url)
    assert response.status_code == 200, url
    html = response.content.decode()
    assert expected in html
    assert "Viewing <strong>Lena Berg</strong>’s data" in html


def test_the_subjects_json_endpoints_answer_with_their_data(as_staff, end_user):
    Entity.objects.create(user=end_user, name="Harbour Office", key="harbour office", entity_type="ORG")
    graph = as_staff.get(under(end_user, "/graph/data/"))
    assert graph.status_code == 200
    assert [node["label"] for node in graph.json()["nodes"]] == ["Harbour Office"]
    memory_create(user=end_user, content="one fact", memory_type="semantic")
    stats = as_staff.get(under(end_user, "/dashboard/data/"))
    assert stats.status_code == 200
    assert sum(stats.json()["importance"]["counts"]) == 1


def test_a_page_that_is_only_ever_ones_own_sends_staff_to_their_own(as_staff, end_user):
    response = as_staff.get(under(end_user, "/settings/api-keys/?x=1"))
    assert response.status_code == 302
    assert response["Location"] == "/settings/api-keys/?x=1"
    assert as_staff.post(under(end_user, "/chat/new/")).status_code == 404
    assert not AgentSession.objects.filter(user=end_user).exists()


def test_staff_edits_of_a_subjects_memory_are_recorded_with_the_staff_member(as_staff, staff, end_user):
    memory = memory_create(user=end_user, content="Lena lives in Bergen", memory_type="semantic")
    response = as_staff.post(
        under(end_user, f"/memories/{memory.pk}/edit/"),
        {"content": "Lena lives in Oslo", "importance": "0.6", "memory_type": "semantic"},
        **HTMX,
        HTTP_HX_TARGET=f"memory-{memory.pk}",
    )
    assert response.status_code == 200
    memory.refresh_from_db()
    assert memory.content == "Lena lives in Oslo"
    edit = MemoryEdit.objects.get(memory=memory)
    assert (edit.editor, edit.via, edit.changes["content"]) == (
        staff,
        "page",
        ["Lena lives in Bergen", "Lena lives in Oslo"],
    )
    change = SubjectChange.objects.get()
    assert (change.staff, change.subject, change.method, change.view, change.status) == (
        staff,
        end_user,
        "POST",
        "memory_edit",
        200,
    )
    assert change.path == f"/memories/{memory.pk}/edit/"


def test_a_memory_staff_add_for_a_subject_is_theirs_and_names_the_staff_member(as_staff, staff, end_user):
    response = as_staff.post(
        under(end_user, "/memories/add/"),
        {"memory_type": "semantic", "content": "Lena prefers night shifts", "importance": "0.5"},
    )
    memory = Memory.objects.get(content="Lena prefers night shifts")
    assert response.status_code == 302
    assert response["Location"] == under(end_user, f"/memories/{memory.pk}/")  # redirects keep the subject
    assert memory.user == end_user
    assert memory.sources[0]["editor"] == staff.pk
    assert SubjectChange.objects.get().view == "memory_add"


def test_a_deleted_memory_leaves_the_record_of_who_deleted_it(as_staff, staff, end_user):
    memory = memory_create(user=end_user, content="an outdated note", memory_type="semantic")
    response = as_staff.post(under(end_user, f"/memories/{memory.pk}/delete/"))
    assert response.status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    change = SubjectChange.objects.get()
    assert (change.staff, change.subject, change.view, change.path) == (
        staff,
        end_user,
        "memory_delete",
        f"/memories/{memory.pk}/delete/",
    )


def test_a_graph_curation_on_a_subjects_graph_names_the_staff_member(as_staff, staff, end_user):
    entity = Entity.objects.create(
        user=end_user, name="Harbor Office", key="harbor office", entity_type="ORG"
    )
    response = as_staff.post(
        under(end_user, f"/graph/entities/{entity.pk}/edit/"),
        {"name": "Harbour Office", "entity_type": "ORG"},
    )
    assert response.status_code in (200, 302)
    entity.refresh_from_db()
    assert entity.name == "Harbour Office"
    edit = GraphEdit.objects.get()
    assert (edit.user, edit.editor, edit.via) == (end_user, staff, "page")


def test_bulk_actions_and_their_undo_stay_with_the_subject(as_staff, staff, end_user):
    mine = memory_create(user=staff, content="my own note", memory_type="semantic")
    theirs = memory_create(user=end_user, content="their note", memory_type="semantic")
    response = as_staff.post(
        under(end_user, "/memories/bulk/"),
        {"action": "add_tags", "tags_value": "reviewed", "ids": [theirs.pk, mine.pk]},
    )
    assert response.status_code == 302
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert (theirs.tags, mine.tags) == (["reviewed"], [])
    assert "Undo: " not in as_staff.get("/memories/").content.decode()  # not offered on one's own list
    assert "Undo: " in as_staff.get(under(end_user, "/memories/")).content.decode()
    assert as_staff.post("/memories/bulk/undo/").status_code == 302
    theirs.refresh_from_db()
    assert theirs.tags == ["reviewed"]  # the undo on one's own list did nothing to theirs
    as_staff.post(under(end_user, "/memories/bulk/undo/"))
    theirs.refresh_from_db()
    assert theirs.tags == []


def test_reads_are_not_recorded_and_own_changes_are_not_either(as_staff, staff, end_user):
    memory = memory_create(user=staff, content="mine", memory_type="semantic")
    as_staff.get(under(end_user, "/memories/"))
    as_staff.post(f"/memories/{memory.pk}/archive/")
    as_staff.post(under(staff, f"/memories/{memory.pk}/restore/"))  # one's own id under the prefix
    assert not SubjectChange.objects.exists()


def test_a_search_by_staff_is_not_counted_as_a_retrieval_of_the_subjects_memory(
    as_staff, end_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # mirrored, so search finds them
        memory = memory_create(user=end_user, content="the meeting moved to Lisbon", memory_type="episodic")
        memory_create(user=end_user, content="bought apples and pears", memory_type="episodic")
    response = as_staff.get(under(end_user, "/memories/?q=Lisbon+meeting"))
    assert [hit.memory for hit in response.context["hits"]][:1] == [memory]
    memory.refresh_from_db()
    assert memory.access_count == 0


def test_the_prefix_is_only_digits_and_a_path(as_staff):
    assert PREFIX.match("/users/12/memories/")["rest"] == "/memories/"
    assert PREFIX.match("/users/") is None
    assert PREFIX.match("/users/abc/memories/") is None
    assert reverse("memory_list") == "/memories/"  # the script prefix is put back after each request
