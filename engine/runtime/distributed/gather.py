"""Rank 0 turns every rank's events into one RunResult.

On one host every process reads the same monotonic clock, so times are compared as they are; across hosts
(torchrun) each rank's times count from its own exit from the common barrier that starts the step. Of the
measured steps, the timeline shows the one with the median step time; every action's spread is its min and
max duration over all of them, and the prediction uses the median durations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...dependencies import CompiledSchedule
from ..config import RunConfig
from ..result import Measurement, RunResult, assemble
from ..timing import median_and_spread


def _step_arrays(c: CompiledSchedule, gathered: list[dict], step: int, same_host: bool):
    """Start, end and memory of every action (compiled order), in ms, and the waits, for one measured step."""
    began, ended = np.zeros(c.num_actions), np.zeros(c.num_actions)
    memory, peak = np.zeros(c.num_actions), np.zeros(c.num_actions)
    waits = []
    for payload in gathered:
        rank, record = payload["rank"], payload["steps"][step]
        shift = record["origin"] if same_host else 0.0  # back to the shared clock, see the module docstring
        # a rank's events are its actions in its list's order
        for i, (start, end, bytes_held, bytes_during) in zip(c.rank_actions(rank), record["events"], strict=True):
            began[i], ended[i] = (start + shift) * 1e3, (end + shift) * 1e3
            memory[i], peak[i] = bytes_held, bytes_during
        for start, end, need, action in record["waits"]:
            waits.append(
                {
                    "rank": rank,
                    "start": (start + shift) * 1e3,
                    "end": (end + shift) * 1e3,
                    "waiting_for": str(c.decode(need)),
                    "action": action,
                    "need": need,
                }
            )
    return (
        began,
        ended,
        (memory, peak),
        pd.DataFrame(waits, columns=["rank", "start", "end", "waiting_for", "action", "need"]),
    )


def assemble_distributed(config: RunConfig, gathered: list[dict], device, reference_loss: float) -> RunResult:
    c = config.plan.compiled
    same_host = len({payload["host"] for payload in gathered}) == 1
    walls = [step_wall_ms(gathered, step, same_host) for step in range(config.repeats)]
    shown = int(np.argsort(walls)[len(walls) // 2])  # the step with the median wall time
    durations = []
    for step in range(config.repeats):
        began, ended, _, _ = _step_arrays(c, gathered, step, same_host)
        durations.append(ended - began)
    median, low, high = median_and_spread(np.array(durations))
    began, ended, (memory, peak), waits = _step_arrays(c, gathered, shown, same_host)
    # a slot spans from its first action's start to its last action's end
    starts = began[c.slot_first_action[:-1]]
    ends = np.zeros(c.num_slots)
    np.maximum.at(ends, c.slot, ended)
    transfer_ms = transfer_estimate(c, waits, ended)
    waits = waits.drop(columns="need")
    origin = min(starts.min(), waits["start"].min() if len(waits) else np.inf)
    starts, ends = starts - origin, ends - origin
    waits["start"] -= origin
    waits["end"] -= origin
    errors = {}
    for payload in gathered:
        errors.update(payload["errors"])
    spans = []
    for step in range(config.repeats):
        b, e, _, w = _step_arrays(c, gathered, step, same_host)
        spans.append(float(e.max() - min(b.min(), w["start"].min() if len(w) else np.inf)))
    return assemble(
        config,
        Measurement(
            starts=starts,
            ends=ends,
            compute_ms=median,
            memory_bytes=memory,
            memory_peak=peak,
            transfer_ms=transfer_ms,
            waits=waits,
            loss=float(sum(p["loss"] for p in gathered)),
            reference_loss=reference_loss,
            max_grad_error=max(errors.values()),
            device=str(device) if device.type == "cuda" else "cpu",
            wall_ms_per_step=walls[shown],
            weight_bytes=tuple(int(p["weight_bytes"]) for p in sorted(gathered, key=lambda p: p["rank"])),
            clock="wall",
            makespan_spread=(min(spans), max(spans)),
            duration_min=low,
            duration_max=high,
            duration_median=median,
            notes=(
                f"distributed: wall-clock timestamps, the step with the median time of {config.repeats}; "
                f"transfer estimated at {transfer_ms:.4f} ms (median wait past the producer's end, when "
                f"the receiver was already waiting)",
            ),
        ),
    )


def step_wall_ms(gathered: list[dict], step: int, same_host: bool) -> float:
    """From the barrier that starts the step to the last rank's last completed send (what a training loop
    waits for). Across hosts, the longest rank's own span."""
    records = [payload["steps"][step] for payload in gathered]
    if same_host:
        return (max(r["finished"] for r in records) - min(r["origin"] for r in records)) * 1e3
    return max(r["finished"] - r["origin"] for r in records) * 1e3


def transfer_estimate(c: CompiledSchedule, waits: pd.DataFrame, ended_ms: np.ndarray) -> float:
    """Median of (receive done − producer done) over receives that were posted before the producer finished."""
    made = c.makes >= 0
    # hand-off key -> producer's end
    produced_at = dict(zip(c.makes[made].tolist(), ended_ms[made].tolist(), strict=True))
    latencies = [
        row.end - produced_at[row.need]
        for row in waits.itertuples(index=False)
        if row.need in produced_at and row.start <= produced_at[row.need]
    ]
    return max(0.0, float(np.median(latencies))) if latencies else 0.0
