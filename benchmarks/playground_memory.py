"""What the Playground's kept results cost a server at the largest configurations a link allows.

Drives the pages' own engine calls (``app.frame.engine_calls``: the simulation and the drawn Gantt with its
JSON) for --visits distinct links at 32 ranks × 256 micro-batches × 2 chunks (interleaved zero bubble, each
with other costs, so none is kept twice), as a crawler following links would, and prints after each tenth the
process's resident memory, what the store holds and its budget (``app.frame.kept.BUDGET_BYTES``).

Run: .venv/bin/python benchmarks/playground_memory.py [--visits 60]
"""

from __future__ import annotations

import argparse
import gc
import logging
import time

import psutil

logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime": the store works outside a server too

from app.frame import engine_calls  # noqa: E402
from app.frame.kept import BUDGET_BYTES, kept_bytes, server_results  # noqa: E402
from app.frame.lab_settings import LabSettings  # noqa: E402
from app.frame.limits import MAX_MICROBATCHES, MAX_RANKS  # noqa: E402
from engine.costs import Durations  # noqa: E402

MB = 1e6


def largest(visit: int) -> LabSettings:
    """A link at the largest size the Playground accepts, with costs of its own."""
    forward = 1.0 + visit / 100
    durations = Durations({"F": forward, "B": 2.0, "I": 1.0, "W": 1.0, "F&B": 2.5})
    return LabSettings(
        family="interleaved-zb",
        num_ranks=MAX_RANKS,
        num_microbatches=MAX_MICROBATCHES,
        num_chunks=2,
        durations=durations,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--visits", type=int, default=60)
    args = parser.parse_args()
    process = psutil.Process()
    engine_calls.simulated(LabSettings())  # imports and first-use compilation before the baseline
    gc.collect()
    baseline = process.memory_info().rss
    store = server_results()
    print(f"budget {BUDGET_BYTES / MB:.0f} MB; baseline RSS {baseline / MB:.0f} MB")
    started = time.perf_counter()
    largest_entry = peak_kept = 0
    for visit in range(1, args.visits + 1):
        settings = largest(visit)
        simulation = engine_calls.simulated(settings)
        figure = engine_calls.playground_gantt(settings, False)
        largest_entry = max(largest_entry, kept_bytes(simulation), kept_bytes(figure))
        peak_kept = max(peak_kept, store.bytes)
        if visit % 10 == 0:
            gc.collect()
            grown = process.memory_info().rss - baseline
            print(
                f"{visit:4d} links: RSS +{grown / MB:6.0f} MB, kept {store.bytes / MB:6.0f} MB in {len(store):3d} "
                f"entries ({time.perf_counter() - started:.0f} s)"
            )
    print(f"largest entry {largest_entry / MB:.1f} MB; the store held at most {peak_kept / MB:.0f} MB")


if __name__ == "__main__":
    main()
