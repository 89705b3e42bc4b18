"""Helpers shared by the schedule generators: argument checks with the arithmetic in the message, and
trimming a schedule built for more micro-batches."""

from __future__ import annotations

from ..ir import Schedule, slot_actions
from ..limits import MAX_CHUNKS, MAX_MICROBATCHES, MAX_RANKS, check_pairs, whole_number


def check_sizes(family: str, num_ranks: int, num_microbatches: int, num_chunks: int = 1) -> None:
    """User errors are ValueError with the numbers in the message (torchtitan's rule)."""
    whole_number("ranks", num_ranks, 1, MAX_RANKS, family)
    whole_number("microbatches", num_microbatches, 1, MAX_MICROBATCHES, family)
    check_pairs(num_ranks, num_microbatches, num_chunks, family)


def check_chunks(family: str, num_chunks: int, *, minimum: int) -> None:
    whole_number("chunks (model chunks per rank, v)", num_chunks, minimum, MAX_CHUNKS, family)


def keep_microbatches(schedule: Schedule, num_microbatches: int) -> Schedule:
    """The same schedule with every action of micro-batch ≥ ``num_microbatches`` removed.

    Families whose pattern needs more micro-batches (at least 2p−1, or 2p) are built for the next accepted
    count and trimmed, as PyTorch's ScheduleZBVZeroBubble does. Trimming keeps the schedule valid: the
    remaining dependencies are a subset, and each rank's order is a subsequence of an order that had no
    cycle, so it has none either.
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
    return Schedule(
        schedule.name, schedule.num_ranks, num_microbatches, schedule.num_chunks, schedule.placement, tuple(ranks)
    )
