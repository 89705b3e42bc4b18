"""A newcomer uploads the four traces of a real PyTorch interleaved-1F1B run on the Your run page (Debian's
Chromium): the Gantt, the bubble, the idle by cause and the every-family table in one view, the numbers the
command line prints."""

import pytest
from browser_support import CHART, IDLE, HealthWatch, launch, require_browser, serve_app

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
            # the files left the server's memory for the session's folder: the uploader is empty, the page
            # offers to forget them, and forgetting them brings the example back
            assert "rank0.json.gz" not in page.locator('[data-testid="stFileUploader"]').inner_text()
            page.get_by_role("button", name="Forget the 4 uploaded file(s)").click()
            page.wait_for_function(
                "() => document.querySelector('[data-testid=\"stMain\"]').innerText.includes('Read: PyTorch')",
                timeout=60_000,
            )
        finally:
            browser.close()


def _hostile_uploads(folder) -> list:
    """Hostile files, each named as a visitor would name it."""
    import gzip
    import json

    cases = {
        "nested_rank0.json.gz": gzip.compress(b'{"traceEvents": [' + b"[" * 40_000 + b"]" * 40_000 + b"]}"),
        "long_rank0.json.gz": gzip.compress(b'{"traceEvents": [{"ph": "X", "name": "PP:' + b"a" * 2**24 + b'"}]}'),
        "null_rank0.json": json.dumps({"traceEvents": [{"ph": "X", "name": "PP:0F0", "ts": 1, "dur": None}]}).encode(),
        "list_rank0.json": json.dumps({"distributedInfo": [1, 2], "traceEvents": [{"ph": "X"}]}).encode(),
    }
    paths = []
    for name, data in cases.items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_hostile_uploads_and_links_are_one_message_naming_the_upload_and_the_server_keeps_answering(tmp_path):
    """Each bad upload is a one-line error naming the file as uploaded (never the server's private
    folder), the twenty-``.*`` link reads in linear time, and the health check answers within 2 s throughout."""
    import time

    sync_api = require_browser()
    with serve_app() as url, sync_api.sync_playwright() as playwright, HealthWatch(url) as health:
        browser = launch(playwright)
        try:
            for path in _hostile_uploads(tmp_path):  # a fresh visitor each: an upload adds to the files already there
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.goto(f"{url}/your-run")
                page.wait_for_selector(IDLE, timeout=90_000)
                page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(path)])
                page.wait_for_function(
                    "() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                    f".includes('These traces cannot be read: {path.name}: ')",
                    timeout=60_000,
                )
                page.wait_for_selector(IDLE, timeout=60_000)
                text = page.locator('[data-testid="stMain"]').inner_text()
                assert "pplab-traces-" not in text and "/tmp/" not in text and "Traceback" not in text, text[:2000]
                page.close()
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            started = time.monotonic()
            page.goto(
                f"{url}/your-run?pattern=" + "(%3FP<stage>.*)(%3FP<kind>.*)(%3FP<microbatch>.*)" + ".*" * 20 + "Z"
            )
            page.wait_for_selector(IDLE, timeout=60_000)
            text = page.locator('[data-testid="stMain"]').inner_text()
            assert "ran no labelled pipeline action" in text and time.monotonic() - started < 30, text[:2000]
        finally:
            browser.close()
    assert health.seconds and max(health.seconds) < 2.0, f"the health check took up to {max(health.seconds):.1f} s"
