"""Real headless Chromium on the privacy settings' scan (issue 32): preview the stored secrets, then mask them."""

import pytest
from playwright.sync_api import Page, expect

from core.models import PrivacySettings
from memories.actions.write import memory_create
from memories.models import Memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKEN = "xoxb-40417-77181-Hq2Lm8Nr4Tv6Wz0Pc3Kd"


def test_preview_then_mask_the_stored_secrets(
    live_server, page: Page, log_in, csp_violations, tmp_path, user
):
    PrivacySettings.objects.create(user=user, secrets="keep")
    memory = memory_create(user=user, content=f"The Dakar bot posts with {TOKEN}", memory_type="semantic")
    PrivacySettings.objects.filter(user=user).update(secrets="mask")

    log_in("alice")
    page.goto(f"{live_server.url}/settings/privacy/")
    scan = page.locator("#secret-scan")
    scan.get_by_role("button", name="Preview").click()
    expect(scan.get_by_text("Preview: 1 secret would be masked.")).to_be_visible()
    expect(scan.get_by_role("cell", name="memories")).to_be_visible()
    memory.refresh_from_db()
    assert TOKEN in memory.content

    page.locator("#secret-scan").get_by_role("button", name="Mask them").click()
    expect(page.locator("#secret-scan").get_by_text("1 secret masked.")).to_be_visible()
    page.screenshot(path=str(tmp_path / "secret-scan.png"), full_page=True)
    assert Memory.objects.get(pk=memory.pk).content == "The Dakar bot posts with [api_key masked]"
    assert csp_violations == []
