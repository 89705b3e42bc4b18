"""One real-browser test: Streamlit served on localhost, Debian's Chromium driven by Playwright.

Screenshots of every page are saved under the test's output folder (and ``$SCREENSHOT_DIR`` when set)."""

import os
import time

import pytest
from browser_support import CHROMIUM, DRAWN_MARKS, IDLE, launch, open_page, serve_app

from engine import FAMILIES, Costs, build_schedule, simulate

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _require_browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail(f"Chromium not found at {CHROMIUM} (install Debian's chromium package)")
        pytest.skip("no Chromium here; .ci/run installs it (apt-get install chromium)")
    return pytest.importorskip("playwright.sync_api")


def _save(page, name: str, folder) -> None:
    page.screenshot(path=str(folder / f"{name}.png"))
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=os.path.join(os.environ["SCREENSHOT_DIR"], f"{name}.png"))


def _metric(page, label: str) -> str:
    return page.locator('[data-testid="stMetric"]', has_text=label).first.inner_text()


def test_every_page_in_a_real_browser(tmp_path):
    sync_api = _require_browser()
    with serve_app() as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            # a shared link: GPipe, 4 stages, 6 micro-batches — a third of the time idle
            page, _ = open_page(browser, f"{url}/?schedule=gpipe&ranks=4&microbatches=6")
            assert "33.3%" in _metric(page, "Bubble fraction")
            expected = simulate(build_schedule("gpipe", 4, 6), Costs(forward=1, backward=2))
            assert page.evaluate(DRAWN_MARKS) >= len(expected.frame)
            _save(page, "playground", tmp_path)

            # Play: within 2 s the cursor and the veil move (shapes only, in the browser)
            page.locator(".updatemenu-button", has_text="Play").first.click()
            started = time.monotonic()
            page.wait_for_function(
                "() => (document.querySelector('.js-plotly-plot').layout.shapes || [])"
                ".some(s => s.type === 'line' && s.x0 > 0)",
                timeout=2_000,
            )
            assert time.monotonic() - started < 2.0
            page.wait_for_timeout(1500)
            _save(page, "playground-playing", tmp_path)

            # Back after Playground (ZB-H1, 6 ranks) → Compare returns to ZB-H1, 6 ranks in one step
            page, _ = open_page(browser, f"{url}/?schedule=zb-h1&ranks=6")
            page.locator('[data-testid="stSidebar"] a', has_text="Compare").click()
            page.wait_for_function("() => location.pathname.endsWith('/compare')", timeout=30_000)
            page.wait_for_selector(IDLE, timeout=60_000)
            page.go_back()
            page.wait_for_function("() => !location.pathname.endsWith('/compare')", timeout=30_000)
            page.wait_for_function(
                "() => { const p = document.querySelector('.js-plotly-plot');"
                " return p && p.layout.title && p.layout.title.text.replaceAll('<br>', ' ').includes('ZB-H1') "
                "&& p.layout.title.text.replaceAll('<br>', ' ').includes('6 ranks'); }",
                timeout=60_000,
            )
            assert "schedule=zb-h1" in page.url and "ranks=6" in page.url

            # projector size
            page.set_viewport_size({"width": 1920, "height": 1080})
            page.goto(f"{url}/?schedule=zb-v&ranks=4&microbatches=8&projector=1")
            page.wait_for_selector(IDLE, timeout=60_000)
            page.wait_for_function(f"() => ({DRAWN_MARKS})() > 0", timeout=60_000)
            assert page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)") >= 18
            _save(page, "playground-projector", tmp_path)

            # compare three schedules on one time axis
            page, _ = open_page(browser, f"{url}/compare?schedules=gpipe,1f1b,zb-h1&ranks=4&microbatches=8")
            titles = page.evaluate(
                "() => document.querySelector('.js-plotly-plot').layout.annotations.map(a => a.text)"
            )
            assert titles == [FAMILIES[name].title for name in ("gpipe", "1f1b", "zb-h1")]
            table = page.locator('[data-testid="stTable"]').first
            assert "bubble fraction" in table.inner_text()  # a real HTML table: its text is the page's text
            _save(page, "compare", tmp_path)

            # a lesson's deep link: the GPipe staircase, a third idle, stepped event by event
            page, _ = open_page(browser, f"{url}/lessons?lesson=2")
            assert "33.3%" in _metric(page, "Bubble fraction")
            assert page.evaluate(DRAWN_MARKS) >= 4 * 6  # the 24 forwards of the staircase (and the idle blocks)
            assert "Event 1 of" in page.inner_text("body")
            _save(page, "lesson-2", tmp_path)

            page, _ = open_page(browser, f"{url}/editor")
            assert "Valid:" in page.inner_text('[data-testid="stAlert"] >> nth=0')
            _save(page, "editor", tmp_path)
        finally:
            browser.close()
