"""A class's first visits at once: N visitors (default 30) fetch every script a first visit to the Playground
loads (the page's own list and Streamlit's chart script), all together, from a server just started — once from
Streamlit serving app/streamlit_app.py itself (its scripts uncompressed), once from app/serve.py (each script
compressed once and kept: app/server/middleware.py), alternating. It prints the bytes per visitor, the time until
the last visitor has everything, and the health check's worst answer meanwhile, side by side and as ratios.

Run: .venv/bin/python benchmarks/first_visits.py [--visitors 30] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser_support import HealthWatch, serve_app  # noqa: E402

CHART_SCRIPT = re.compile(r"PlotlyChart\.[\w-]+\.js")


def scripts(url: str) -> list[str]:
    """What a first visit to the Playground fetches: the page's module list, then the chart's script."""
    page = urllib.request.urlopen(f"{url}/").read().decode()
    listed = re.findall(r'(static/[^"]+\.(?:js|css))', page)
    folder = Path(__import__("streamlit").__file__).parent / "static" / "static" / "js"
    chart = next(f"static/js/{path.name}" for path in folder.iterdir() if CHART_SCRIPT.fullmatch(path.name))
    return [*listed, chart]


def class_arrives(url: str, visitors: int) -> tuple[float, float, float]:
    """(seconds until the last visitor has every script, MB per visitor, worst health answer in seconds)."""
    files = scripts(url)
    received: list[int] = []

    def visitor() -> None:
        total = 0
        for name in files:
            request = urllib.request.Request(f"{url}/{name}", headers={"Accept-Encoding": "gzip"})
            total += len(urllib.request.urlopen(request, timeout=60).read())
        received.append(total)

    with HealthWatch(url, every_s=0.05) as health:
        started = time.perf_counter()
        threads = [threading.Thread(target=visitor) for _ in range(visitors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    return seconds, statistics.mean(received) / 1e6, max(health.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float, float]]] = {"streamlit_app.py": [], "serve.py": []}
    for _ in range(args.rounds):
        for entry in figures:
            with serve_app(entry=entry) as url:  # a server just started: nothing compressed yet
                figures[entry].append(class_arrives(url, args.visitors))
    print(
        f"{args.visitors} first visits at once, each fetching a first visit's scripts (load {os.getloadavg()[0]:.2f})"
    )
    medians = {}
    for entry, runs in figures.items():
        seconds, megabytes, health = (statistics.median(column) for column in zip(*runs, strict=True))
        medians[entry] = (seconds, megabytes)
        print(
            f"  {entry:<18} all served in {seconds:5.2f} s   {megabytes:5.2f} MB a visitor   health max {health:.3f} s"
        )
    (plain_s, plain_mb), (served_s, served_mb) = medians["streamlit_app.py"], medians["serve.py"]
    print(f"  serve.py against streamlit_app.py: time {served_s / plain_s:.2f}×, bytes {served_mb / plain_mb:.2f}×")


if __name__ == "__main__":
    main()
