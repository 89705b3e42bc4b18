"""The simulator against PyTorch's dry-run, side by side in one run, and how long a large schedule takes.

Default: for 1F1B, interleaved 1F1B (v = 2) and ZB-V at about 2k to 100k actions, the median time of
* PyTorch's dry-run ``_simulate_comms_compute`` on the same order lowered by PyTorch's own ``_add_send_recv``
  (the lowering not timed): it orders every rank's actions and sends, without times;
* the lab's walk (``engine.dependencies.walk``: every slot's start and end under the costs, the compiled walk
  once Numba is loaded — loaded up front here), and the ratio;
* the lab's whole ``simulate`` (walk, memory model, the Timeline's DataFrames), and the ratio.
--large: ZB-H1 with 32 ranks and 1,024 micro-batches (98k actions): build, validate, simulate cold and warm.
--cli: the command line's ``simulate --json`` of that schedule, each a fresh process, against the same process
start-up (``simulate --help``: the interpreter and the CLI's imports), alternating, medians: the time past
start-up (goal < 0.5 s, issue 38).
Run: .venv/bin/python benchmarks/simulate.py [--large | --cli] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from engine import UNIT, build_schedule, simulate, validate
from engine.dependencies import walk
from engine.fast_walk import load
from engine.simulator import slot_durations

CASES = (  # family, ranks, micro-batches, chunks: about 2k, 10k, 25k and 100k actions each
    ("1f1b", 8, 128, None), ("1f1b", 16, 320, None), ("1f1b", 16, 800, None), ("1f1b", 32, 1600, None),
    ("interleaved-1f1b", 8, 64, 2), ("interleaved-1f1b", 16, 160, 2), ("interleaved-1f1b", 16, 400, 2),
    ("interleaved-1f1b", 32, 800, 2),
    ("zb-v", 8, 64, None), ("zb-v", 16, 160, None), ("zb-v", 16, 400, None), ("zb-v", 32, 512, None),
)  # fmt: skip
GOAL = 20.0


def median_seconds(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pytorch_dry_run(schedule):
    """PyTorch's dry-run of ``schedule``, lowered first with its own pass (only the dry-run is returned)."""
    from torch.distributed.pipelining import schedules

    actions = {r: [schedules._Action.from_str(str(slot)) for slot in slots] for r, slots in enumerate(schedule.ranks)}
    lowered = schedules._add_send_recv(actions, stage_to_rank=schedule.rank_of, num_stages=schedule.num_stages)
    return lambda: schedules._simulate_comms_compute(lowered, schedule.rank_of, schedule.num_stages)


def against_pytorch(repeat: int) -> None:
    loaded = load()
    print(f"compiled walk: {'Numba, loaded before timing' if loaded else 'not available: the Python walk'}")
    print(f"{'family':<18}{'p':>4}{'m':>6}{'actions':>9}{'PyTorch':>11}{'walk':>10}{'×':>7}{'simulate':>11}{'×':>7}")
    for family, p, m, chunks in CASES:
        schedule = build_schedule(family, p, m, chunks)
        durations = slot_durations(schedule, UNIT)
        simulate(schedule, UNIT)  # compile the schedule to arrays once, as a second call would find it
        theirs = median_seconds(pytorch_dry_run(schedule), repeat)
        ours = median_seconds(lambda schedule=schedule, durations=durations: walk(schedule, durations), repeat)
        whole = median_seconds(lambda schedule=schedule: simulate(schedule, UNIT, check=False), repeat)
        flag = "" if theirs / ours >= GOAL else f"  below {GOAL:g}×"
        print(
            f"{family:<18}{p:>4}{m:>6}{schedule.num_actions:>9,}{theirs * 1e3:>9.2f}ms{ours * 1e3:>8.3f}ms"
            f"{theirs / ours:>6.0f}×{whole * 1e3:>9.2f}ms{theirs / whole:>6.1f}×{flag}"
            f"   ({ours / schedule.num_actions * 1e6:.3f} µs/action walk)"
        )


def large(repeat: int) -> None:
    fresh = lambda: build_schedule("zb-h1", 32, 1024)  # noqa: E731
    build_s = median_seconds(fresh, repeat)
    cold, warm, checks = [], [], []
    timeline = None
    for _ in range(repeat):
        schedule = fresh()
        started = time.perf_counter()
        timeline = simulate(schedule, UNIT)  # first call compiles the schedule to arrays
        cold.append(time.perf_counter() - started)
        started = time.perf_counter()
        simulate(schedule, UNIT)
        warm.append(time.perf_counter() - started)
        started = time.perf_counter()
        validate(schedule)
        checks.append(time.perf_counter() - started)
    cold_s, warm_s, validate_s = (statistics.median(x) for x in (cold, warm, checks))
    n = schedule.num_actions
    print(f"zb-h1: 32 ranks × 1024 micro-batches = {n:,} actions (median of {repeat})")
    print(f"  simulate a freshly built schedule  {cold_s:.3f} s  (compiles it to arrays, checks, times, DataFrames)")
    print(f"  simulate it again (compiled)       {warm_s:.3f} s  ({warm_s / n * 1e6:.2f} µs/action)")
    print(f"  validate (checks + deadlock walk)  {validate_s:.3f} s")
    print(f"  build the schedule (generator)     {build_s:.3f} s")
    assert timeline is not None
    print(f"  makespan {timeline.makespan:g}, bubble_fraction {timeline.bubble_fraction:.4f}")


CLI_GOAL_S = 0.5


def command_line(repeat: int) -> None:
    """Fresh processes, alternating: ``simulate --help`` (start-up) and ``simulate --json`` of ZB-H1 32 × 1,024."""
    engine = [sys.executable, "-m", "engine", "simulate"]
    runs = {
        "start-up (simulate --help)": [*engine, "--help"],
        "simulate --json, ZB-H1 32 × 1,024": [*engine, "--schedule", "zb-h1", "--ranks", "32", "--microbatches",
                                              "1024", "--json"],
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat + 1):  # the first round warms the file cache
        for name, command in runs.items():
            started = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values[1:]) for name, values in times.items()}
    startup, whole = medians.values()
    print(f"command line, fresh processes alternating, median of {repeat} (load {os.getloadavg()[0]:.2f}):")
    for name, value in medians.items():
        print(f"  {name:<36}{value:.3f} s")
    verdict = "meets" if whole - startup < CLI_GOAL_S else "misses"
    print(f"  past start-up                       {whole - startup:.3f} s ({verdict} the goal < {CLI_GOAL_S} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="the 98k-action ZB-H1 schedule instead")
    parser.add_argument("--cli", action="store_true", help="the command line's simulate --json past start-up")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.cli:
        command_line(args.repeat)
    elif args.large:
        load()
        large(args.repeat)
    else:
        against_pytorch(args.repeat)


if __name__ == "__main__":
    main()
