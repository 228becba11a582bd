"""The Settings page (issue 35 item 5): account and password, privacy, export and import, API keys as tabs of one
page whose old addresses redirect; flash messages in one style; no "rejectd"/"entitys"."""

from datetime import timedelta

import pytest
from django.contrib.auth import authenticate
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from core.services import api_key_create
from memories.actions.write import NewMemory, memory_bulk_create
from memories.models import MemoryEntity, Proposal

pytestmark = pytest.mark.django_db

TABS = {
    "/settings/": "Account",
    "/settings/privacy/": "Privacy",
    "/settings/data/": "Export and import",
    "/settings/api-keys/": "API keys",
}


@pytest.mark.parametrize("path", TABS)
def test_each_tab_is_one_page_with_all_four_tabs_and_its_own_marked(logged_in, path):
    response = logged_in.get(path)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Settings</h1>" in html
    for other, label in TABS.items():
        current = ' aria-current="page"' if other == path else ""
        assert f'<a href="{other}"{current}>{label}</a>' in html
    assert '<a href="/settings/" aria-current="page">Settings</a>' in html  # the main navigation's link


def test_the_account_tab_changes_the_password_and_keeps_the_browser_signed_in(logged_in, user):
    response = logged_in.post(
        "/settings/",
        {
            "old_password": "correct horse battery",
            "new_password1": "pale ember lantern 7",
            "new_password2": "pale ember lantern 7",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/settings/"
    assert authenticate(username="alice", password="pale ember lantern 7") == user
    page = logged_in.get("/settings/").content.decode()  # still signed in: the session hash was updated
    assert '<li class="flash success" role="status">Password changed.</li>' in page


def test_a_wrong_old_password_is_refused_with_422_and_nothing_changes(logged_in, user):
    response = logged_in.post(
        "/settings/",
        {
            "old_password": "wrong",
            "new_password1": "pale ember lantern 7",
            "new_password2": "pale ember lantern 7",
        },
    )
    assert response.status_code == 422
    assert "Your old password was entered incorrectly" in response.content.decode()
    assert authenticate(username="alice", password="correct horse battery") == user


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/api-keys/", "/settings/api-keys/"),
        ("/api-keys/?x=1", "/settings/api-keys/?x=1"),
        ("/privacy/", "/settings/privacy/"),
        ("/data/export/", "/settings/data/export/"),
    ],
)
def test_the_old_addresses_redirect_permanently_to_the_tabs(logged_in, old, new):
    response = logged_in.get(old)
    assert response.status_code == 301 and response["Location"] == new


def test_a_form_posted_to_an_old_address_keeps_its_method_and_still_works(logged_in, user):
    moved = logged_in.post("/privacy/", {"secrets": "refuse", "personal": "keep"})
    assert moved.status_code == 308 and moved["Location"] == "/settings/privacy/"
    key, _ = api_key_create(user=user, name="old bookmark", scope="read")
    moved = logged_in.post(f"/api-keys/{key.pk}/revoke/")
    assert moved.status_code == 308 and moved["Location"] == f"/settings/api-keys/{key.pk}/revoke/"
    assert logged_in.post(moved["Location"]).status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_an_invalid_privacy_choice_is_refused_with_422_and_an_error_flash(logged_in):
    response = logged_in.post("/settings/privacy/", {"secrets": "shout", "personal": "mask"})
    assert response.status_code == 422
    assert '<li class="flash error" role="alert">Choose mask, keep or refuse for each kind.</li>' in (
        response.content.decode()
    )


def test_an_import_error_is_an_error_flash_on_the_data_tab(logged_in):
    response = logged_in.post(
        "/settings/data/import/", {"archive": SimpleUploadedFile("bad.zip", b"nope")}, follow=True
    )
    html = response.content.decode()
    assert response.redirect_chain == [("/settings/data/", 302)]
    assert '<li class="flash error" role="alert">bad.zip was not imported:' in html


def _two_proposals(user):
    items = [
        NewMemory("I live in Paris", "semantic", created_at=timezone.now() - timedelta(days=30)),
        NewMemory("I live in Paris.", "semantic", created_at=timezone.now() - timedelta(days=20)),
        NewMemory("I live in Lyon", "semantic", created_at=timezone.now() - timedelta(days=10)),
    ]
    memory_bulk_create(user=user, items=items, curate=False)


def test_review_messages_say_rejected_and_approved_in_words(logged_in, user):
    _two_proposals(user)
    logged_in.post("/memories/review/find/")
    first, second = Proposal.objects.filter(user=user).order_by("id")
    page = logged_in.post(f"/memories/review/{first.pk}/reject/", follow=True).content.decode()
    assert '<li class="flash success" role="status">Proposal rejected.</li>' in page
    page = logged_in.post("/memories/review/bulk/", {"decision": "reject", "ids": [second.pk]}, follow=True)
    assert "1 proposal rejected." in page.content.decode()
    assert "rejectd" not in page.content.decode()


def test_the_admin_calls_memory_entity_links_memory_entities(admin_client):
    assert MemoryEntity._meta.verbose_name_plural == "memory entities"
    html = admin_client.get("/admin/").content.decode()
    assert "Memory entities" in html and "entitys" not in html.lower()
