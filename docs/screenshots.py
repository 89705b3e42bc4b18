"""Take the README's screenshots: every page at 390 × 844 (a phone), 1440 × 900 and 1920 × 1080 (projector
mode), in Debian's Chromium, into this folder.

Run: .venv/bin/python docs/screenshots.py [--pages playground,lessons,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the browser helpers the tests use

from browser_support import CHART, IDLE, launch, serve_app  # noqa: E402

SIZES = {"390": (390, 844, ""), "1440": (1440, 900, ""), "1920": (1920, 1080, "&projector=1")}
PAGES = {
    "playground": "/?schedule=zb-h1&ranks=4&microbatches=8&costs=F=1,I=1,W=1&comm=0.25",
    "lessons": "/lessons?lesson=6&step=2",
    "compare": "/compare?schedules=1f1b,zb-h1,zb-h2&ranks=4&microbatches=8&costs=F=1,I=1,W=1",
    "search": "/search?ranks=4&microbatches=8&costs=F=1,I=1,W=1&memory=3",
    "plan": "/plan?preset=llama3-405b-as-trained",
    "your-run": "/your-run?example=scheduleinterleaved1f1b-4ranks&expect=interleaved-1f1b",
    "real-run": "/real-run?schedule=zb-h1&ranks=4&microbatches=8&model=mlp&layers=8&hidden=256&repeats=3",
}
PRESS = {"real-run": "Run", "lessons": "Show me"}
"""Pages whose picture needs a button pressed first (a link to Search shows its result at once)."""


def settle(page) -> None:
    page.wait_for_selector(IDLE, timeout=180_000)
    page.wait_for_timeout(1500)
    page.wait_for_selector(IDLE, timeout=180_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default=",".join(PAGES))
    names = parser.parse_args().pages.split(",")
    from playwright.sync_api import sync_playwright

    with serve_app() as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for name in names:
                for label, (width, height, extra) in SIZES.items():
                    page = browser.new_page(viewport={"width": width, "height": height})
                    started = time.perf_counter()
                    page.goto(url + PAGES[name] + extra)
                    settle(page)
                    if name in PRESS:
                        page.get_by_role("button", name=PRESS[name], exact=True).first.click()
                        settle(page)
                    page.wait_for_selector(CHART, timeout=180_000)
                    page.wait_for_timeout(1000)
                    path = HERE / f"{name}-{label}.png"
                    page.screenshot(path=str(path))
                    print(f"{path.name}: {time.perf_counter() - started:.1f} s")
                    page.close()
        finally:
            browser.close()


if __name__ == "__main__":
    main()
