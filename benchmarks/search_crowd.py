"""Six visitors open the same hard Search link at once, three rounds: what each waits and how long its search
takes, how fast the server's health check answers meanwhile, and the server's memory and threads after each
round and once the tabs are closed (issue 28: searches admitted one at a time, ``app/server/admission.py``).

Run: .venv/bin/python benchmarks/search_crowd.py [--visitors 6] [--rounds 3] [--time 5]
The server is warm as after one earlier visit to the Search page (which starts the searches' fork server;
without it the very first search also waits for that start, 1–5 s).
Aims: health within 2 s throughout; each search within its limit (+ its queueing, which the page shows);
memory and threads back near idle after the rounds, not growing from round to round.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the browser helpers the tests use

from browser_support import IDLE, launch, serve_app  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

SESSION_TTL_S = 120
UNEVEN = "F=1:1.5:1:2:1:1:1.25:1:1:1:1:2:1:1:1.5:1,I=1,W=1"


def server_process() -> psutil.Process:
    [server] = [p for p in psutil.Process().children(recursive=True) if "streamlit" in " ".join(p.cmdline())]
    return server


def footprint(server: psutil.Process) -> str:
    """The server's memory and threads, and its children's (a search runs in one: ``engine.search.isolated``)."""
    children = server.children(recursive=True)
    extra = sum(child.memory_info().rss for child in children) / 2**20
    return (
        f"{server.memory_info().rss / 2**20:.0f} MB, {server.num_threads()} threads "
        f"(+ {len(children)} child process(es), {extra:.0f} MB)"
    )


def watch_health(url: str, stop: threading.Event, worst: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=10).read()
        except OSError:
            pass
        worst[0] = max(worst[0], time.perf_counter() - started)
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--time", type=float, default=5.0, help="each search's time limit (s)")
    parser.add_argument(
        "--no-search",
        action="store_true",
        help="the same sizes on the Playground instead (no search): what the visits alone cost the server",
    )
    args = parser.parse_args()
    sizes = "ranks=8&microbatches=32&placement=v" if not args.no_search else "ranks=8&microbatches=32&schedule=zb-v"
    link = (
        f"/search?{sizes}&memory=3&comm=0.5&objective=period&time={args.time:g}"
        f"&costs={UNEVEN.replace(',I=1,W=1', ',I=' + ':'.join(['1'] * 16) + ',W=' + ':'.join(['1'] * 16))}"
        if not args.no_search
        else f"/?{sizes}"
    )
    answer = "Status|did not start|gave no result" if not args.no_search else "Makespan"
    with serve_app() as url, sync_playwright() as playwright:
        server = server_process()
        browser = launch(playwright)
        warm = browser.new_page()  # one earlier visitor of the Search page (no search): its fork server starts
        warm.goto(url + "/search")
        warm.wait_for_selector(IDLE, timeout=120_000)
        warm.close()
        time.sleep(5)
        print(f"idle server: {footprint(server)}")
        for round_number in range(1, args.rounds + 1):
            worst, stop = [0.0], threading.Event()
            watcher = threading.Thread(target=watch_health, args=(url, stop, worst), daemon=True)
            watcher.start()
            started = time.perf_counter()
            pages = []
            for _ in range(args.visitors):
                page = browser.new_page()
                page.goto(url + link, wait_until="commit")
                pages.append(page)
            answered = []
            for page in pages:
                try:
                    page.wait_for_function(
                        f"() => document.querySelector('{IDLE}') && /{answer}/.test(document.body.innerText)",
                        timeout=300_000,
                    )
                except PlaywrightTimeout:
                    print(f"no answer after 300 s; the page ends with: {page.inner_text('body')[-600:]!r}")
                    raise
                text = page.inner_text("body")
                if "did not start" in text or "gave no result" in text:
                    print(
                        "  a visitor was told: "
                        + re.search(r"The search (did not start|gave no result)[^\n]*", text)[0]
                    )
                waited = re.search(r"Waited (\d+) s for another visitor's search; this one then took ([\d.]+) s", text)
                took = re.search(r"; (\d+\.\d\d) s\. ", text)  # the result's caption: "<method>: …; 4.93 s. …"
                searching = took.group(1) if took else "?"
                queued, total = waited.groups() if waited else ("0", "?")  # the page shows the total after a wait
                answered.append((time.perf_counter() - started, (queued, total, searching)))
            stop.set()
            watcher.join()
            for page in pages:
                page.close()
            print(f"round {round_number}: health at worst {worst[0]:.2f} s; server {footprint(server)}")
            for index, (seconds, (queued, total, searching)) in enumerate(answered, start=1):
                print(
                    f"  visitor {index}: answered after {seconds:5.1f} s (queued {queued} s; then {total} s, of which "
                    f"{searching} s searching)"
                )
        browser.close()
        time.sleep(20)
        print(f"20 s after the tabs closed: server {footprint(server)}")
        time.sleep(SESSION_TTL_S + 10)  # a closed tab's session is kept this long (server.disconnectedSessionTTL)
        print(f"{SESSION_TTL_S + 30} s after, past Streamlit's session TTL: server {footprint(server)}")


if __name__ == "__main__":
    main()
