"""The example runs the lab ships (``examples/traces/``): PyTorch's own schedules profiled on this kind of
machine by ``tests/fixtures/make_traces.py``, one folder per run with its per-rank traces and ``order.json``
(what PyTorch's runtime executed, the ground truth the tests compare with)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
DEFAULT_EXAMPLE = "scheduleinterleaved1f1b-4ranks"
PROFILE_CODE = """\
from torch.profiler import ProfilerActivity, profile, schedule

with profile(
    activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
    schedule=schedule(wait=1, warmup=1, active=2),  # ProfilerStep#N marks each step
) as prof:
    for step in range(4):
        pipeline_schedule.step(inputs, target=targets, losses=losses)  # torch.distributed.pipelining
        prof.step()
prof.export_chrome_trace(f"rank{torch.distributed.get_rank()}.json")  # one file per rank; .json.gz works too
"""
"""What a job adds to be read here: the torch.profiler lines the Your run page shows (lesson 10 shows them too)."""


@cache
def example_runs() -> dict[str, str]:
    """Folder name → a title ("PyTorch ScheduleInterleaved1F1B, 4 ranks, 8 micro-batches (gloo, CPU)")."""
    runs = {}
    for folder in sorted(EXAMPLES.glob("*/order.json")):
        order = json.loads(folder.read_text())
        synthetic = " — synthetic GPU trace" if "synthetic" in folder.parent.name else " (gloo, CPU)"
        runs[folder.parent.name] = (
            f"PyTorch {order['class']}, {order['ranks']} ranks, {order['microbatches']} micro-batches{synthetic}"
        )
    return runs


def example_files(name: str) -> list[str]:
    if name not in example_runs():
        raise ValueError(f"no example run {name!r}; the examples are {', '.join(example_runs())}")
    return sorted(str(path) for path in (EXAMPLES / name).glob("rank*.json*"))
