"""Real-run timings on a crowded host: the emulated backend's measured makespan on a quiet machine
next to the same run with busy loops alongside, per estimator, and whether the busy-host notice appeared.

1. The clock: the same matrix multiplies timed by the thread's CPU time and by the wall clock, quiet and with
   busy loops (the wall clock sees the load; the thread's CPU time much less). Moved here from the tests:
   how much the wall clock moves depends on this machine's cores and load, which a test must not assume.
2. The emulated 1F1B and ZB-H1 4×8 makespans (MLP 8×512, batch 128), quiet and with two and four busy loops,
   alternating so that drifts in the machine's own load hit every condition alike. Each run's makespan is
   placed from each action's fastest repeat (``--estimator min``, the default) and from its median, from the
   same measured repeats; the ratios loaded / quiet are printed side by side.

"Quiet" means nothing this script started: on a shared machine other programs still run (the CPU share
column says how much of the wall clock the run's thread had).

Run: .venv/bin/python benchmarks/crowded_host.py [--rounds 5] [--repeats 3] [--loads 2,4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from engine.dependencies import walk
from engine.model_config import ModelConfig
from engine.runtime import RunConfig, run
from engine.runtime.timing import ActionClock, one_intra_op_thread

SCHEDULES = ("1f1b", "zb-h1")
TARGET = 1.25


def busy_loops(count: int) -> list[subprocess.Popen]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(0.3 if loops else 0.0)  # let them reach the scheduler
    return loops


def stop(loops: list[subprocess.Popen]) -> None:
    for loop in loops:
        loop.kill()
        loop.wait()


def clock_section(loads: list[int]) -> None:
    print("1. The clock: 40 matmuls 128×128, median of 7, thread CPU time and wall clock")
    cpu, wall = ActionClock(torch.device("cpu")), ActionClock(torch.device("cpu"), "wall")
    a = torch.randn(128, 128)

    def medians() -> np.ndarray:
        samples = []
        for _ in range(7):
            began = cpu.start(), wall.start()
            for _ in range(40):
                a @ a
            samples.append((cpu.stop(began[0]), wall.stop(began[1])))
        return np.median(samples, axis=0)

    with one_intra_op_thread():
        quiet = medians()
        print(f"   {'busy loops':<11} {'CPU ms':>8} {'wall ms':>8} {'CPU ratio':>10} {'wall ratio':>11}")
        print(f"   {0:<11} {quiet[0]:>8.3f} {quiet[1]:>8.3f} {1:>10.2f} {1:>11.2f}")
        for count in loads:
            loops = busy_loops(count)
            try:
                loaded = medians()
            finally:
                stop(loops)
            cpu_ratio, wall_ratio = loaded / quiet
            print(f"   {count:<11} {loaded[0]:>8.3f} {loaded[1]:>8.3f} {cpu_ratio:>10.2f} {wall_ratio:>11.2f}")


def makespans(result) -> dict[str, float]:
    """The run's makespan placed from each action's fastest repeat (the run's own) and from its median."""
    frame = result.measured.frame
    c = result.config.plan.compiled
    median = np.bincount(c.slot, weights=frame["duration_median"].to_numpy(), minlength=c.num_slots)
    return {
        "min": result.measured.makespan,
        "median": max(walk(result.schedule, median, result.transfer_ms).ends, default=0.0),
    }


def makespan_section(rounds: int, repeats: int, loads: list[int]) -> None:
    conditions = [0, *loads]
    print(
        f"2. Emulated 4×8 makespans, MLP 8×512, batch 128, {repeats} measured steps per run, median of {rounds} "
        f"runs per condition (cores: {os.cpu_count()}; load average now {os.getloadavg()[0]:.1f})"
    )
    rows: dict[tuple[str, int], list] = {(name, count): [] for name in SCHEDULES for count in conditions}
    for _ in range(rounds):
        for count in conditions:
            loops = busy_loops(count)
            try:
                for name in SCHEDULES:
                    config = RunConfig(
                        family=name,
                        num_ranks=4,
                        num_microbatches=8,
                        repeats=repeats,
                        model=ModelConfig(kind="mlp", layers=8, hidden=512, batch=128),
                    )
                    rows[(name, count)].append(run(config))
            finally:
                stop(loops)
    print(
        f"   {'schedule':<7} {'busy loops':>10} {'min ms':>8} {'median ms':>10} {'ratio (min)':>12} "
        f"{'ratio (median)':>15} {'CPU share':>10} {'variation':>10} {'notice':>7}"
    )
    for name in SCHEDULES:
        quiet = {key: statistics.median(makespans(r)[key] for r in rows[(name, 0)]) for key in ("min", "median")}
        for count in conditions:
            results = rows[(name, count)]
            spans = {key: statistics.median(makespans(r)[key] for r in results) for key in ("min", "median")}
            share = statistics.median(r.interference.cpu_share for r in results)
            variation = statistics.median(r.interference.variation for r in results)
            notices = sum(r.interference.busy for r in results)
            print(
                f"   {name:<7} {count:>10} {spans['min']:>8.2f} {spans['median']:>10.2f} "
                f"{spans['min'] / quiet['min']:>11.2f}× {spans['median'] / quiet['median']:>14.2f}× "
                f"{share:>10.0%} {variation:>10.0%} {notices:>3}/{len(results)}"
            )
    print(
        f"   ratio: loaded / quiet makespan (target ≤ {TARGET}× with the default estimator, min); notice: runs "
        f"whose output said the host was busy"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="measured steps per run (the CLI's --repeats)")
    parser.add_argument("--loads", default="2,4", help="busy loops for the loaded conditions")
    parser.add_argument("--only-makespans", action="store_true", help="skip section 1")
    args = parser.parse_args()
    loads = [int(part) for part in args.loads.split(",")]
    if not args.only_makespans:
        clock_section(loads)
    makespan_section(args.rounds, args.repeats, loads)


if __name__ == "__main__":
    main()
