"""How long one Plan takes on the server: a 16-stage, 256-micro-batch plan (issue 17's goal: under 1 s).

Llama 3 405B on H100s, TP 8 × PP 16 × DP 8 (1,024 GPUs), global batch 2,048 of 8,192 tokens, micro-batch 1:
m = 2,048 / (8 × 1) = 256 micro-batches per pipeline. Times ``plan()`` (build the schedule, simulate it in
seconds, memory per GPU) and ``summary()`` (what the page and --json read) for every family, and the whole
family table. Prints the median of a few repeats.
Run: .venv/bin/python benchmarks/scale.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import timeit

from engine.scale import Layout, plan
from engine.schedules import FAMILIES

GOAL_SECONDS = 1.0


def median_seconds(function, repeat: int) -> float:
    return statistics.median(timeit.repeat(function, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    layout = Layout(data_parallel=8, global_batch=2_048)
    assert layout.pipeline_parallel == 16 and layout.num_microbatches == 256
    print(
        f"Llama 3 405B on {layout.gpus_used:,} H100s: TP 8 × PP 16 × DP 8, {layout.num_microbatches} micro-batches "
        f"(median of {args.repeat})"
    )
    print(f"{'family':<18}{'v':>3}{'actions':>9}{'plan + summary':>16}   step time   bubble   fits")
    for name in FAMILIES:
        family_layout = Layout(data_parallel=8, global_batch=2_048, family=name)

        def one_plan(family_layout=family_layout):
            result = plan("llama3-405b", "h100", family_layout)
            result.summary()
            return result

        seconds, result = median_seconds(one_plan, args.repeat), one_plan()
        verdict = "" if seconds < GOAL_SECONDS else f"  over the {GOAL_SECONDS:g} s goal"
        print(
            f"{name:<18}{result.layout.num_chunks:>3}{result.schedule.num_actions:>9,}{seconds:>14.3f} s"
            f"{result.step_seconds:>10.2f} s{result.bubble_fraction:>8.1%}   {'yes' if result.fits else 'no'}{verdict}"
        )
    table_seconds = median_seconds(lambda: plan("llama3-405b", "h100", layout).compare_families(), args.repeat)
    print(f"every family's table (compare_families, {len(FAMILIES)} plans)  {table_seconds:.3f} s")


if __name__ == "__main__":
    main()
