"""A newcomer uploads the four traces of a real PyTorch interleaved-1F1B run on the Your run page (Debian's
Chromium): the Gantt, the bubble, the idle by cause and the every-family table in one view, the numbers the
command line prints."""

import pytest
from browser_support import CHART, IDLE, launch, require_browser, serve_app

from engine.traces import import_traces
from engine.traces.examples import example_files

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_uploaded_traces_show_their_step_as_the_cli_reads_it():
    sync_api = require_browser()
    files = example_files("scheduleinterleaved1f1b-4ranks")
    expected = import_traces(files).timeline.summary()
    with serve_app() as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{url}/your-run?example=schedulegpipe-2ranks")  # the example first: GPipe on 2 ranks
            page.wait_for_selector(IDLE, timeout=90_000)
            page.wait_for_selector(CHART, timeout=90_000)
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(files)
            page.wait_for_function(
                "() => [...document.querySelectorAll('[data-testid=\"stMarkdownContainer\"]')]"
                ".some(e => e.innerText.includes('rank3.json.gz'))",
                timeout=120_000,
            )
            page.wait_for_selector(IDLE, timeout=120_000)
            step = page.locator('[data-testid="stMetric"]', has_text="Step (measured)").first.inner_text()
            assert step.split("\n")[-1] == f"{expected['makespan']:.3g} ms"
            bubble = page.locator('[data-testid="stMetric"]', has_text="Bubble fraction").first.inner_text()
            assert bubble.split("\n")[-1] == f"{expected['bubble_fraction']:.1%}"
            text = page.locator('[data-testid="stMain"]').inner_text()
            assert "Where the idle time comes from" in text and "ZB-V" in text
            assert page.locator(CHART).count() >= 1
        finally:
            browser.close()
