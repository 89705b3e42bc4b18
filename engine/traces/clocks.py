"""Putting every rank's trace on one clock (step 5 of ``engine.traces.imported``).

Absolute time is ``baseTimeNanoseconds`` + ``ts``; ranks on one host share that clock. Traces from several
hosts may not: when a hand-off seems to arrive before it left (by more than ``CAUSALITY_SLACK_MS``), each rank's
offset is estimated from the hand-offs both ways, and applied; the user's own offsets replace it. Labelled and
inferred actions (``engine.traces.inferred``) alike: both pair each send with its receive.

The estimate: a receive cannot end before its send began, so the quickest hand-off each way bounds the offset
between two neighbours, and the middle of those bounds is taken (NTP's estimate, on its fastest samples: a
median one-way time also counts how long the receiver was busy elsewhere, which is not the same both ways, and
was milliseconds off on one host). Offsets are chained from rank 0 through neighbours that exchanged data both
ways; a rank no such chain reaches has a clock nothing bounds (``unbounded``).
"""

from __future__ import annotations

from .actions import RankStep
from .reading import RankTrace, TraceError

MAX_OFFSET_MS = 86_400_000.0
"""A clock offset of more than a day between two hosts of one job is no offset (and 1e308 ms is no number)."""
CAUSALITY_SLACK_MS = 1.0
"""A receive may seem to end this much before its send began (timer resolution) before the clocks are
taken to differ."""


def common_clock(
    by_rank: dict[int, RankTrace], steps: dict[int, RankStep], given, must_bound: bool = False
) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """Each rank's origin (µs on its own trace clock) such that ``(ts − origin) / 1000`` is ms on one clock from
    the step's first action, and the estimated and the applied offsets (ms). ``must_bound``: a TraceError when
    some rank's offset cannot be bounded and the user gave none (unlabelled traces: nothing else says the ranks
    shared a clock, and one rank seconds ahead would read as a step seconds long, almost all bubble)."""
    reference = min(trace.base_ns for trace in by_rank.values())
    shift = {rank: (trace.base_ns - reference) / 1e3 for rank, trace in by_rank.items()}  # µs, exact integers
    estimated = _estimated_offsets(steps, shift)
    if must_bound and given is None:
        refuse_unbounded(steps, estimated)
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


def unbounded(steps: dict[int, RankStep], estimated: dict[int, float]) -> list[int]:
    """The ranks whose offset from rank 0 no chain of two-way hand-offs bounds (rank 0 is the reference)."""
    return sorted(rank for rank in steps if rank != 0 and rank not in estimated)


def refuse_unbounded(steps: dict[int, RankStep], estimated: dict[int, float]) -> None:
    """TraceError naming the ranks whose clocks cannot be put on rank 0's, instead of a bubble read across them."""
    loose = unbounded(steps, estimated)
    if loose:
        named = ", ".join(map(str, loose))
        raise TraceError(
            f"the clock of rank(s) {named} cannot be put on rank 0's: no send was paired with its receive both ways "
            "between it and another rank (a receive cannot end before its send began, which bounds an offset), and "
            "traces from several hosts may differ by seconds, so no bubble is read; give each rank's offset in ms "
            f"(--offsets {loose[0]}:0 if every rank ran on one host)"
        )


def _estimated_offsets(steps, shift) -> dict[int, float]:
    """Per rank, the offset (ms) in the middle of what the quickest hand-off each way allows (the module
    docstring), chained from rank 0 through neighbours that exchanged data both ways."""
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
            # offset b − offset a ≥ −min(there) (a's sends began before b's receives ended), ≤ min(back)
            offsets[b] = offsets[a] - (min(there) - min(back)) / 2 / 1e3
            changed = True
    return {rank: round(value, 6) for rank, value in offsets.items() if rank != 0}
