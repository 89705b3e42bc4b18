"""One real-browser test: Streamlit served on localhost, Debian's Chromium driven by Playwright."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from engine import Costs, build_schedule, simulate

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _require_browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail(f"Chromium not found at {CHROMIUM} (install Debian's chromium package)")
        pytest.skip("no Chromium here; .ci/run installs it (apt-get install chromium)")
    return pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
         "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.time() > deadline:
                pytest.fail(f"Streamlit did not start: {process.stdout.read().decode()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _figure_state(page):
    return page.evaluate("""() => {
        const plot = document.querySelector('.js-plotly-plot');
        if (!plot || !plot.data) return null;
        return {names: plot._fullData.map(t => t.name), bars: plot._fullData.reduce((n, t) => n + t._length, 0)};
    }""")


def test_playground_in_a_real_browser(server, tmp_path):
    sync_api = _require_browser()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server)
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=60_000)
            page.wait_for_selector('[data-testid="stPlotlyChart"] .barlayer .point path', timeout=60_000)
            expected = simulate(build_schedule("1f1b", 4, 8), Costs(forward=1, backward=2))
            state = _figure_state(page)
            assert state["bars"] == len(expected.frame)
            assert f"{expected.bubble_fraction:.1%}" in page.inner_text('[data-testid="stMetric"] >> nth=1')
            page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)

            # move the micro-batch slider one step right: 8 → 9, and wait for the new figure
            page.locator('[data-testid="stSlider"] input[type="range"]').nth(1).focus()  # react-aria slider
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "() => { const p = document.querySelector('.js-plotly-plot');"
                " return p && p._fullData && p._fullData.reduce((n, t) => n + t._length, 0) === 4 * 9 * 2; }",
                timeout=60_000,
            )
            expected = simulate(build_schedule("1f1b", 4, 9), Costs(forward=1, backward=2))
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
            assert f"{expected.bubble_fraction:.1%}" in page.inner_text('[data-testid="stMetric"] >> nth=1')
            if os.environ.get("SCREENSHOT_DIR"):
                page.screenshot(path=os.path.join(os.environ["SCREENSHOT_DIR"], "playground.png"), full_page=True)
        finally:
            browser.close()
