"""Steps every browser test shares: watching for CSP blocks, logging in, and keeping the screenshots."""

import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread
from playwright.sync_api import Page, expect

PASSWORD = "correct horse battery"  # the password of the root conftest's users
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


class OneRequestAtATimeServer(ThreadedWSGIServer):
    """The live server's threads share the test's one in-memory SQLite connection, and a page that sends two
    requests at once (a graph node's panel and its neighbours, the dashboard and its data) had two threads inside
    that connection together: the runs that hung or lost a panel. Each request's Django handling takes a lock;
    connections stay threaded, so a browser's idle keep-alive connection blocks no one."""

    handling = threading.Lock()

    def set_app(self, application):
        def one_at_a_time(environ, start_response):
            with self.handling:
                return application(environ, start_response)

        super().set_app(one_at_a_time)


LiveServerThread.server_class = OneRequestAtATimeServer  # pytest-django's live_server builds this thread


@pytest.fixture(autouse=True)
def keep_screenshots(request, tmp_path):
    """Screenshots a test saves in its tmp_path are copied to test-artifacts/screenshots/<test>/, which outlives
    pytest's rotation of temporary folders, for a person or CI to look at."""
    yield
    shots = sorted(tmp_path.rglob("*.png"))
    if shots:
        folder = SCREENSHOTS / re.sub(r"[^\w.-]+", "_", request.node.name)
        folder.mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy2(shot, folder / shot.name)


@pytest.fixture
def csp_violations(page: Page) -> list[str]:
    """Console messages about anything the Content-Security-Policy blocked, for the whole test."""
    violations: list[str] = []
    page.on(
        "console",
        lambda message: "Content Security Policy" in message.text and violations.append(message.text),
    )
    return violations


@pytest.fixture
def log_in(page: Page, live_server) -> Callable[[str], None]:
    """log_in("alice"): through the login form, until the dashboard shows."""

    def submit(username: str) -> None:
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Dashboard")).to_be_visible(timeout=15_000)

    return submit
