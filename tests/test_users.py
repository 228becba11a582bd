"""The operator's Users page and staff API: every end-user with what they hold; staff only."""

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.utils import timezone

from console.users import summarize
from conversations.models import AgentSession
from core.services import api_key_create
from knowledge.models import Document
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import Memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(
        username="operator", password="staff pass 123", is_staff=True
    )


@pytest.fixture
def end_user(django_user_model):
    return django_user_model.objects.create_user(
        username="agent-user-42", first_name="Lena", last_name="Berg"
    )


@pytest.fixture
def staff_key(staff) -> str:
    return api_key_create(user=staff, name="ops", scope="read")[1]


def get(client, path: str, key: str, **params):
    return client.get(f"/api/v1{path}", params, HTTP_X_API_KEY=key)


def test_the_summary_counts_what_each_user_holds(end_user, other_user):
    session = session_for_key(user=end_user, key="shift-1")
    memory_create(user=end_user, content="Lena works nights", memory_type="semantic", session=session)
    memory_create(user=end_user, content="咖啡", memory_type="semantic")  # 6 bytes in UTF-8, 2 characters
    Memory.objects.create(
        user=end_user,
        content="a photo",
        memory_type="perceptual",
        file=ContentFile(b"x" * 300, name="p.png"),
        metadata={"size": 300},
    )
    Document.objects.create(user=end_user, title="Manual", size=1000, markdown="# Manual")
    api_key_create(user=end_user, name="agent", scope="write")
    revoked, _ = api_key_create(user=end_user, name="old", scope="read")
    revoked.revoked_at = timezone.now()
    revoked.save()
    memory_create(user=other_user, content="someone else's", memory_type="semantic")
    [summary, other, empty] = summarize([end_user, other_user, User.objects.create(username="nobody")])
    assert (summary.memories, summary.documents, summary.sessions, summary.api_keys) == (3, 1, 1, 1)
    assert summary.storage_bytes == len(b"Lena works nights") + 6 + len(b"a photo") + 300 + 1000 + len(
        b"# Manual"
    )
    assert summary.last_activity == max(
        Memory.objects.filter(user=end_user).latest("created_at").created_at,
        Document.objects.get(user=end_user).created_at,
        session.started_at,
    )
    assert summary.name == "Lena Berg"
    assert (other.memories, other.name) == (1, "mallory")
    assert (empty.memories, empty.storage_bytes, empty.last_activity) == (0, 0, None)


def test_staff_see_every_user_with_links_to_their_pages(client, staff, end_user):
    memory_create(user=end_user, content="Lena works nights", memory_type="semantic")
    session_for_key(user=end_user, key="shift-1")
    client.force_login(staff)
    response = client.get("/users/")
    html = response.content.decode()
    assert response.status_code == 200
    assert f'<a href="/users/{end_user.pk}/">Lena Berg</a>' in html
    assert f'<a href="/users/{end_user.pk}/memories/">1</a>' in html
    assert f'<a href="/users/{end_user.pk}/memories/sessions/">1</a>' in html
    assert (
        f'href="/users/{end_user.pk}/graph/"' in html and f'href="/users/{end_user.pk}/evaluation/"' in html
    )
    assert "2 users." in html


def test_the_users_page_is_searched_and_paged(client, staff, django_user_model):
    django_user_model.objects.bulk_create(
        [django_user_model(username=f"agent-{i:03d}") for i in range(120)]
        + [django_user_model(username="zoe", first_name="Zoë", last_name="Harbour")]
    )
    client.force_login(staff)
    first = client.get("/users/")
    assert [row.user.username for row in first.context["rows"]][:2] == ["agent-000", "agent-001"]
    assert len(first.context["rows"]) == 50
    assert first.context["page"].paginator.count == 122
    third = client.get("/users/?page=3")
    assert [row.user.username for row in third.context["rows"]] == [
        *[f"agent-{i:03d}" for i in range(100, 120)],
        "operator",
        "zoe",
    ]
    found = client.get("/users/?q=harbour", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="user-table")
    assert [row.user.username for row in found.context["rows"]] == ["zoe"]
    assert "<html" not in found.content.decode()
    assert "No user matches “nobody-here”." in client.get("/users/?q=nobody-here").content.decode()


def test_the_users_page_reads_a_fixed_number_of_queries(
    client, staff, django_user_model, django_assert_max_num_queries
):
    for i in range(30):
        user = django_user_model.objects.create(username=f"agent-{i:02d}")
        memory_create(user=user, content=f"fact {i}", memory_type="semantic")
    client.force_login(staff)
    with django_assert_max_num_queries(14):
        assert client.get("/users/").status_code == 200


def test_people_who_are_not_staff_never_see_the_users_page(client, user):
    assert client.get("/users/").status_code == 302  # signed out: sign in first
    client.force_login(user)
    assert client.get("/users/").status_code == 404
    assert ">Users</a>" not in client.get("/").content.decode()


def test_the_nav_shows_users_to_staff(client, staff):
    client.force_login(staff)
    html = client.get("/").content.decode()
    assert 'href="/users/"' in html and ">Users</a>" in html


# --- the staff API -----------------------------------------------------------------------------------------------


def test_a_staff_key_lists_users_and_reads_one(client, staff_key, end_user):
    memory_create(user=end_user, content="Lena works nights", memory_type="semantic")
    listed = get(client, "/admin/users", staff_key, q="agent")
    assert listed.status_code == 200
    body = listed.json()
    assert body["count"] == 1
    [row] = body["items"]
    assert (row["id"], row["username"], row["name"], row["memories"]) == (
        end_user.pk,
        "agent-user-42",
        "Lena Berg",
        1,
    )
    one = get(client, f"/admin/users/{end_user.pk}", staff_key)
    assert one.status_code == 200 and one.json()["memories"] == 1
    assert get(client, "/admin/users/987654", staff_key).status_code == 404
    paged = get(client, "/admin/users", staff_key, limit=1, offset=1).json()
    assert (paged["count"], [item["username"] for item in paged["items"]]) == (2, ["operator"])


def test_a_staff_key_reads_a_users_memories_sessions_and_profile(client, staff, staff_key, end_user):
    session = session_for_key(user=end_user, key="shift-1")
    theirs = memory_create(
        user=end_user, content="Lena works nights", memory_type="semantic", session=session
    )
    memory_create(user=staff, content="operator note", memory_type="semantic")
    listed = get(client, "/memories/", staff_key, user=end_user.pk).json()
    assert [item["content"] for item in listed["items"]] == ["Lena works nights"]
    assert get(client, f"/memories/{theirs.pk}", staff_key, user=end_user.pk).json()["id"] == str(theirs.pk)
    assert get(client, f"/memories/{theirs.pk}", staff_key).status_code == 404  # without user=: the key's own
    sessions = get(client, "/sessions/", staff_key, user=end_user.pk).json()
    assert [item["key"] for item in sessions["items"]] == ["shift-1"]
    assert get(client, "/profile", staff_key, user=end_user.pk).status_code == 200
    own = get(client, "/memories/", staff_key).json()
    assert [item["content"] for item in own["items"]] == ["operator note"]


def test_a_staff_search_of_a_users_memories_is_not_logged_as_their_use(
    client, staff_key, end_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        memory = memory_create(user=end_user, content="the meeting moved to Lisbon", memory_type="episodic")
        memory_create(user=end_user, content="bought apples and pears", memory_type="episodic")
    response = client.post(
        "/api/v1/memories/search",
        json.dumps({"query": "Lisbon meeting", "user": end_user.pk}),
        content_type="application/json",
        HTTP_X_API_KEY=staff_key,
    )
    assert response.status_code == 200
    assert response.json()["results"][0]["id"] == str(memory.pk)
    memory.refresh_from_db()
    assert memory.access_count == 0


ROUTES = [
    ("get", "/memories/"),
    ("get", "/memories/{memory}"),
    ("get", "/sessions/"),
    ("get", "/sessions/{session}"),
    ("get", "/profile"),
    ("post", "/memories/search"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_any_other_key_gets_404_for_user_whether_or_not_it_exists(
    client, write_key, other_user, method, path
):
    memory = memory_create(user=other_user, content="mallory keeps this", memory_type="semantic")
    session = session_for_key(user=other_user, key="m-1")
    url = "/api/v1" + path.format(memory=memory.pk, session=session.pk)
    answers = []
    for user_id in (other_user.pk, 987654):
        if method == "get":
            response = client.get(url, {"user": user_id}, HTTP_X_API_KEY=write_key)
        else:
            body = json.dumps({"query": "mallory", "user": user_id})
            response = client.post(url, body, content_type="application/json", HTTP_X_API_KEY=write_key)
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1] == (404, {"detail": "No user with this id is visible to this key."})


def test_the_admin_routes_refuse_keys_whose_owner_is_not_staff(client, write_key, other_user):
    for path in ("/admin/users", f"/admin/users/{other_user.pk}"):
        response = get(client, path, write_key)
        assert response.status_code == 403
        assert response.json() == {"detail": "This endpoint needs an API key whose owner is staff."}
    assert AgentSession.objects.count() == 0
