"""How long the simulator takes on a large schedule (ZB-H1, 32 ranks, 1,024 micro-batches ≈ 98k actions).

Prints the build, validate and simulate times side by side, and actions per second.
Run: .venv/bin/python benchmarks/simulate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import UNIT, build_schedule, simulate, validate  # noqa: E402


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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    build_s, schedule = timed(lambda: build_schedule(args.schedule, args.ranks, args.microbatches), args.repeat)
    cold_s, _ = timed(lambda: simulate(build_schedule(args.schedule, args.ranks, args.microbatches), UNIT), 1)
    cold_s -= build_s
    validate_s, _ = timed(lambda: validate(schedule), args.repeat)
    simulate_s, timeline = timed(lambda: simulate(schedule, UNIT), args.repeat)
    n = schedule.num_actions
    print(f"{args.schedule}: {args.ranks} ranks × {args.microbatches} micro-batches = {n:,} actions "
          f"(median of {args.repeat})")
    print(f"  build     {build_s:.3f} s")
    print(f"  first simulate of a new schedule {cold_s:.3f} s (includes compiling it to arrays once)")
    print(f"  validate  {validate_s:.3f} s")
    print(f"  simulate  {simulate_s:.3f} s  ({n / simulate_s:,.0f} actions/s; includes the structural check "
          f"and the DataFrame)")
    print(f"  simulate / validate = {simulate_s / validate_s:.2f}×; makespan {timeline.makespan:g}, "
          f"bubble_fraction {timeline.bubble_fraction:.4f}")


if __name__ == "__main__":
    main()
