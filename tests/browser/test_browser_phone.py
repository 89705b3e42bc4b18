"""A phone (390 × 844, touch): the sidebar is a drawer over the page, so a page link tapped in it closes it
(``app/frame/phone.py``); the chart's keyboard help (Tab, arrow keys) is not shown to a screen without keys; a help
icon is a finger's target, 24 × 24 px at least."""

import pytest
from browser_support import IDLE

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SIDEBAR = """() => { const s = document.querySelector('[data-testid=stSidebar]');
  const r = s.getBoundingClientRect(); return {left: r.left, right: r.right}; }"""
TARGETS = """() => [...document.querySelectorAll('[data-testid=stTooltipHoverTarget]')]
  .filter(e => e.getClientRects().length).map(e => { const r = e.getBoundingClientRect();
    return Math.min(r.width, r.height); })"""


def _settled(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=90_000)


def test_a_phone_closes_the_drawer_after_a_page_link_and_shows_no_keyboard_help(browser, app_url):
    url = app_url
    phone = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = phone.new_page()
    page.goto(f"{url}/")
    _settled(page)
    page.get_by_text("With a keyboard: Tab reaches").wait_for(state="attached", timeout=60_000)
    assert not page.get_by_text("With a keyboard: Tab reaches").is_visible()  # drawn, and hidden
    page.locator(
        '[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button'
    ).first.click()
    page.wait_for_function("() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().left >= 0")
    page.locator('[data-testid="stSidebar"] a[href]', has_text="Compare").first.tap()
    page.wait_for_url("**/compare**", timeout=60_000)
    _settled(page)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().right <= 0",
        timeout=10_000,
    )
    assert page.evaluate(SIDEBAR)["right"] <= 0
    sizes = page.evaluate(TARGETS)  # the sidebar's help icons, and the cards'
    assert sizes and min(sizes) >= 24, sizes
    phone.close()
    laptop = browser.new_page(viewport={"width": 1440, "height": 900})
    laptop.goto(f"{url}/")
    _settled(laptop)
    laptop.get_by_text("With a keyboard: Tab reaches").wait_for(timeout=60_000)  # a keyboard's help, shown
    laptop.locator('[data-testid="stSidebar"] a[href]', has_text="Compare").first.click()
    laptop.wait_for_url("**/compare**", timeout=60_000)
    _settled(laptop)
    assert laptop.evaluate(SIDEBAR)["left"] >= 0  # beside the page, left open
