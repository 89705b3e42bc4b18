"""Projector mode, run as a teacher would at the front of the room — every page with a chart, at 1920 ×
1080 and at a 1280 × 720 projector: the sidebar gone (no strip, nothing of it in the Tab order) with a visible way
back, the chart's bottom on the first screen with every rank of the page's default configuration named on it, no
card's name cut short (the cards beside the chart all on that screen), and no focusable element outside the screen's
width. One test per page (both sizes), on one server and browser per
xdist worker (conftest.py). Screenshots go to SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os

import pytest
from browser_support import IDLE, assert_clean_console, open_page

from app.frame.lab_settings import LabSettings

pytestmark = [pytest.mark.slow, pytest.mark.browser]

OPENING_RANKS = LabSettings().num_ranks
"""What the Playground and Compare open on (``app.frame.lab_settings``)."""
PAGES = {
    # page (with projector=1): the ranks its default chart names
    "": OPENING_RANKS,
    "compare": OPENING_RANKS,
    "lessons?lesson=2": 4,
    "plan": 8,  # 16 ranks, every second named: rows 15 px apart, labels 20 px (app.charts.figures.rank_axis)
    "your-run": 4,
    "editor": 4,
}
CARDS_BESIDE = ("", "plan")
"""Their cards sit beside the projected chart, as many to a line as fit (``app.frame.cards``): all on the first
screen; one under another, the Playground's seven ran to y = 841 at 1280 × 720."""
PROJECTED = PAGES | {"search": 4, "real-run": 4}
"""Projected, Search and Real run draw a chart before anything is pressed, first on the page (what the search must
beat, the schedule a run will measure); on a laptop or a phone their controls come first."""

WHERE = """() => {
  const charts = [...document.querySelectorAll('.js-plotly-plot')];
  const gd = charts[0], box = gd.getBoundingClientRect();
  const ranks = new Set([...gd.querySelectorAll('g[class^="ytick"] > text, g.ytick > text')]
    .map(t => t.textContent.trim()).filter(t => /^rank \\d+$/.test(t)));
  const chartText = [...gd.querySelectorAll('text')].filter(t => t.textContent.trim() && t.getBBox().width > 0)
    .map(t => parseFloat(getComputedStyle(t).fontSize));
  const sidebar = document.querySelector('[data-testid=stSidebar]');
  const sidebarShown = !!sidebar && sidebar.getBoundingClientRect().width > 0
    && getComputedStyle(sidebar).display !== 'none';
  const focusable = [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
    .filter(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length > 0
                 && getComputedStyle(e).visibility !== 'hidden')
    .map(e => { const r = e.getBoundingClientRect();
                return {text: (e.innerText || e.ariaLabel || e.tagName).slice(0, 40), left: r.left, right: r.right}; });
  // a skip link is 1 px until it takes the focus, then shown: it is on the screen when it matters
  const outside = focusable.filter(f => (f.right <= 0 || f.left >= innerWidth) && f.right - f.left > 1);
  const cards = [...document.querySelectorAll('[data-testid=stMetric]')].map(card => {
    const label = card.querySelector('[data-testid=stMetricLabel] [data-testid=stMarkdownContainer]');
    return {name: card.innerText.split('\\n')[0], bottom: card.getBoundingClientRect().bottom,
            cut: label.scrollWidth > label.clientWidth + 0.5}; });
  return {bottom: box.bottom, top: box.top, height: innerHeight, ranks: ranks.size, sidebarShown, cards,
          rootFont: parseFloat(getComputedStyle(document.documentElement).fontSize),
          smallestChartText: Math.min(...chartText), outside, focusable: focusable.length};
}"""


def _save(page, name: str) -> None:
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=os.path.join(os.environ["SCREENSHOT_DIR"], f"{name}.png"))


def _name(path: str) -> str:
    return path.split("?")[0] or "playground"


PROJECTOR_SIZES = [(1920, 1080), (1280, 720)]


@pytest.mark.parametrize("path", PROJECTED, ids=_name)
def test_projector_mode_fits_every_page_on_one_screen(browser, app_url, path):
    """Opened at 1920 × 1080, then the window resized to 1280 × 720 (the layout is the style sheet's and the chart
    element's: the server draws nothing by the screen's size, so one page load serves both sizes)."""
    ranks = PROJECTED[path]
    joiner = "&" if "?" in path else "?"
    page, _ = open_page(browser, f"{app_url}/{path}{joiner}projector=1", *PROJECTOR_SIZES[0])
    for width, height in PROJECTOR_SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_function(  # the chart has been laid out again at the window's width
            "w => { const p = document.querySelector('.js-plotly-plot');"
            " return p && p.getBoundingClientRect().right <= w; }",
            arg=width,
            timeout=30_000,
        )
        page.wait_for_timeout(500)  # the style sheet's and the chart's last layout pass
        where = page.evaluate(WHERE)
        _save(page, f"projector-{_name(path)}-{width}")
        assert not where["sidebarShown"], (path, width, where)
        assert where["ranks"] == ranks, (path, width, where)
        assert 0 <= where["top"] and where["bottom"] <= height, (path, width, where)
        assert where["smallestChartText"] >= 18 and where["rootFont"] >= 18, (path, width, where)
        assert where["outside"] == [], (path, width, where)
        assert not [card for card in where["cards"] if card["cut"]], (path, width, where["cards"])
        if path in CARDS_BESIDE:
            assert where["cards"] and max(card["bottom"] for card in where["cards"]) <= height, (path, width, where)


def test_presenter_bar_brings_the_settings_back_and_leaves(browser, app_url):
    """The sidebar is out of the Tab order while hidden; a link inside a projected page keeps the mode; "Settings"
    brings the sidebar back; "Leave projector mode" ends the mode (the root font back to 16 px, the link without
    projector=1)."""
    page, _ = open_page(browser, f"{app_url}/?projector=1", 1280, 720)
    bar = "() => document.querySelector('.st-key-presenter_bar').getBoundingClientRect().bottom"
    at_top = page.evaluate(bar)
    moved = page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]'), before = m.scrollTop;"
                          " m.scrollBy(0, 200); return m.scrollTop - before; }")  # fmt: skip
    # it scrolls away with the page: fixed to the screen, it covered the words beside the chart once scrolled
    assert moved > 100 and page.evaluate(bar) == pytest.approx(at_top - moved, abs=1), (at_top, moved)
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    for _ in range(6):  # the first Tabs: each lands on something on the screen, never the hidden sidebar
        page.keyboard.press("Tab")
        box = page.evaluate(
            "() => { const e = document.activeElement, r = e.getBoundingClientRect();"
            " return {inSidebar: !!e.closest('[data-testid=stSidebar]'), left: r.left, right: r.right,"
            " w: r.width, h: r.height}; }"
        )
        assert not box["inSidebar"] and box["w"] > 0 and box["right"] > 0 and box["left"] < 1280, box
    # a link inside a projected page keeps projector mode (the lesson's link to the Playground)
    lesson, _ = open_page(browser, f"{app_url}/lessons?lesson=7&step=2&projector=1", 1280, 720)
    lesson.get_by_text("Open this in the Playground").click()
    lesson.wait_for_function("() => location.pathname === '/' && location.search.includes('dualpipev')")
    assert "projector=1" in lesson.url, lesson.url
    lesson.wait_for_selector(IDLE, timeout=60_000)
    size = lesson.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert size == 21, size
    lesson.close()
    page.get_by_role("button", name="Settings").click()
    page.wait_for_selector("[data-testid=stSidebar] >> text=Ranks (devices), p", timeout=30_000)
    page.get_by_role("button", name="Leave projector mode").click()
    page.wait_for_function("() => !location.search.includes('projector')", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    size = page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert size == 16, size
    assert page.locator("[data-testid=stSidebar]").first.is_visible()


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_a_phone_sees_a_chart_on_the_first_screen_of_every_page_that_has_one(browser, app_url, path):
    """390 × 844: on every page with a chart, the chart comes before the cards and notes (and a lesson's text),
    so its first rank row is on the first screen; the numbers follow the picture. Opened at its own address, the
    page logs no error and asks for no file the server lacks."""
    page, _ = open_page(browser, f"{app_url}/{path}", 390, 844)
    assert_clean_console(page, app_url)  # the page's one load here serves test_browser.py's console check too
    rank_0 = page.evaluate(
        "() => [...document.querySelector('.js-plotly-plot').querySelectorAll('g.ytick > text')]"
        ".find(t => t.textContent.trim() === 'rank 0').getBoundingClientRect().bottom"
    )
    _save(page, f"phone-{_name(path)}")
    assert rank_0 <= 844, (path, rank_0)
    cards = page.locator('[data-testid="stMetric"]').first
    if path != "compare" and cards.count():  # Compare has a table, not cards
        assert cards.bounding_box()["y"] > rank_0, path  # the numbers after the picture
