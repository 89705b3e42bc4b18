"""The Playground's cost, measured side by side in one run.

1. Server: the time of a Playground rerun (AppTest runs the page script: simulate, build the figure,
   serialise it) with a cold cache and a warm one, and the figure's JSON size, at 4×8, 8×32 and 32×256;
   then the unchanged rerun at 32×256 against 4×8 for ZB-V and DualPipeV, measured alternately, as a ratio.
2. Browser: a change (the micro-batch slider moved by the keyboard) to the new chart drawn, in Debian's
   Chromium: the Playground at 4×8 and 32×256 (and their ratio), and Compare's three schedules at 4×8, in turn.
3. Browser: lecture mode's "Next event ▶" to the chart's cursor moved and the next headline shown (4×8).
4. Browser: a visit with a cold browser (a new context: nothing cached) to the page frame and to the first chart
   drawn, on a server just started (its first visit) and on the same server's next visit, over --repeat servers.
Every browser figure is the median of --repeat and is printed against issue 38's goals (change ≤ 0.3 s at 4×8,
Compare's too, ≤ 0.6 s at 32×256; Next ≤ 0.2 s; first chart ≤ 3 s, page frame ≤ 1 s) with the host's load.

Run: .venv/bin/python benchmarks/app_speed.py [--repeat 3] [--schedule zb-v]
Aims: server ≤ 200 ms and figure ≤ 300 KB at 8×32; browser 32×256 ≤ 3× 4×8; an unchanged
32×256 rerun ≤ 2× the 4×8 one (issue 12: frozen results are cached without copying, st.cache_resource).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the browser helpers the tests use (the lab itself is installed)

from browser_support import CHART, DRAWN_MARKS, IDLE, launch, open_page, serve_app  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

SIZES = ((4, 8), (8, 32), (32, 256))


def playground(schedule: str, ranks: int, microbatches: int) -> AppTest:
    """The Playground at this size, run once (its simulation cached)."""
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=120)
    at.query_params.update(
        {"schedule": schedule, "ranks": str(ranks), "microbatches": str(microbatches), "costs": "F=1,I=1,W=1"}
    )
    at.run()
    assert not at.exception, at.exception
    return at


def unchanged_rerun_ratio(schedule: str, repeat: int) -> tuple[float, float]:
    """Median ms of an unchanged rerun at 4×8 and at 32×256, the two measured alternately."""
    small, large = playground(schedule, 4, 8), playground(schedule, 32, 256)
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(repeat):
        for index, at in enumerate((small, large)):
            started = time.perf_counter()
            at.run()
            times[index].append((time.perf_counter() - started) * 1e3)
    return statistics.median(times[0]), statistics.median(times[1])


def server_rerun(schedule: str, ranks: int, microbatches: int, repeat: int) -> tuple[float, float, int]:
    """(cold ms, warm ms median, figure bytes) of the Playground at this size."""
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=120)
    at.query_params.update(
        {
            "schedule": schedule,
            "ranks": str(ranks),
            "microbatches": str(microbatches),
            "costs": "F=1,I=1,W=1",
            "comm": str(time.time() % 1),
        }
    )  # a fresh cache entry
    started = time.perf_counter()
    at.run()
    cold = (time.perf_counter() - started) * 1e3
    warm = []
    for _ in range(repeat):
        started = time.perf_counter()
        at.run()
        warm.append((time.perf_counter() - started) * 1e3)
    assert not at.exception, at.exception
    gantt = next(e for e in at.get("bidi_component") if e.proto.component_name == "pplab_live_chart")
    return cold, statistics.median(warm), len(json.dumps(json.loads(gantt.proto.json)["figure"]).encode())


CHANGES = {
    "4×8": "/?schedule={schedule}&ranks=4&microbatches={m}&costs=F=1,I=1,W=1",
    "32×256": "/?schedule={schedule}&ranks=32&microbatches={m}&costs=F=1,I=1,W=1",
    "Compare 4×8": "/compare?schedules=gpipe,1f1b,zb-h1&ranks=4&microbatches={m}&costs=F=1,I=1,W=1",
}
"""The pages a change is measured on: each opened at m − 1 micro-batches and moved to m (8 or 256)."""


def browser_draws(schedule: str, repeat: int) -> dict[str, float]:
    """Seconds from a change (micro-batches m−1 → m, by the keyboard on the slider) to the new chart drawn: the
    Playground at 4×8 and 32×256 (its title names m), and Compare's three schedules at 4×8 (its first chart's
    marks counted anew), measured in turn, round after round."""
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {name: [] for name in CHANGES}
    with serve_app() as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for round_index in range(repeat + 1):  # the first round warms the server's cache and imports
                for name, link in CHANGES.items():
                    microbatches = 256 if "256" in name else 8
                    page, _ = open_page(browser, url + link.format(schedule=schedule, m=microbatches - 1))
                    before = page.evaluate(DRAWN_MARKS)
                    page.locator('[data-testid="stSlider"] input[type="range"]').nth(1).focus()
                    started = time.perf_counter()
                    page.keyboard.press("ArrowRight")
                    page.wait_for_function(
                        "([m, before]) => { const p = document.querySelector('.js-plotly-plot');"
                        " if (!p || !p._fullData || !p._fullData.length) return false;"
                        " const marks = p._fullData.reduce((n, t) => n + (t._length || 0), 0);"
                        " return p.layout.title && p.layout.title.text"
                        " ? p.layout.title.text.replaceAll('<br>', ' ').includes(m + ' micro-batches')"
                        " : marks > 0 && marks !== before; }",
                        arg=[microbatches, before],
                        timeout=120_000,
                    )
                    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                    if round_index:
                        times[name].append(time.perf_counter() - started)
                    page.close()
        finally:
            browser.close()
    return {name: statistics.median(values) for name, values in times.items()}


GOALS_S = {
    "change 4×8": 0.3,
    "change 32×256": 0.6,
    "change Compare 4×8": 0.3,
    "lecture Next": 0.2,
    "first chart": 3.0,
    "page frame": 1.0,
}


def against(name: str, seconds: float) -> str:
    goal = GOALS_S[name]
    return f"{name:<28}{seconds:>6.2f} s   goal ≤ {goal:g} s: {'met' if seconds <= goal else 'NOT met'}"


def lecture_next(schedule: str, repeat: int) -> float:
    """Median seconds from a click on "Next event ▶" to the cursor moved on the chart and the next headline."""
    from playwright.sync_api import sync_playwright

    times = []
    with serve_app() as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page, _ = open_page(browser, f"{url}/?schedule={schedule}&ranks=4&microbatches=8&costs=F=1,I=1,W=1")
            page.get_by_text("Step through events (lecture mode)").click()
            page.get_by_role("button", name="Next event ▶").wait_for()
            page.wait_for_selector(IDLE)
            for event in range(2, repeat + 3):  # the first Next warms the narration's cache
                shapes = page.evaluate("() => JSON.stringify(document.querySelector('.js-plotly-plot').layout.shapes)")
                started = time.perf_counter()
                page.get_by_role("button", name="Next event ▶").click()
                page.wait_for_function(
                    "([k, before]) => document.body.innerText.includes('Event ' + k + ' of') && "
                    "JSON.stringify(document.querySelector('.js-plotly-plot').layout.shapes) !== before",
                    arg=[event, shapes],
                    timeout=60_000,
                )
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                if event > 2:
                    times.append(time.perf_counter() - started)
                page.wait_for_selector(IDLE)
        finally:
            browser.close()
    return statistics.median(times)


def first_visits(schedule: str, repeat: int) -> dict[str, float]:
    """Seconds to the page frame (the app's container shown) and to the first chart drawn, for a cold browser (a
    new context: nothing cached): on a server's very first visit and on the same server's next one, over
    ``repeat`` servers each started afresh (medians: one server's first visit is one sample)."""
    from playwright.sync_api import sync_playwright

    link = f"/?schedule={schedule}&ranks=4&microbatches=8&costs=F=1,I=1,W=1"
    found: dict[str, list[float]] = {"cold server": [], "warm server": []}
    frames: dict[str, list[float]] = {"cold server": [], "warm server": []}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for _ in range(repeat):
                with serve_app() as url:
                    for which in ("cold server", "warm server"):
                        context = browser.new_context(viewport={"width": 1440, "height": 900})
                        page = context.new_page()
                        started = time.perf_counter()
                        page.goto(url + link, wait_until="commit")
                        page.wait_for_selector('[data-testid="stApp"]', timeout=90_000)
                        frames[which].append(time.perf_counter() - started)
                        page.wait_for_selector(CHART, timeout=90_000)
                        page.wait_for_function(f"() => ({DRAWN_MARKS})() > 0", timeout=90_000)
                        found[which].append(time.perf_counter() - started)
                        context.close()
        finally:
            browser.close()
    return {
        **{f"first chart, {k}": statistics.median(v) for k, v in found.items()},
        **{f"page frame, {k}": statistics.median(v) for k, v in frames.items()},
    }


def print_only(which: str, schedule: str, repeat: int) -> None:
    if which == "lecture":
        figures = {"lecture Next": lecture_next(schedule, repeat)}
    elif which == "change":
        figures = {f"change {name}": s for name, s in browser_draws(schedule, repeat).items()}
    else:
        figures = first_visits(schedule, repeat)
    for name, seconds in figures.items():
        print(f"{against(name.split(',')[0], seconds)}   ({name}, median of {repeat}, load {os.getloadavg()[0]:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedule", default="zb-v")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--only", choices=("lecture", "change", "visit"), help="one browser figure, nothing else")
    args = parser.parse_args()
    if args.only:  # while working on one figure: it alone, against its goal
        print_only(args.only, args.schedule, args.repeat)
        return
    server_rerun(args.schedule, 2, 2, 1)  # imports and first-use costs, once, outside the figures
    print(
        f"1. Playground rerun on the server ({args.schedule}, F=I=W=1; new configuration = not yet cached; "
        f"median of {args.repeat} reruns of the same)"
    )
    print(f"   {'size':>8} {'actions':>8} {'new ms':>8} {'same ms':>8} {'figure KB':>10}")
    for ranks, microbatches in SIZES:
        cold, warm, size = server_rerun(args.schedule, ranks, microbatches, args.repeat)
        actions = 3 * ranks * 2 * max(microbatches, 2 * ranks - 1) if args.schedule == "zb-v" else None
        print(f"   {ranks:>3}×{microbatches:<4} {actions or '':>8} {cold:>8.0f} {warm:>8.0f} {size / 1024:>10.0f}")
    print(f"   unchanged rerun, 32×256 against 4×8 (alternating, median of {max(args.repeat, 5)}):")
    for schedule in ("zb-v", "dualpipev"):
        small, large = unchanged_rerun_ratio(schedule, max(args.repeat, 5))
        print(f"   {schedule:>10}: 4×8 {small:.0f} ms, 32×256 {large:.0f} ms, ratio {large / small:.2f}× (aim ≤ 2)")
    if args.no_browser:
        return
    draws = browser_draws(args.schedule, args.repeat)
    small, large = draws["4×8"], draws["32×256"]
    print(f"2. Browser, change to new chart drawn (Chromium, median of {args.repeat}, load {os.getloadavg()[0]:.2f})")
    print(f"   4×8 {small:.2f} s   32×256 {large:.2f} s   ratio {large / small:.2f}×")
    for name, seconds in draws.items():
        print(f"   {against(f'change {name}', seconds)}")
    following = lecture_next(args.schedule, args.repeat)
    print(f"3. Browser, lecture mode's Next event (4×8, median of {args.repeat}, load {os.getloadavg()[0]:.2f})")
    print(f"   {against('lecture Next', following)}")
    visits = first_visits(args.schedule, args.repeat)
    print(f"4. Browser, a visit with nothing cached (medians over {args.repeat} servers started afresh, load "
          f"{os.getloadavg()[0]:.2f})")  # fmt: skip
    for name, seconds in visits.items():
        print(f"   {against(name.split(',')[0], seconds)}   ({name.split(', ')[1]})")
    figures = {"browser_4x8_s": small, "browser_32x256_s": large, "browser_compare_4x8_s": draws["Compare 4×8"]}
    figures |= {"lecture_next_s": following, **visits}
    print(json.dumps({name: round(value, 2) for name, value in figures.items()}))


if __name__ == "__main__":
    main()
