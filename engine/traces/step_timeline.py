"""Step 6 of ``engine.traces.imported``: the order read as a schedule (PyTorch's CSV form, validated), and the
measured Timeline — each action from its compute start to its end, the waits before, the hand-offs as transfers
(on GPU traces from when both NCCL kernels run)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..dependencies import ScheduleError, compiled
from ..ir import Schedule
from ..pytorch_csv import read_csv
from ..timeline import Timeline
from ..validation import validate
from .actions import RankStep
from .reading import TraceError


def schedule_of(steps: dict[int, RankStep], name: str) -> Schedule:
    rows = [",".join(str(action.slot) for action in steps[rank].actions) for rank in sorted(steps)]
    try:
        reading = read_csv("\n".join(rows) + "\n", name=name)
        return validate(reading.schedule)
    except (ScheduleError, ValueError) as error:
        raise TraceError(f"the actions read do not form a complete pipeline step: {error}") from None


def measured_timeline(schedule: Schedule, steps, origins, gpu: bool = False) -> tuple[Timeline, np.ndarray, float]:
    c = compiled(schedule)
    timed = [action for rank in sorted(steps) for action in steps[rank].actions]
    ranks = [rank for rank in sorted(steps) for _ in steps[rank].actions]
    # time 0 is the step's first compute, as its makespan counts: a rank that entered its first action earlier
    # and waited for its input shows that wait from 0 (the chart's axis and the step then agree)
    lead = min(a.compute_start - origins[r] for r, a in zip(ranks, timed, strict=True)) if timed else 0.0
    origins = {rank: origin + lead for rank, origin in origins.items()}
    ms = lambda rank, us: (us - origins[rank]) / 1e3  # noqa: E731 - local unit conversion
    starts = np.array([ms(r, a.compute_start) for r, a in zip(ranks, timed, strict=True)])
    ends = np.array([ms(r, a.end) for r, a in zip(ranks, timed, strict=True)])
    waits = pd.DataFrame(
        [
            {"rank": r, "start": max(ms(r, a.start), 0.0), "end": ms(r, a.compute_start),
             "waiting_for": f"the input of {a.slot}", "action": str(a.slot)}
            for r, a in zip(ranks, timed, strict=True)
            if a.compute_start > a.start and ms(r, a.compute_start) > 0
        ],
        columns=["rank", "start", "end", "waiting_for", "action"],
    )  # fmt: skip
    arrivals = _arrivals(steps, origins)
    remote = np.flatnonzero(c.neighbour_is_remote)
    producer = c.producer_of_neighbour[remote]
    end_of = ends[c.slot]
    depart = end_of[producer]
    if gpu:  # a SendRecv kernel moves data only once its partner's runs too: the time before is a wait, not wire
        both = _both_kernels_running(steps, origins)
        depart = np.array(
            [max(d, both.get(_input_key(c, i), d)) for i, d in zip(remote.tolist(), depart.tolist(), strict=True)]
        )
    arrive = np.array(
        [max(arrivals.get(_input_key(c, i), d), d) for i, d in zip(remote.tolist(), depart.tolist(), strict=True)]
    )
    departures, arrivals_at = np.zeros(c.num_actions), np.zeros(c.num_actions)  # per consuming action
    departures[remote], arrivals_at[remote] = depart, arrive
    timeline = Timeline.from_slots(
        schedule, starts, ends, np.zeros(c.num_actions), source="measured", waits=waits,
        transfer_times=(departures, arrivals_at),
    )  # fmt: skip
    slot_ms = (ends - starts)[c.slot] / np.diff(c.slot_first_action)[c.slot]  # a pair's two halves share it
    gaps = arrive - depart
    transfer_ms = float(np.median(gaps)) if len(gaps) else 0.0
    return timeline, slot_ms, transfer_ms


def _both_kernels_running(steps, origins) -> dict[tuple[int, str, int], float]:
    """GPU traces: for each hand-off seen from both sides, when the sender's and the receiver's NCCL kernels were
    both running (ms on the common clock), by the consumer's (stage, F or B, micro-batch). Before that moment the
    product waited for its partner (drawn as a wait to leave, "made" → "depart"); after it, the data moved."""
    sent = {}
    for rank, step in steps.items():
        for hand in step.sends:
            consumer = hand.stage + 1 if hand.direction == "F" else hand.stage - 1
            sent[(consumer, hand.direction, hand.microbatch)] = (hand.start - origins[rank]) / 1e3
    received = {
        (hand.stage, hand.direction, hand.microbatch): (hand.start - origins[rank]) / 1e3
        for rank, step in steps.items()
        for hand in step.receives
    }
    return {key: max(sent[key], received[key]) for key in sent.keys() & received.keys()}


def _input_key(c, action: int) -> tuple[int, str, int]:
    kind = "F" if int(c.kind[action]) == 0 else "B"
    return int(c.stage[action]), kind, int(c.microbatch[action])


def _arrivals(steps, origins) -> dict[tuple[int, str, int], float]:
    """When each received input arrived (ms on the common clock), by (stage, F or B, micro-batch)."""
    return {
        (hand.stage, hand.direction, hand.microbatch): (hand.end - origins[rank]) / 1e3
        for rank, step in steps.items()
        for hand in step.receives
    }
