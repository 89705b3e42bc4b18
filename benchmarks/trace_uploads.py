"""Four visitors upload a large trace each at once on the Your run page: how long each takes, how fast
the server's health check answers meanwhile, and the server's own memory (its RSS; the readings run in child
processes) before, at its peak and 10 s after the last reading ended.

Run: .venv/bin/python benchmarks/trace_uploads.py [--visitors 4] [--megabytes 85]
Each upload is a valid 2-rank pipeline trace (the lab's GPipe example) padded with CPU ops the reader does not
keep, as a real profiler trace is mostly such events. Aims: health within 2 s throughout; memory back within
100 MB of where it started 10 s after the last upload was read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the browser helpers the tests use

from browser_support import IDLE, HealthWatch, launch, serve_app  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from engine.traces.examples import example_files  # noqa: E402


def padded_traces(folder: Path, megabytes: float) -> list[Path]:
    """The GPipe example's two ranks, each padded with unkept CPU ops to ``megabytes`` / 2 (uncompressed JSON)."""
    paths = []
    for source in example_files("schedulegpipe-2ranks"):
        trace = json.loads(gzip.open(source).read())
        filler = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0.0, "dur": 0.1, "pid": 0, "tid": 0}
        count = int(megabytes * 2**20 / 2 / len(json.dumps(filler)))
        trace["traceEvents"] = [filler] * count + trace["traceEvents"]
        path = folder / Path(source).name.replace(".gz", "")
        path.write_text(json.dumps(trace))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, default=4)
    parser.add_argument("--megabytes", type=float, default=85.0, help="each visitor's upload, both ranks together")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pplab-uploads-"))
    files = padded_traces(folder, args.megabytes)
    print(f"each upload: {sum(p.stat().st_size for p in files) / 2**20:.0f} MB in {len(files)} files; "
          f"host load {psutil.getloadavg()[0]:.1f}")  # fmt: skip
    with serve_app() as url, sync_playwright() as playwright:
        [server] = [p for p in psutil.Process().children(recursive=True) if "streamlit" in " ".join(p.cmdline())]
        memory: list[float] = []
        browser = launch(playwright)
        pages = []
        for _ in range(args.visitors):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{url}/your-run")
            page.wait_for_selector(IDLE, timeout=120_000)
            pages.append(page)
        before = server.memory_info().rss / 2**20
        with HealthWatch(url, every_s=0.25, also=lambda: memory.append(server.memory_info().rss / 2**20)) as watch:
            started = time.monotonic()
            for page in pages:  # without waiting for each: the server reads them at once
                page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(p) for p in files])
            took = []
            for page in pages:
                page.wait_for_function(
                    "() => document.querySelector('[data-testid=\"stMain\"]').innerText.includes('Read: rank0.json')"
                    " || document.querySelector('[data-testid=\"stMain\"]').innerText.includes('cannot be read')",
                    timeout=300_000,
                )
                page.wait_for_selector(IDLE, timeout=300_000)
                took.append(time.monotonic() - started)
            time.sleep(10)
            after = server.memory_info().rss / 2**20
        health = watch.seconds
        browser.close()
    print(f"each visitor's upload read and drawn after (s): {', '.join(f'{t:.1f}' for t in took)}")
    print(f"health check: median {sorted(health)[len(health) // 2]:.2f} s, max {max(health):.2f} s ({len(health)})")
    print(f"server RSS: before {before:.0f} MB, peak {max(memory):.0f} MB, 10 s after the last {after:.0f} MB "
          f"({after - before:+.0f} MB)")  # fmt: skip


if __name__ == "__main__":
    main()
