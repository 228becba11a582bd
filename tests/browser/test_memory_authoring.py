"""Real headless Chromium: add a memory of every type (a perceptual image with its preview and download), edit
its metadata, session and expiry, restore an earlier version, and see an API search's retrieval on the memory
and on the dashboard. Screenshots go to each test's tmp_path."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from core.services import api_key_create
from memories.models import Memory, MemoryEdit
from tests.browser.conftest import PASSWORD
from tests.test_memory_pages import PNG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _add(page: Page, memory_type: str, content: str, **extra: str) -> None:
    page.goto(page.url.split("/memories/")[0] + "/memories/add/")
    page.get_by_label("Type").select_option(memory_type)
    if content:
        page.get_by_label("Content").fill(content)
    for label, value in extra.items():
        page.get_by_label(label, exact=True).fill(value)
    page.get_by_role("button", name="Add memory").click()
    expect(page.get_by_text("Memory added.")).to_be_visible()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_add_every_type_and_see_and_download_the_image(
    live_server, page: Page, browser: Browser, log_in, csp_violations, django_user_model, media, tmp_path
):
    user = django_user_model.objects.create_user(username="alice", password=PASSWORD)
    django_user_model.objects.create_user(username="mallory", password=PASSWORD)
    log_in("alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories").click()
    page.get_by_role("link", name="Add memory").click()
    expect(page.get_by_role("heading", name="Add memory")).to_be_visible()

    # The type decides which fields show: a file for perceptual, the episode's details for episodic.
    page.get_by_label("Type").select_option("semantic")
    expect(page.get_by_label("File")).to_be_hidden()
    expect(page.get_by_label("Outcome")).to_be_hidden()
    page.get_by_label("Type").select_option("episodic")
    expect(page.get_by_label("Outcome")).to_be_visible()
    page.screenshot(path=str(tmp_path / "memory-add-episodic.png"), full_page=True)

    _add(
        page, "semantic", "Alice's office is in Lisbon", Importance="0.8", Session="work", Tags="office, city"
    )
    _add(page, "episodic", "met Bo at the harbour", Outcome="agreed to sail", Participants="Bo")
    _add(page, "working", "the kettle is on")

    page.goto(f"{live_server.url}/memories/add/")
    page.get_by_label("Type").select_option("perceptual")
    page.get_by_label("Content").fill("a tiny red square")
    page.get_by_label("File").set_input_files(
        files=[{"name": "square.png", "mimeType": "image/png", "buffer": PNG}]
    )
    preview = page.locator("[data-file-preview] img")
    expect(preview).to_be_visible()
    expect(preview).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    page.screenshot(path=str(tmp_path / "memory-add-perceptual-preview.png"), full_page=True)
    page.get_by_role("button", name="Add memory").click()
    expect(page.get_by_text("Memory added.")).to_be_visible()

    stored = {m.memory_type: m for m in Memory.objects.filter(user=user)}
    assert set(stored) == {"semantic", "episodic", "working", "perceptual"}
    assert (stored["semantic"].importance, stored["semantic"].session.key, stored["semantic"].tags) == (
        0.8,
        "work",
        ["office", "city"],
    )
    assert (stored["episodic"].outcome, stored["episodic"].participants) == ("agreed to sail", ["Bo"])
    assert stored["working"].expires_at is not None

    image = page.get_by_role("img", name="a tiny red square")
    expect(image).to_be_visible()
    page.wait_for_load_state()  # the image is in the page before its bytes have arrived
    assert image.evaluate("img => img.complete && img.naturalWidth") == 1  # the owner's session loads it
    with page.expect_download() as download:
        page.get_by_role("link", name="Download square.png").click()
    assert download.value.suggested_filename == "square.png"
    with open(download.value.path(), "rb") as saved:
        assert saved.read() == PNG
    page.screenshot(path=str(tmp_path / "memory-perceptual-detail.png"), full_page=True)
    file_url = f"{live_server.url}/memories/{stored['perceptual'].pk}/file/"

    # Another user's browser gets a 404 for the same file.
    other = browser.new_context()
    other_page = other.new_page()
    other_page.goto(f"{live_server.url}/login/")
    other_page.get_by_label("Username").fill("mallory")
    other_page.get_by_label("Password").fill(PASSWORD)
    other_page.get_by_role("button", name="Log in").click()
    expect(other_page.get_by_role("heading", name="Dashboard")).to_be_visible()
    assert other_page.request.get(file_url).status == 404
    other.close()
    assert csp_violations == []


def test_edit_metadata_session_and_expiry_then_restore_a_version(
    live_server, page: Page, log_in, csp_violations, django_user_model, tmp_path
):
    from memories.actions.write import memory_create

    user = django_user_model.objects.create_user(username="alice", password=PASSWORD)
    memory = memory_create(
        user=user, content="the meeting is in Berlin", memory_type="episodic", importance=0.6
    )
    log_in("alice")
    page.goto(f"{live_server.url}/memories/{memory.pk}/")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_role("heading", name="Edit memory")).to_be_visible()
    page.get_by_label("Content").fill("the meeting moved to Lisbon")
    page.get_by_label("Session", exact=True).fill("work-week")
    expires = (timezone.localtime() + timedelta(days=2)).replace(second=0, microsecond=0)
    page.get_by_label("Expires").fill(expires.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Metadata (JSON)").fill('{"room": "4.01"}')
    page.screenshot(path=str(tmp_path / "memory-edit.png"), full_page=True)
    page.get_by_role("button", name="Save").click()

    expect(page.get_by_text("Memory saved.")).to_be_visible()
    expect(page.locator(".memory-content")).to_have_text("the meeting moved to Lisbon")
    expect(page.get_by_role("link", name="work-week").first).to_be_visible()
    expect(page.locator("pre.json")).to_contain_text('"room": "4.01"')
    memory.refresh_from_db()
    assert (memory.session.key, memory.expires_at, memory.metadata) == (
        "work-week",
        expires,
        {"room": "4.01"},
    )

    page.get_by_role("button", name=re.compile("^Restore the version before the edit of")).click()
    expect(page.get_by_text("The earlier version is restored")).to_be_visible()
    expect(page.locator(".memory-content")).to_have_text("the meeting is in Berlin")
    expect(page.locator("table.history tbody tr").first).to_contain_text("restored the version from before")
    page.screenshot(path=str(tmp_path / "memory-restored.png"), full_page=True)
    memory.refresh_from_db()
    assert (memory.content, memory.session, memory.expires_at, memory.metadata) == (
        "the meeting is in Berlin",
        None,
        None,
        {},
    )
    assert MemoryEdit.objects.filter(memory=memory).count() == 2
    assert csp_violations == []


def test_an_api_search_shows_on_the_memory_and_the_dashboard(
    live_server, page: Page, log_in, csp_violations, django_user_model, tmp_path
):
    from memories.actions.write import memory_create

    user = django_user_model.objects.create_user(username="alice", password=PASSWORD)
    memory = memory_create(user=user, content="the office is in Lisbon", memory_type="semantic")
    memory_create(user=user, content="lunch is at noon", memory_type="semantic")
    _, secret = api_key_create(user=user, name="planner-bot", scope="read")
    log_in("alice")
    answer = page.request.post(
        f"{live_server.url}/api/v1/memories/search",
        data={"query": "office Lisbon", "limit": 1},  # the one answer: the other memory stays never retrieved
        headers={"X-API-Key": secret},
    )
    assert answer.status == 200
    top = answer.json()["results"][0]
    assert top["id"] == str(memory.pk)

    page.goto(f"{live_server.url}/")
    most = page.locator("[data-list=most-retrieved]")
    expect(most.get_by_role("link")).to_have_count(1)
    least = page.locator("[data-list=least-retrieved]")
    expect(least.get_by_role("link")).to_have_text(["lunch is at noon"])
    expect(least).to_contain_text("never")
    page.screenshot(path=str(tmp_path / "dashboard-retrieved.png"), full_page=True)
    most.get_by_role("link", name="the office is in Lisbon").click()
    expect(page).to_have_url(f"{live_server.url}/memories/{memory.pk}/")
    row = page.locator("table.retrievals tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("key “planner-bot”")
    expect(row.locator("td.query")).to_have_text("office Lisbon")
    expect(row.locator("td.number").first).to_have_text("1")
    expect(row.locator("td.number").last).to_have_text(f"{top['score']:.3f}")
    page.locator("#retrievals").screenshot(path=str(tmp_path / "memory-retrievals.png"))
    assert csp_violations == []
