"""A class of N visitors on one server, through Streamlit's own websocket protocol.

Each visitor is a small client that speaks what the browser speaks (``/_stcore/stream``: a ``BackMsg`` with
``rerun_script`` out, ``ForwardMsg``s back until ``script_finished``): it opens its page, reads the widgets' ids
from the page's elements, then every few seconds changes one setting the way the browser does — the widget's new
state in a rerun. Half the class plays in the Playground (moving the micro-batch or rank slider; the values recur
across visitors, as in a class that follows the teacher), half works through a lesson (pressing "Next step ▶",
back to the first step at the end). Meanwhile one thread asks ``/_stcore/health`` twice a second and another
samples the server's CPU and memory (its process and its children) every second.

Printed: change-to-result latency (send to ``script_finished``) per visitor and for the class (p50, p95, max),
the health check's, the server's CPU and memory over time, and errors (an exception on a page, a failed script,
a dropped connection), each against the goal of issue 38: p95 ≤ 2 s, health ≤ 1 s, no errors, memory flat after
the first minute (the last sample within 10 % of the one at 60 s).

Run: .venv/bin/python benchmarks/classroom.py [--visitors 30] [--seconds 180] [--every 3]
     [--url http://127.0.0.1:8080 --server-pids 123,456]   (a running server or proxy: see docs/deploy.md)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the server launcher the browser tests use

from browser_support import serve_app  # noqa: E402

GOAL_P95_S, GOAL_HEALTH_S, MEMORY_DRIFT = 2.0, 1.0, 0.10
PLAYGROUND = ("", "schedule=zb-v&ranks=4&microbatches=8")
LESSONS = ("lessons", "lesson={lesson}&step=1")
MICROBATCHES, RANKS = (8, 9, 10, 12, 16), (2, 4, 6, 8)
TIMEOUT_S = 60.0


@dataclass
class Visitor:
    """One simulated student: what they opened, their change-to-result times, and what went wrong."""

    name: str
    page: str
    query: str
    latencies: list[float] = field(default_factory=list)
    """Seconds from a change to its result."""
    openings: list[float] = field(default_factory=list)
    """Seconds from opening the page (a new session) to its first result."""
    errors: list[str] = field(default_factory=list)
    widgets: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Widget label → (id, disabled), from the page's elements."""


async def rerun(ws, visitor: Visitor, states: list) -> float:
    """One rerun as the browser sends it (the page, its query and the changed widget's state); the seconds until
    the script finished. Reads the page's widgets and any exception on the way."""
    message = BackMsg()
    message.rerun_script.query_string = visitor.query
    message.rerun_script.page_name = visitor.page
    for widget_id, kind, value in states:
        state = message.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        if kind == "slider":
            state.double_array_value.data.extend([value])
        else:
            state.trigger_value = True
    started = time.perf_counter()
    await ws.send(message.SerializeToString())
    while True:
        reply = ForwardMsg()
        reply.ParseFromString(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
        kind = reply.WhichOneof("type")
        if kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
            element = reply.delta.new_element
            inner = getattr(element, element.WhichOneof("type"))
            if element.WhichOneof("type") == "exception":
                visitor.errors.append(f"exception: {inner.message[:120]}")
            elif getattr(inner, "id", "") and getattr(inner, "label", ""):
                visitor.widgets[inner.label] = (inner.id, bool(getattr(inner, "disabled", False)))
        elif kind == "script_finished":
            if reply.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                visitor.errors.append("the script failed to compile")
            return time.perf_counter() - started


def next_change(visitor: Visitor, rng: random.Random) -> list | None:
    """The setting a visitor changes next: a slider in the Playground, "Next step ▶" in a lesson; None at the
    lesson's end (the button disabled)."""
    if visitor.page == "":
        label, values = rng.choice((("Micro-batches, m", MICROBATCHES), ("Ranks (devices), p", RANKS)))
        widget_id, _ = visitor.widgets[label]
        return [(widget_id, "slider", float(rng.choice(values)))]
    widget_id, disabled = visitor.widgets["Next step ▶"]
    return None if disabled else [(widget_id, "button", True)]


def page_cookies(url: str) -> dict[str, str]:
    """The cookies the page's first answer sets (a proxy's stickiness: deploy/nginx-two-processes.conf), as the
    browser would send them with the websocket; none from Streamlit itself."""
    with urllib.request.urlopen(url + "/", timeout=30) as response:
        cookies = [header.split(";", 1)[0] for header in response.headers.get_all("Set-Cookie") or []]
    return {"Cookie": "; ".join(cookies)} if cookies else {}


async def attend(url: str, visitor: Visitor, until: float, every: float, rng: random.Random) -> None:
    """One visitor: open the page, then change a setting every ``every`` s (± 50 %) until ``until``; at a
    lesson's last step, open the lesson again (a new session, as a reloaded link)."""
    address = url.replace("http", "ws", 1) + "/_stcore/stream"
    try:
        while time.monotonic() < until:
            cookies = await asyncio.to_thread(page_cookies, url)
            async with websockets.connect(
                address, subprotocols=["streamlit"], max_size=None, additional_headers=cookies
            ) as ws:
                visitor.widgets.clear()
                visitor.openings.append(await rerun(ws, visitor, []))
                while time.monotonic() < until:
                    await asyncio.sleep(every * rng.uniform(0.5, 1.5))
                    change = next_change(visitor, rng)
                    if change is None:
                        break
                    visitor.latencies.append(await rerun(ws, visitor, change))
    except (TimeoutError, OSError, KeyError, websockets.ConnectionClosed) as error:
        visitor.errors.append(f"{type(error).__name__}: {error}"[:160])


class Watch:
    """Two threads: the health check's latency, and the server processes' CPU and memory, until ``stop``."""

    def __init__(self, url: str, pids: list[int]) -> None:
        self.url, self.pids = url, pids
        self.health: list[float] = []
        self.samples: list[tuple[float, float, float]] = []  # (seconds since start, CPU %, RSS MB)
        self.stopped = threading.Event()
        self.began = time.monotonic()
        self.threads = [
            threading.Thread(target=self.ask, daemon=True),
            threading.Thread(target=self.sample, daemon=True),
        ]

    def ask(self) -> None:
        while not self.stopped.wait(0.5):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=10):
                    pass
            except OSError:
                pass  # a failed answer counts its time
            self.health.append(time.perf_counter() - started)

    def processes(self) -> list[psutil.Process]:
        found = []
        for pid in self.pids:
            try:
                parent = psutil.Process(pid)
                found += [parent, *parent.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        return found

    def sample(self) -> None:
        known: dict[int, psutil.Process] = {}
        while not self.stopped.wait(1.0):
            cpu = rss = 0.0
            for process in self.processes():
                process = known.setdefault(process.pid, process)  # cpu_percent needs the same object each time
                try:
                    cpu += process.cpu_percent(None)
                    rss += process.memory_info().rss / 1e6
                except psutil.NoSuchProcess:
                    continue
            self.samples.append((time.monotonic() - self.began, cpu, rss))

    def __enter__(self) -> Watch:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join()


def quantiles(values: list[float]) -> tuple[float, float, float]:
    """(p50, p95, max)."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], ordered[-1]


def class_of(count: int, rng: random.Random) -> list[Visitor]:
    """Half in the Playground, half in lessons 1–11 (round robin)."""
    visitors = []
    for index in range(count):
        if index % 2 == 0:
            visitors.append(Visitor(f"v{index:02d} playground", *PLAYGROUND))
        else:
            lesson = 1 + (index // 2) % 11
            page, query = LESSONS
            visitors.append(Visitor(f"v{index:02d} lesson {lesson}", page, query.format(lesson=lesson)))
    rng.shuffle(visitors)
    return visitors


async def lesson_class(url: str, visitors: list[Visitor], seconds: float, every: float, seed: int) -> None:
    """Every visitor at once, arriving over the first 10 s."""
    until = time.monotonic() + seconds

    async def arrive(index: int, visitor: Visitor) -> None:
        await asyncio.sleep(10 * index / max(1, len(visitors)))
        await attend(url, visitor, until, every, random.Random(seed + index))

    await asyncio.gather(*(arrive(index, visitor) for index, visitor in enumerate(visitors)))


def report(visitors: list[Visitor], watch: Watch, seconds: float) -> bool:
    """Print the figures against the goals; True when every goal is met."""
    print("\nper visitor: changes, change-to-result p50 / p95 / max (s), errors")
    for visitor in sorted(visitors, key=lambda v: v.name):
        shown = (
            "no change measured"
            if not visitor.latencies
            else "{:.2f} / {:.2f} / {:.2f}".format(*quantiles(visitor.latencies))
        )
        print(f"  {visitor.name:<20}{len(visitor.latencies):>4}   {shown}   {len(visitor.errors)}")
    latencies = [value for visitor in visitors for value in visitor.latencies]
    openings = [value for visitor in visitors for value in visitor.openings]
    errors = [error for visitor in visitors for error in visitor.errors]
    p50, p95, worst = quantiles(latencies) if latencies else (float("nan"),) * 3
    h50, h95, hmax = quantiles(watch.health) if watch.health else (float("nan"),) * 3
    print(f"\nclass of {len(visitors)}, {seconds:.0f} s, {len(latencies)} changes "
          f"(host load at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")  # fmt: skip
    if openings:
        print(f"  page opened             p50 {statistics.median(openings):.2f} s, max {max(openings):.2f} s "
              f"({len(openings)} openings)")  # fmt: skip
    print(
        f"  change to result        p50 {p50:.2f} s, p95 {p95:.2f} s, max {worst:.2f} s   (goal p95 ≤ {GOAL_P95_S} s)"
    )
    print(f"  /_stcore/health         p50 {h50:.3f} s, p95 {h95:.3f} s, max {hmax:.3f} s   (goal ≤ {GOAL_HEALTH_S} s)")
    print(f"  errors                  {len(errors)}" + "".join(f"\n    {error}" for error in errors[:10]))
    print("  server, each 30 s       until   CPU % (mean, max)   RSS MB (last)")
    for start in range(0, len(watch.samples), 30):
        window = watch.samples[start : start + 30]
        cpu = [sample[1] for sample in window]
        print(f"                          {window[-1][0]:>5.0f}   {statistics.mean(cpu):>6.0f} {max(cpu):>6.0f}"
              f"        {window[-1][2]:>6.0f}")  # fmt: skip
    after_minute = [rss for at, _, rss in watch.samples if at >= 60]
    drift = (after_minute[-1] - after_minute[0]) / after_minute[0] if len(after_minute) > 1 else 0.0
    flat = abs(drift) <= MEMORY_DRIFT
    print(f"  memory from 60 s to the end: {drift:+.1%} ({'flat' if flat else 'NOT flat'}, goal within ±10 %)")
    met = p95 <= GOAL_P95_S and hmax <= GOAL_HEALTH_S and not errors and flat
    print(f"  goals {'met' if met else 'NOT met'}")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=180.0, help="how long the class lasts")
    parser.add_argument("--every", type=float, default=3.0, help="seconds between a visitor's changes (± 50 %%)")
    parser.add_argument("--url", help="a running server or proxy instead of starting one")
    parser.add_argument("--server-pids", default="", help="with --url: the server processes to watch, 1,2,…")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    visitors = class_of(args.visitors, random.Random(args.seed))
    if args.url:
        pids = [int(pid) for pid in args.server_pids.split(",") if pid]
        run_class(args.url, pids, visitors, args)
        return
    with serve_app() as url:
        port = int(url.rsplit(":", 1)[1])
        pids = [c.pid for c in psutil.net_connections("tcp") if c.laddr and c.laddr.port == port and c.pid]
        run_class(url, sorted(set(pids)), visitors, args)


def run_class(url: str, pids: list[int], visitors: list[Visitor], args) -> None:
    print(f"{len(visitors)} visitors on {url} for {args.seconds:.0f} s, a change every {args.every:g} s ± 50 %; "
          f"watching server process(es) {pids or 'none'}")  # fmt: skip
    with Watch(url, pids) as watch:
        asyncio.run(lesson_class(url, visitors, args.seconds, args.every, args.seed))
    met = report(visitors, watch, args.seconds)
    raise SystemExit(0 if met else 1)


if __name__ == "__main__":
    main()
