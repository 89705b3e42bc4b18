"""A newcomer uploads the four traces of a real PyTorch interleaved-1F1B run on the Your run page (Debian's
Chromium): the Gantt, the bubble, the idle by cause and the every-family table in one view, the numbers the
command line prints. The upload of a real run shares the run's server; hostile inputs and a refused upload each meet
a server of their own (what they do to the server is what they test). All share the run's browser (conftest.py), a
fresh visitor per page."""

import contextlib
import gzip
import json
import time

import pytest
from browser_support import CHART, IDLE, HealthWatch, serve_app, server_process

from engine.traces import import_traces
from engine.traces.examples import example_files

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_uploaded_traces_show_their_step_as_the_cli_reads_it(browser, app_url):
    files = example_files("scheduleinterleaved1f1b-4ranks")
    expected = import_traces(files).timeline.summary()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{app_url}/your-run?example=schedulegpipe-2ranks")  # the example first: GPipe on 2 ranks
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


HOSTILE_UPLOADS = {
    "nested_rank0.json.gz": lambda: gzip.compress(b'{"traceEvents": [' + b"[" * 40_000 + b"]" * 40_000 + b"]}"),
    "long_rank0.json.gz": lambda: gzip.compress(b'{"traceEvents": [{"ph": "X", "name": "PP:' + b"a" * 2**24 + b'"}]}'),
    "null_rank0.json": lambda: json.dumps(
        {"traceEvents": [{"ph": "X", "name": "PP:0F0", "ts": 1, "dur": None}]}
    ).encode(),
    "list_rank0.json": lambda: json.dumps({"distributedInfo": [1, 2], "traceEvents": [{"ph": "X"}]}).encode(),
}
"""Hostile files, each named as a visitor would name it, and how to make it (at run time, not at collection)."""


@contextlib.contextmanager
def _watched_server():
    """A fresh server (what one hostile input does to it, not what earlier tests left) whose health check is asked
    every 0.2 s while the ``with`` block runs: it must answer within 2 s throughout."""
    with serve_app() as url, HealthWatch(url) as health:
        yield url
    assert health.seconds and max(health.seconds) < 2.0, f"the health check took up to {max(health.seconds):.1f} s"


def test_hostile_inputs_are_one_message_each_and_the_server_keeps_answering(browser, tmp_path):
    """One watched server meets a stranger's hostile inputs one after another. The twenty-``.*`` pattern link is
    read in linear time (well under 30 s). Each bad upload is a one-line error naming the file as uploaded (never
    the server's private folder); the visitor forgets it, and the page is back on the example, before the next. The
    health check answers within 2 s throughout."""
    with _watched_server() as url:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        started = time.monotonic()
        page.goto(f"{url}/your-run?pattern=" + "(%3FP<stage>.*)(%3FP<kind>.*)(%3FP<microbatch>.*)" + ".*" * 20 + "Z")
        page.wait_for_selector(IDLE, timeout=60_000)
        text = page.locator('[data-testid="stMain"]').inner_text()
        assert "ran no labelled pipeline action" in text and time.monotonic() - started < 30, text[:2000]
        page.close()

        page = browser.new_page(viewport={"width": 1440, "height": 900})  # a fresh visitor for the uploads
        page.goto(f"{url}/your-run")
        page.wait_for_selector(IDLE, timeout=90_000)
        for name, make in HOSTILE_UPLOADS.items():
            path = tmp_path / name
            path.write_bytes(make())
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(path)])
            page.wait_for_function(
                "name => document.querySelector('[data-testid=\"stMain\"]').innerText"
                ".includes(`These traces cannot be read: ${name}: `)",
                arg=name,
                timeout=60_000,
            )
            page.wait_for_selector(IDLE, timeout=60_000)
            text = page.locator('[data-testid="stMain"]').inner_text()
            assert "pplab-traces-" not in text and "/tmp/" not in text and "Traceback" not in text, (name, text[:2000])
            page.get_by_role("button", name="Forget the 1 uploaded file(s)").click()
            page.wait_for_function(
                "() => !document.querySelector('[data-testid=\"stMain\"]').innerText.includes('cannot be read')",
                timeout=60_000,
            )
        page.close()  # the visitor leaves while the health check still watches


def test_a_refused_upload_leaves_the_servers_memory_while_the_tab_stays_open(browser, tmp_path):
    """Three files, each under the server's cap on one file and together over the page's cap on all, are refused
    in one line — and released at once: the server's memory is back within 50 MB of what it was before, with the
    visitor's tab still open (a refusal that kept them held them for as long as the session lived)."""
    files = []
    for index in range(3):  # 3 × 30 MiB against a cap of 64 MiB (one setting: Streamlit's per file, the page's in all)
        path = tmp_path / f"rank{index}.json"
        path.write_bytes(b" " * (30 * 2**20))
        files.append(str(path))
    with serve_app(options=("--server.maxUploadSize", "64")) as url:
        server = server_process(url)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/your-run")
        page.wait_for_selector(IDLE, timeout=90_000)
        page.wait_for_selector(CHART, timeout=90_000)
        baseline = server.memory_info().rss
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(files)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stMain\"]').innerText.includes('90.0 MiB in all')",
            timeout=120_000,
        )
        page.wait_for_selector(IDLE, timeout=60_000)
        text = page.locator('[data-testid="stMain"]').inner_text()
        assert "3 files of 90.0 MiB in all; this page reads up to 64 files and 64 MiB" in text
        deadline = time.monotonic() + 30
        while (grown := server.memory_info().rss - baseline) > 50e6 and time.monotonic() < deadline:
            time.sleep(0.5)  # the tab stays open all along
        assert grown <= 50e6, f"the server kept {grown / 1e6:.0f} MB of the refused 94 MB"
        page.close()
