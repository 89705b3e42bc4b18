"""Serving the app on localhost and driving Debian's Chromium with Playwright: shared by the real-browser test
and ``benchmarks/app_speed.py`` (FIELD-NOTES: launch options, waiting for the script to finish and for the chart)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
PAGE_CSS_ID = "pplab-page-css"
"""app.charts.style.PAGE_CSS_ID, written again: a benchmark puts tests/ first on ``sys.path``, where the folder
tests/app would stand for the installed app package. A rename on one side alone makes every browser test wait for
``IDLE`` in vain."""
# the script has run, and the page's own style sheet is in: Streamlit may draw that st.html block last
IDLE = f'[data-testid="stApp"][data-test-script-state="notRunning"]:has(style#{PAGE_CSS_ID})'
CHART = ".js-plotly-plot .main-svg"  # a chart drawn by the lab's chart element (charts/live_chart.py)
DRAWN_MARKS = (
    "() => { const p = document.querySelector('.js-plotly-plot'); "
    "return p && p._fullData ? p._fullData.reduce((n, t) => n + (t._length || 0), 0) : -1; }"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_app(timeout_s: float = 60.0, entry: str = "serve.py", options: tuple[str, ...] = ()):
    """Start Streamlit on a free port (``entry``: the file under app/ it runs; ``options``: more of Streamlit's
    command-line options, e.g. ``("--server.maxUploadSize", "64")``); yield its URL; stop it. Its output
    goes to a temporary file, not a pipe nobody reads: a full pipe would block the server, and every child
    process writing to the same stream."""
    port = free_port()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app" / entry),
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            *options,
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.time() > deadline:
                log.seek(0)
                raise RuntimeError(f"Streamlit did not start: {log.read().decode(errors='replace')[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def open_page(browser, url: str, width: int = 1440, height: int = 900):
    """A new page at ``url``, returned once the script has run and the chart is drawn; and how long it took."""
    page = watched_page(browser, width, height)
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=90_000)
    page.wait_for_selector(CHART, timeout=90_000)
    page.wait_for_function(f"() => ({DRAWN_MARKS})() > 0", timeout=90_000)
    return page, time.perf_counter() - started


def watched_page(browser, width: int = 1440, height: int = 900):
    """A new page (not yet opened) whose console errors and failed requests (status 400 or more) are kept in
    ``page.problems``, as "error: …" and "404 URL" lines (``assert_clean_console`` reads them)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(f"{m.type}: {m.text}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"))
    page.problems = problems
    return page


def assert_clean_console(page, app_url: str) -> None:
    """The page knows where its server is and has logged no error nor asked for a file the server lacks: Streamlit's
    front end used to probe /lessons/_stcore/health and /lessons/_stcore/host-config first (two 404s on every deep
    link, streamlit#7074) — app/serve.py tells it where the server is."""
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__streamlit && window.__streamlit.BACKEND_BASE_URL") == f"{app_url}/"
    assert page.problems == [], f"{page.url}: {page.problems}"


def require_browser():
    """Playwright's sync API, once Chromium is here: without it the browser tests skip, or fail where CI set
    REQUIRE_BROWSER (``.ci/run`` installs it)."""
    import pytest

    if not os.path.exists(CHROMIUM):
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail(f"Chromium not found at {CHROMIUM} (install Debian's chromium package)")
        pytest.skip("no Chromium here; .ci/run installs it (apt-get install chromium)")
    return pytest.importorskip("playwright.sync_api")


class HealthWatch:
    """While the ``with`` block runs, a thread asks the server's ``/_stcore/health`` every ``every_s`` and keeps
    how long each answer took (``seconds``; a failed request counts its time too); ``also()`` is called after
    each, for a benchmark's other samples (the server's memory)."""

    def __init__(self, url: str, every_s: float = 0.2, also=None) -> None:
        import threading

        self.url, self.every_s, self.also = url, every_s, also
        self.seconds: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True, name="health-watch")

    def _watch(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=30).read()
            except OSError:
                pass
            self.seconds.append(time.monotonic() - started)
            if self.also is not None:
                self.also()
            self.stop.wait(self.every_s)

    def __enter__(self) -> HealthWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def server_process(url: str):
    """The psutil process of the server this test started at ``url`` (one of this process's children)."""
    import psutil

    port = url.rsplit(":", 1)[1]
    for child in psutil.Process().children(recursive=True):
        command = child.cmdline()
        if "--server.port" in command and command[command.index("--server.port") + 1] == port:
            return child
    raise LookupError(f"no server of this test listens on port {port}")
