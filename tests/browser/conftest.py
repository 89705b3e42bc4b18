"""Fixtures of the real-browser tests: one Chromium and one Streamlit server per module (and per xdist worker),
so that a test split into one item per page does not pay a server's and a browser's start (seconds each) per item.

Playwright's sync API runs one instance per thread: a test in a module that uses ``browser`` must not start its
own ``sync_playwright()`` (it raises "using Playwright Sync API inside the asyncio loop"). pytest tears module
fixtures down before it runs an item of another module, so modules that start their own stay unaffected."""

from __future__ import annotations

import pytest
from browser_support import launch, require_browser, serve_app


@pytest.fixture(scope="module")
def _module_browser():
    sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser(_module_browser):
    """The module's Chromium. Each ``new_page`` is a context of its own (a fresh visitor); whatever a test opened
    is closed after it, passed or failed, so that no tab of one test keeps its session running on the server
    during the next."""
    yield _module_browser
    for context in _module_browser.contexts:
        context.close()


@pytest.fixture(scope="module")
def app_url():
    """The URL of one Streamlit server shared by a module's tests that only open pages and read them. A test whose
    meaning is the server itself (its memory, whether it keeps answering an upload) starts its own with
    ``serve_app()``."""
    require_browser()  # skip before starting a server no test could use
    with serve_app() as url:
        yield url
