"""Hostile links, in a real browser: every URL key of every page given Markdown, HTML, KaTeX, bare URLs and
very long values. The page must render none of it — no link, image, bold or formula the app did not make —
and the browser must request nothing from another host."""

from urllib.parse import quote

import pytest
from browser_support import IDLE, launch, require_browser, serve_app

from app.frame.lab_settings import LAB_KEYS
from app.views.compare.settings import COMPARE_KEYS
from app.views.real_run.settings import RUN_KEYS
from app.views.search.settings import SEARCH_KEYS
from app.views.your_run.settings import YOUR_RUN_KEYS
from engine.scale.request import PLAN_KEYS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PAGES = {
    "": LAB_KEYS,
    "compare": COMPARE_KEYS,
    "lessons": ("lesson", "step"),
    "editor": (),
    "real-run": RUN_KEYS,
    "search": SEARCH_KEYS,
    "plan": PLAN_KEYS,
    "your-run": YOUR_RUN_KEYS,
}
ELSEWHERE = "127.0.0.2"
"""Another host, on the loopback range: nothing there answers, and the test checks nothing is even asked."""
PAYLOADS = (
    "[Log in again](https://evil.example/login)",
    f"![x](http://{ELSEWHERE}:9/track.png)",
    f"**HOSTILEBOLD** __HOSTILEUNDER__ $x^2$ <b>HOSTILETAG</b> <img src=http://{ELSEWHERE}:9/html.png>",
    "https://evil.example/bare www.evil.example someone@evil.example",
)
LONG = "[a](https://evil.example/x)" * 800  # 22,400 characters


def _links(path: str, keys: tuple[str, ...], shift: int) -> str:
    values = {key: PAYLOADS[(index + shift) % len(PAYLOADS)] for index, key in enumerate(keys + ("projector",))}
    return f"/{path}?" + "&".join(f"{key}={quote(value, safe='')}" for key, value in values.items())


def _check(page, requests: list[str], base: str, where: str) -> None:
    found = page.evaluate(
        """() => ({
            links: [...document.querySelectorAll('a[href]')].map(a => a.href)
                    .filter(h => /evil|127\\.0\\.0\\.2/.test(h)),
            images: [...document.querySelectorAll('img')].map(i => i.src).filter(s => /127\\.0\\.0\\.2|track/.test(s)),
            bold: [...document.querySelectorAll('strong, b, em')].map(e => e.textContent)
                    .filter(t => /HOSTILE/.test(t)),
            formulas: document.querySelectorAll('.katex').length,
            errors: document.querySelectorAll('[data-testid="stException"]').length,
        })"""
    )
    assert found == {"links": [], "images": [], "bold": [], "formulas": 0, "errors": 0}, (where, found)
    foreign = [url for url in requests if not url.startswith(base) and not url.startswith(("data:", "blob:"))]
    assert foreign == [], (where, foreign[:5])


def test_no_url_value_is_rendered_as_markup_and_nothing_is_fetched_elsewhere():
    sync_api = require_browser()
    with serve_app() as url, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for path, keys in PAGES.items():
                for shift in range(2):
                    page = browser.new_page(viewport={"width": 1440, "height": 900})
                    requests: list[str] = []
                    page.on("request", lambda request, seen=requests: seen.append(request.url))
                    page.goto(url + _links(path, keys, shift))
                    page.wait_for_selector(IDLE, timeout=90_000)
                    page.wait_for_timeout(800)  # images and late scripts have time to ask
                    page.wait_for_selector(IDLE, timeout=90_000)
                    _check(page, requests, url, f"/{path} shift {shift}")
                    assert "The link" in page.inner_text("body") or not keys, f"/{path}: no warning shown"
                    page.close()
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                requests = []
                page.on("request", lambda request, seen=requests: seen.append(request.url))
                long_values = "&".join(f"{key}={quote(LONG, safe='')}" for key in keys[:3])
                page.goto(f"{url}/{path}?{long_values}")
                page.wait_for_selector(IDLE, timeout=90_000)
                _check(page, requests, url, f"/{path} long values")
                body = page.inner_text("body")
                assert LONG[:200] not in body, f"/{path}: a long value was echoed whole"
                page.close()
        finally:
            browser.close()
