"""How long the simulator takes on a large schedule (ZB-H1, 32 ranks, 1,024 micro-batches ≈ 98k actions).

Prints the build, validate and simulate times side by side, and actions per second.
Run: .venv/bin/python benchmarks/simulate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from engine import UNIT, build_schedule, simulate, validate


def timed(function, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedule", default="zb-h1")
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    fresh = lambda: build_schedule(args.schedule, args.ranks, args.microbatches)  # noqa: E731
    build_s, schedule = timed(fresh, args.repeat)
    cold, warm, checks = [], [], []
    for _ in range(args.repeat):
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
    print(
        f"{args.schedule}: {args.ranks} ranks × {args.microbatches} micro-batches = {n:,} actions "
        f"(median of {args.repeat})"
    )
    print(
        f"  simulate a freshly built schedule  {cold_s:.3f} s  ({n / cold_s:,.0f} actions/s; compiles it to arrays, "
        f"checks it, times it, builds the DataFrame)"
    )
    print(f"  simulate it again (compiled)       {warm_s:.3f} s  ({cold_s / warm_s:.2f}× faster)")
    print(f"  validate (checks + deadlock walk)  {validate_s:.3f} s")
    print(f"  build the schedule (generator)     {build_s:.3f} s")
    print(f"  makespan {timeline.makespan:g}, bubble_fraction {timeline.bubble_fraction:.4f}")


if __name__ == "__main__":
    main()
