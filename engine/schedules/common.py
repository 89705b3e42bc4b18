"""Helpers shared by the schedule generators: argument checks with the arithmetic in the message."""

from __future__ import annotations

from ..ir import Action, Kind, Schedule, slot_actions

MAX_RANKS = 256
MAX_MICROBATCHES = 16384


def check_sizes(family: str, num_ranks: int, num_microbatches: int) -> None:
    """User errors are ValueError with the numbers in the message (torchtitan's rule)."""
    for label, value, limit in (("ranks", num_ranks, MAX_RANKS), ("microbatches", num_microbatches, MAX_MICROBATCHES)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{family}: {label} must be a whole number, got {value!r}")
        if not 1 <= value <= limit:
            raise ValueError(f"{family}: {label} must be between 1 and {limit}, got {value}")


def check_chunks(family: str, chunks: int, *, minimum: int, maximum: int = 64) -> None:
    if isinstance(chunks, bool) or not isinstance(chunks, int):
        raise ValueError(f"{family}: chunks must be a whole number, got {chunks!r}")
    if not minimum <= chunks <= maximum:
        raise ValueError(f"{family}: chunks (stages per rank) must be between {minimum} and {maximum}, got {chunks}")


def forward(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.F, microbatch)


def backward(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.B, microbatch)


def backward_input(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.I, microbatch)


def backward_weight(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.W, microbatch)


def keep_microbatches(schedule, num_microbatches: int):
    """The same schedule with every action of micro-batch ≥ ``num_microbatches`` removed.

    Families whose pattern needs more micro-batches (a multiple of p, or at least 2p−1) are built for the
    next accepted count and trimmed, as PyTorch's ScheduleZBVZeroBubble does. Trimming keeps the schedule
    valid: the remaining dependencies are a subset, and each rank's order is a subsequence of an order that
    had no cycle, so it has none either.
    """
    if num_microbatches == schedule.num_microbatches:
        return schedule
    ranks = []
    for slots in schedule.ranks:
        kept = []
        for slot in slots:
            actions = [a for a in slot_actions(slot) if a.microbatch < num_microbatches]
            if len(actions) == 2:
                kept.append(slot)
            elif actions:  # half of an overlapped pair: it runs alone
                kept.append(actions[0])
        ranks.append(tuple(kept))
    return Schedule(schedule.name, schedule.num_ranks, num_microbatches, schedule.stages_per_rank,
                    schedule.placement, tuple(ranks))
