"""Rank 0 turns every rank's events into one RunResult.

On one host every process reads the same monotonic clock, so times are compared as they are; across hosts
(torchrun) each rank's times count from its own exit from the common barrier that starts the step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import RunConfig
from ..result import RunResult, assemble


def assemble_distributed(config: RunConfig, gathered: list[dict], device, reference_loss: float) -> RunResult:
    c = config.plan.compiled
    began_ms, ended_ms, memory = np.zeros(c.num_actions), np.zeros(c.num_actions), np.zeros(c.num_actions)
    wait_rows = []
    same_host = len({payload["host"] for payload in gathered}) == 1
    for payload in gathered:
        rank = payload["rank"]
        shift = payload["origin"] if same_host else 0.0  # back to the shared clock, see the module docstring
        first = int(c.slot_first_action[c.rank_first_slot[rank]])  # a rank's events are its actions in order
        for offset, (began, ended, bytes_held) in enumerate(payload["events"]):
            began_ms[first + offset], ended_ms[first + offset] = (began + shift) * 1e3, (ended + shift) * 1e3
            memory[first + offset] = bytes_held
        for began, ended, need, action in payload["waits"]:
            wait_rows.append({"rank": rank, "start": (began + shift) * 1e3, "end": (ended + shift) * 1e3,
                              "waiting_for": str(c.decode(need)), "action": action, "need": need})
    # a slot spans from its first action's start to its last action's end
    starts = began_ms[c.slot_first_action[:-1]]
    ends = np.zeros(c.num_slots)
    np.maximum.at(ends, c.slot, ended_ms)
    waits = pd.DataFrame(wait_rows, columns=["rank", "start", "end", "waiting_for", "action", "need"])
    transfer_ms = transfer_estimate(c, waits, ended_ms)
    waits = waits.drop(columns="need")
    origin = min(starts.min(), waits["start"].min() if len(waits) else np.inf)
    starts, ends = starts - origin, ends - origin
    waits["start"] -= origin
    waits["end"] -= origin
    errors = {}
    for payload in gathered:
        errors.update(payload["errors"])
    return assemble(config, starts=starts, ends=ends, compute_ms=ended_ms - began_ms, memory_bytes=memory,
                    transfer_ms=transfer_ms, waits=waits, loss=float(sum(p["loss"] for p in gathered)),
                    reference_loss=reference_loss, max_grad_error=max(errors.values()),
                    device=str(device) if device.type == "cuda" else "cpu",
                    wall_ms_per_step=step_wall_ms(gathered, same_host),
                    notes=(f"distributed: wall-clock timestamps; transfer estimated at {transfer_ms:.4f} ms "
                           f"(median wait past the producer's end, when the receiver was already waiting)",))


def step_wall_ms(gathered: list[dict], same_host: bool) -> float:
    """From the barrier that starts the step to the last rank's last completed send (what a training loop
    waits for). Across hosts, the longest rank's own span."""
    if same_host:
        return (max(p["finished"] for p in gathered) - min(p["origin"] for p in gathered)) * 1e3
    return max(p["finished"] - p["origin"] for p in gathered) * 1e3


def transfer_estimate(c, waits: pd.DataFrame, ended_ms: np.ndarray) -> float:
    """Median of (receive done − producer done) over receives that were posted before the producer finished."""
    made = c.makes >= 0
    produced_at = dict(zip(c.makes[made].tolist(), ended_ms[made].tolist()))  # hand-off key -> producer's end
    latencies = [row.end - produced_at[row.need] for row in waits.itertuples(index=False)
                 if row.need in produced_at and row.start <= produced_at[row.need]]
    return max(0.0, float(np.median(latencies))) if latencies else 0.0
