"""Hostile paths against a whole server: `streamlit run app/serve.py` on a free 127.0.0.1 port (as `make run` starts
it), then GETs of distinct 15 KB paths under /static/ (3,000 by default; from 127.0.0.1, over one keep-alive
connection), then Streamlit's chart script (4.7 MB) asked for under five spellings of its path. It prints the
server's resident memory (RSS, psutil) before and after the long paths, and how long each spelling of the chart
script takes (one compressed copy for all: milliseconds; a copy per spelling would cost about 0.17 s of gzip each).
Every loop is bounded; it stops the server and itself.

Run: .venv/bin/python benchmarks/hostile_paths.py [--requests 3000] [--root DIR]
(--root: another checkout of the lab to serve, such as an older commit's export, with this checkout's interpreter)
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
from streamlit import file_util

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser_support import ROOT, free_port  # noqa: E402

PATH_CHARACTERS = 15_000
SPELLINGS = ("/static/js/{}", "/./static/js/{}", "/static//js/{}", "/static/%2e/js/{}", "/%73tatic/js/{}")
STATIC = Path(file_util.get_static_dir())


def start(root: Path, port: int, log) -> subprocess.Popen:
    """The server as `make run` starts it, on 127.0.0.1:``port``; returned once its health check answers."""
    command = [
        sys.executable, "-m", "streamlit", "run", str(root / "app" / "serve.py"), "--server.address", "127.0.0.1",
        "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    log.seek(0)
    raise SystemExit(f"the server did not start: {log.read().decode(errors='replace')[-2000:]}")


class Client:
    """One keep-alive connection to 127.0.0.1:``port``, opened again when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        for attempt in range(2):
            try:
                self.connection.request("GET", path, headers={"Accept-Encoding": "gzip"})
                response = self.connection.getresponse()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        raise AssertionError("unreachable")


def megabytes(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


def long_paths(client: Client, requests: int) -> float:
    """GET ``requests`` distinct paths of about 15,000 characters under /static/; seconds taken."""
    started = time.perf_counter()
    for i in range(requests):
        suffix = f"-{i}.js"
        noise = os.urandom((PATH_CHARACTERS - len("/static/js/") - len(suffix)) // 2).hex()
        status, _, _ = client.get(f"/static/js/{noise}{suffix}")
        if status != 200:  # Streamlit answers a path that is no file with its page
            raise SystemExit(f"request {i}: status {status}")
    return time.perf_counter() - started


def spellings(client: Client, each: int) -> None:
    """Streamlit's chart script under each spelling of its path, ``each`` times: milliseconds per answer."""
    name = next(path.name for path in (STATIC / "static" / "js").iterdir() if path.name.startswith("PlotlyChart."))
    size = (STATIC / "static" / "js" / name).stat().st_size
    print(f"\nStreamlit's chart script {name} ({size / 1e6:.1f} MB), {each} GETs per spelling:")
    for spelling in SPELLINGS:
        times = []
        for _ in range(each):
            started = time.perf_counter()
            status, headers, body = client.get(spelling.format(name))
            times.append((time.perf_counter() - started) * 1000)
        encoding = headers.get("content-encoding", "identity")
        whole = len(gzip.decompress(body) if encoding == "gzip" else body) == size
        print(
            f"  {spelling.format('…'):22} status {status}, {encoding}, {len(body) / 1e6:.2f} MB sent, file whole: "
            f"{whole}; median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000, help="distinct long paths to send (at most 100,000)")
    parser.add_argument("--spelled", type=int, default=20, help="GETs of the chart script per spelling")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app/serve.py is served")
    args = parser.parse_args()
    requests = max(1, min(args.requests, 100_000))
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = start(args.root.resolve(), port, log)
        try:
            server = psutil.Process(process.pid)
            client = Client(port)
            for i in range(20):  # the page and the fallback answered once before measuring
                client.get(f"/static/js/warm-{i}.js")
            time.sleep(1)
            before = megabytes(server)
            seconds = long_paths(client, requests)
            time.sleep(1)
            after = megabytes(server)
            print(f"served from {args.root.resolve()} on 127.0.0.1:{port}")
            print(
                f"{requests} GETs of distinct {PATH_CHARACTERS:,}-character /static/ paths in {seconds:.1f} s "
                f"({requests / seconds:.0f}/s): server RSS {before:.0f} MB before, {after:.0f} MB after "
                f"({after - before:+.1f} MB)"
            )
            spellings(client, max(1, min(args.spelled, 1000)))
            print(f"server RSS at the end: {megabytes(server):.0f} MB")
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
