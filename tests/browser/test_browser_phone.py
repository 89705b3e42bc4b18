"""A phone (390 × 844, touch): the sidebar is a drawer over the page, so a page link tapped in it closes it
(``app/frame/phone.py``); the chart's keyboard help (Tab, arrow keys) is not shown to a screen without keys; a help
icon is a finger's target, 24 × 24 px at least, and a switch's row 44 px tall; the memory lines' names at their
peaks never cover each other on a narrow chart."""

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


NAMES = """() => [...document.querySelectorAll('.js-plotly-plot .annotation')]
  .filter(n => /^r\\d+$/.test(n.textContent.trim())).map(n => {
    const r = n.querySelector('text').getBoundingClientRect();
    return {name: n.textContent.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""
SWITCHES = """() => [...document.querySelectorAll('input[role=switch]')]
  .filter(e => !e.closest('[data-testid=stSidebar]')).map(e => {
  const r = e.closest('label').getBoundingClientRect();
  return {name: e.closest('label').innerText.trim(), width: r.width, height: r.height, on: e.checked}; })"""


def _covering(names: list[dict]) -> list[tuple[str, str]]:
    return [
        (a["name"], b["name"])
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5
        and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    ]


@pytest.mark.parametrize(
    "path, width, height",
    [
        pytest.param("lessons?lesson=3", 390, 844, id="gpipe-phone"),  # all four ranks peak at m, px apart
        pytest.param("?projector=1", 1280, 720, id="projector"),  # six names of 20 px on a 120 px plot
    ],
)
def test_the_memory_lines_names_never_cover_each_other(browser, path, width, height, app_url):
    """Each memory line is named at its peak (``app/charts/memory.py``); where ranks peak close together on a narrow
    chart the chart element moves a name aside along its peak (``live_chart.js``, ``separateNames``). Every rank's
    name is drawn, and no two cover each other."""
    context = browser.new_context(viewport={"width": width, "height": height}, has_touch=width < 700)
    page = context.new_page()
    page.goto(f"{app_url}/{path}")
    _settled(page)
    ranks = 4 if "lesson" in path else 6
    page.wait_for_function(f"() => ({NAMES})().length === {ranks}", timeout=60_000)
    for _ in range(50):  # the element's pass comes a frame after the chart's own, on a busy machine later
        names = page.evaluate(NAMES)
        if not _covering(names):
            break
        page.wait_for_timeout(200)
    assert _covering(names) == [], names
    context.close()


def test_a_switch_is_a_fingers_target_and_its_words_turn_it_on(browser, app_url):
    """On a touch screen a switch's whole row is its target, 44 px tall at least: a tap on its words (not on the
    32 × 16 switch) turns the Playground's lecture mode on."""
    phone = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = phone.new_page()
    page.goto(f"{app_url}/")
    _settled(page)
    words = page.get_by_text("Step through events (lecture mode)")
    words.wait_for(state="attached", timeout=60_000)
    switches = page.evaluate(SWITCHES)
    assert switches and all(s["height"] >= 44 and s["width"] >= 44 for s in switches), switches
    words.scroll_into_view_if_needed()
    words.tap()
    page.get_by_role("button", name="Next event ▶").wait_for(timeout=60_000)
    phone.close()
