"""How long reading a real job's traces takes, and how much memory: 8 ranks × 100 MB of Kineto-format trace
(generated here, not committed), imported as ``python -m engine trace`` does, in a fresh process whose peak
memory is measured. The goal (issue "Your own run"): under 30 s on 2 cores, peak memory under 1 GB.

Each generated rank file is what a real CPU trace mostly is: ``cpu_op`` events (aten ops with their input
shapes) around the pipeline's ``PP:`` spans of an interleaved 1F1B step (8 ranks, v = 2, 64 micro-batches),
with ``ProfilerStep#N`` spans, ``gloo:send``/``gloo:recv`` spans and a ``distributedInfo`` header.

Run: .venv/bin/python benchmarks/traces.py [--ranks 8] [--megabytes 100] [--folder /tmp/pplab-trace-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from engine import build_schedule

FILLER = (
    '{{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": {pid}, "tid": {pid}, "ts": {ts:.3f}, '
    '"dur": 1.250, "args": {{"External id": {n}, "Record function id": 0, "Concrete Inputs": ["", "", "", "1", '
    '"1"], "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Input Strides": [[1], [4096, 1], '
    '[1, 4096], [], []], "Input Dims": [[4096], [8, 4096], [4096, 4096], [], []], "Ev Idx": {n}, "Sequence '
    'number": {n}, "Fwd thread id": 0}}}}'
)


def span(name: str, category: str, pid: int, ts: float, duration: float) -> str:
    event = {"ph": "X", "cat": category, "name": name, "pid": pid, "tid": pid, "ts": round(ts, 3), "dur": duration}
    return json.dumps(event | {"args": {"External id": 0, "Record function id": 0}})


def write_rank(path: Path, rank: int, ranks: int, schedule, megabytes: float) -> None:
    """One rank's trace: its schedule's actions as PP: spans (100 µs each, 10 µs apart), padded with aten ops."""
    slots = schedule.ranks[rank]
    target = megabytes * 1e6
    pid, ts, written, n = 1000 + rank, 1_000_000.0, 0, 0
    with path.open("w") as out:
        head = {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"backend": "gloo", "rank": rank,
                "world_size": ranks}, "baseTimeNanoseconds": 1_790_000_000_000_000_000}  # fmt: skip
        out.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        lines = [span("ProfilerStep#3", "user_annotation", pid, ts, 110.0 * len(slots) * 2)]
        for step, slot in enumerate(slots):
            start = ts + step * 110.0 + rank * 20.0
            lines.append(span(f"PP:{slot}", "user_annotation", pid, start, 100.0))
            lines.append(span("gloo:send", "user_annotation", pid, start + 100.0, 5.0))
        for line in lines:
            out.write(line + ",\n")
            written += len(line) + 2
        filler_per_gap = max(1, int((target - written) / 420 / max(len(slots), 1)))
        for step in range(len(slots)):
            base = ts + step * 110.0
            for k in range(filler_per_gap):
                line = FILLER.format(pid=pid, ts=base + k * 100.0 / filler_per_gap, n=n)
                n += 1
                out.write(line + ",\n")
        out.write(span("Record Window End", "Trace", pid, ts, 0.0) + "\n]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--folder", default="/tmp/pplab-trace-bench")
    args = parser.parse_args()
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    schedule = build_schedule("interleaved-1f1b", args.ranks, 64, 2)
    paths = [folder / f"rank{rank}.json" for rank in range(args.ranks)]
    if not all(p.exists() and abs(p.stat().st_size / 1e6 - args.megabytes) < 0.2 * args.megabytes for p in paths):
        print(f"writing {args.ranks} traces of about {args.megabytes:g} MB to {folder} …", flush=True)
        for rank, path in enumerate(paths):
            write_rank(path, rank, args.ranks, schedule, args.megabytes)
    sizes = [p.stat().st_size for p in paths]
    code = (
        "import resource, sys, time; from engine.traces import import_traces; t = time.perf_counter(); "
        "run = import_traces(sys.argv[1:]); s = time.perf_counter() - t; "
        "print(s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN)"
        ".ru_maxrss, run.schedule.num_actions)"
    )
    began = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    seconds, peak_kib, children_kib, actions = result.stdout.split()
    peak_mb = max(int(peak_kib), int(children_kib)) / 1024
    each = f"{min(sizes) / 1e6:.0f}–{max(sizes) / 1e6:.0f} MB each"
    print(f"{args.ranks} traces, {sum(sizes) / 1e6:,.0f} MB in all ({each})")
    print(f"import: {float(seconds):.1f} s ({wall:.1f} s with the process start), {actions} actions read")
    print(f"peak memory of the importing process (largest of it and its workers): {peak_mb:,.0f} MB")
    print(f"goal: < 30 s and < 1,000 MB; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
