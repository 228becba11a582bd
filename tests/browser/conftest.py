"""Steps every browser test shares: watching for CSP blocks, logging in, and keeping the screenshots."""

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

PASSWORD = "correct horse battery"  # the password of the root conftest's users
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


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
