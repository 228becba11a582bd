"""The language switch at a phone's width: Chinese pages, the scripts' words from the JavaScript catalogue, and
back to English (issue 35 item 4)."""

import pytest
from playwright.sync_api import Page, expect

from memories.actions.write import memory_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTH = "[document.scrollingElement.scrollWidth, window.innerWidth]"


def test_the_switch_turns_a_phone_page_chinese_and_back(
    page: Page, log_in, user, live_server, csp_violations
):
    memory_create(user=user, content="Alice keeps bees on the roof", memory_type="semantic")
    page.set_viewport_size({"width": 390, "height": 844})
    log_in("alice")
    page.goto(f"{live_server.url}/memories/")

    switch = page.locator("header .language-switch")
    expect(switch).to_be_visible()
    switch.get_by_label("Language").select_option("zh-hans")
    switch.get_by_role("button", name="Switch").click()

    expect(page.get_by_role("heading", name="记忆", exact=True)).to_be_visible()
    assert page.url == f"{live_server.url}/memories/"  # the page the switch was used on
    width, window = page.evaluate(WIDTH)
    assert width <= window
    # static/js/memory-list.js words its selection count from the JavaScript catalogue.
    page.get_by_label("选中记忆").first.check()
    expect(page.locator("[data-selection-count]")).to_have_text("已选中 1 条记忆")

    page.locator("header .language-switch").get_by_label("语言").select_option("en")
    page.locator("header .language-switch").get_by_role("button", name="切换").click()
    expect(page.get_by_role("heading", name="Memories", exact=True)).to_be_visible()
    assert csp_violations == []
