"""Hostile links, in a real browser: every URL key of every page given Markdown, HTML, KaTeX, bare URLs and
very long values. The page must render none of it — no link, image, bold or formula the app did not make —
and the browser must request nothing from another host. One test per page and payload set (the second with
long values), on one server and browser per xdist worker (conftest.py): the pages only read their links, as they did
on one shared server."""

from urllib.parse import quote

import pytest
from browser_support import IDLE

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
    """The page's link with every key given a payload (``shift`` turns which key gets which); with ``shift`` 1 the
    first three keys get ``LONG`` instead."""
    values = {key: PAYLOADS[(index + shift) % len(PAYLOADS)] for index, key in enumerate(keys + ("projector",))}
    if shift == 1:
        values |= dict.fromkeys(keys[:3], LONG)
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


def _page_name(path: str) -> str:
    return path or "playground"


def _open(browser, link: str):
    """A fresh visitor's page at ``link``, settled, and every URL it has requested."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(link)
    page.wait_for_selector(IDLE, timeout=90_000)
    return page, requests


@pytest.mark.parametrize("shift", [0, 1], ids=["shift0", "shift1-long"])
@pytest.mark.parametrize("path", PAGES, ids=_page_name)
def test_no_url_value_is_rendered_as_markup_and_nothing_is_fetched_elsewhere(browser, app_url, path, shift):
    """Every key of the page given one of the payloads (``shift`` turns which key gets which, so each key but the
    first three meets two; those meet one and a 22,400-character value): nothing rendered, nothing fetched from
    another host, no long value echoed whole, and a warning about the link."""
    keys = PAGES[path]
    page, requests = _open(browser, app_url + _links(path, keys, shift))
    page.wait_for_timeout(800)  # images and late scripts have time to ask
    page.wait_for_selector(IDLE, timeout=90_000)
    _check(page, requests, app_url, f"/{path} shift {shift}")
    body = page.inner_text("body")
    assert "The link" in body or not keys, f"/{path}: no warning shown"
    assert LONG[:200] not in body, f"/{path}: a long value was echoed whole"
