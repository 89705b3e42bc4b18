"""Fixtures of the real-browser tests: one Chromium and one Streamlit server per test run (per xdist worker), so
that a test split into one item per page does not pay a server's and a browser's start (seconds of CPU each) per
item or per module. A page load costs Chromium about 5–9 s of CPU here and the server 0.3–2 s: the browser tier's
time is its page loads, so tests share what they can.

Playwright's sync API runs one instance per thread: a browser test takes the ``browser`` fixture and never starts
its own ``sync_playwright()`` (it raises "using Playwright Sync API inside the asyncio loop")."""

from __future__ import annotations

import pytest
from browser_support import launch, require_browser, serve_app


@pytest.fixture(scope="session")
def _shared_browser():
    sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser(_shared_browser):
    """The run's Chromium. Each ``new_page`` is a context of its own (a fresh visitor); whatever a test opened
    is closed after it, passed or failed, so that no tab of one test keeps its session running on the server
    during the next."""
    yield _shared_browser
    for context in _shared_browser.contexts:
        context.close()


@pytest.fixture(scope="session")
def app_url():
    """The URL of one Streamlit server shared by the tests that only open pages and read them. A test whose
    meaning is the server itself (its memory, whether it keeps answering an upload) starts its own with
    ``serve_app()``."""
    require_browser()  # skip before starting a server no test could use
    with serve_app() as url:
        yield url
