"""Putting every rank's trace on one clock (step 5 of ``engine.traces.imported``).

Absolute time is ``baseTimeNanoseconds`` + ``ts``; ranks on one host share that clock. Traces from several
hosts may not: when a hand-off seems to arrive before it left (by more than ``CAUSALITY_SLACK_MS``), each rank's
offset is estimated from the hand-offs both ways — half the difference of the two directions' median one-way
times, NTP's estimate — chained from rank 0, and applied; the user's own offsets replace it.
"""

from __future__ import annotations

from statistics import median

from .actions import RankStep
from .reading import RankTrace, TraceError

MAX_OFFSET_MS = 86_400_000.0
"""A clock offset of more than a day between two hosts of one job is no offset (and 1e308 ms is no number)."""
CAUSALITY_SLACK_MS = 1.0
"""A receive may seem to end this much before its send began (timer resolution) before the clocks are
taken to differ."""


def common_clock(
    by_rank: dict[int, RankTrace], steps: dict[int, RankStep], given
) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """Each rank's origin (µs on its own trace clock) such that ``(ts − origin) / 1000`` is ms on one clock from
    the step's first action, and the estimated and the applied offsets (ms)."""
    reference = min(trace.base_ns for trace in by_rank.values())
    shift = {rank: (trace.base_ns - reference) / 1e3 for rank, trace in by_rank.items()}  # µs, exact integers
    estimated = _estimated_offsets(steps, shift)
    violated = _causality_broken(steps, shift)
    unknown = sorted(set(given or {}) - set(shift))
    if unknown:
        raise TraceError(
            f"clock offsets given for rank(s) {', '.join(map(str, unknown))}, which the traces do not have"
        )
    too_far = {rank: ms for rank, ms in (given or {}).items() if not abs(ms) <= MAX_OFFSET_MS}
    if too_far:
        rank, ms = next(iter(too_far.items()))
        raise TraceError(
            f"a clock offset of {ms:g} ms for rank {rank}; the lab takes offsets of at most a day "
            f"({MAX_OFFSET_MS:,.0f} ms) either way"
        )
    applied = dict(given) if given is not None else (estimated if violated else {})
    for rank, offset in applied.items():
        if rank in shift:
            shift[rank] += offset * 1e3
    first = min(step.actions[0].start + shift[rank] for rank, step in steps.items())
    return {rank: first - shift[rank] for rank in steps}, estimated, applied


def _handoffs(steps, shift):
    """(sender rank, receiver rank, departure µs, arrival µs) of every hand-off seen from both sides."""
    sent = {}
    for rank, step in steps.items():
        for hand in step.sends:
            target = hand.stage + 1 if hand.direction == "F" else hand.stage - 1
            sent[(target, hand.direction, hand.microbatch)] = (rank, hand.start + shift[rank])
    found = []
    for rank, step in steps.items():
        for hand in step.receives:
            key = (hand.stage, hand.direction, hand.microbatch)
            if key in sent and sent[key][0] != rank:
                found.append((sent[key][0], rank, sent[key][1], hand.end + shift[rank]))
    return found


def _causality_broken(steps, shift) -> bool:
    return any(arrive < depart - CAUSALITY_SLACK_MS * 1e3 for _, _, depart, arrive in _handoffs(steps, shift))


def _estimated_offsets(steps, shift) -> dict[int, float]:
    """Per rank, the offset (ms) that makes hand-offs each way equally long (NTP's estimate), chained from
    rank 0 through neighbours that exchanged data both ways."""
    one_way: dict[tuple[int, int], list[float]] = {}
    for source, target, depart, arrive in _handoffs(steps, {rank: 0.0 for rank in shift} | shift):
        one_way.setdefault((source, target), []).append(arrive - depart)
    offsets = {0: 0.0} if 0 in steps else {}
    changed = True
    while changed:
        changed = False
        for (a, b), there in one_way.items():
            back = one_way.get((b, a))
            if back is None or a not in offsets or b in offsets:
                continue
            offsets[b] = offsets[a] - (median(there) - median(back)) / 2 / 1e3
            changed = True
    return {rank: round(value, 6) for rank, value in offsets.items() if rank != 0}
