"""Real headless Chromium on the dashboard: Chart.js draws the four charts under the CSP, Chinese labels
included, and the Resync button mirrors the user's failed rows again."""

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import Page, expect

from console.demo import load_demo_data
from core.models import MirrorState
from memories.models import Entity, Memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

READY = "() => window.mnemoCharts && document.getElementById('dashboard-charts').dataset.state === 'ready'"
WAIT = 15_000


def test_dashboard_charts_render_in_chinese_and_resync_mirrors(
    live_server, page: Page, log_in, csp_violations, django_user_model, tmp_path
):
    if not (django_settings.BASE_DIR / "node_modules" / "chart.js" / "dist" / "chart.umd.min.js").exists():
        pytest.fail("node_modules/chart.js is missing: run `npm ci --omit=dev` (make does)")
    user = django_user_model.objects.create_user(username="dora", password="correct horse battery")
    assert load_demo_data(user)
    failed = Memory.objects.filter(user=user).first()
    Memory.objects.filter(pk=failed.pk).update(mirror_state=MirrorState.FAILED, mirror_error="down")
    top = Entity.objects.filter(user=user).order_by("-frequency", "name").first()
    log_in("dora")
    page.wait_for_function(READY, timeout=WAIT)

    for chart in ("activity", "importance", "entities", "health"):
        box = page.locator(f"#chart-{chart}").bounding_box()
        assert box["width"] > 100 and box["height"] > 100, chart
    labels = page.evaluate("() => window.mnemoCharts.entities.data.labels")
    assert labels[0] == top.name and any("\u4e00" <= ch <= "\u9fff" for label in labels for ch in label)
    assert "Noto Sans CJK SC" in page.evaluate("() => window.Chart.defaults.font.family")
    added = page.evaluate("() => window.mnemoCharts.activity.data.datasets[0].data.at(-1)")
    assert added == Memory.objects.filter(user=user).count()
    expect(page.get_by_text("Mirrors: 0 pending, 1 failed.")).to_be_visible()
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)

    page.get_by_role("button", name="Resync my mirrors").click()
    expect(page.locator("#resync-status")).to_contain_text("Resync queued", timeout=WAIT)
    expect(page.get_by_text("Every row is mirrored.")).to_be_visible(timeout=WAIT)
    assert Memory.objects.get(pk=failed.pk).mirror_state == MirrorState.SYNCED
    assert csp_violations == []


def test_public_health_shows_no_paths(live_server, page: Page):
    page.goto(f"{live_server.url}/api/v1/health")
    text = page.locator("body").inner_text()
    assert '"concern":"database"' in text.replace(" ", "")
    assert str(django_settings.DATA_DIR) not in text and "detail" not in text
