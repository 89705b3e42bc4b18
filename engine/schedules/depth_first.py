"""The 1F1B shape, which five families share: a warm-up of forwards, then one forward and one backward in
turn, then the remaining backwards — with v model chunks per rank, and optionally with the backward split
into I and a W held back to fill bubbles.

This is PyTorch's ``_get_1f1b_rank_ops`` (``torch.distributed.pipelining.schedules``), which builds
``Schedule1F1B``, ``ScheduleInterleaved1F1B`` and ``ScheduleInterleavedZeroBubble``:

    family              chunks v   warm-up hops ×   backward   W held back for
    1f1b                1          1                B          —
    interleaved-1f1b    ≥ 2        2 (Megatron)     B          —
    zb-h1               1          1                I + W      r rounds
    zb-h2               1          2                I + W      2r rounds
    interleaved-zb      ≥ 2        1                I + W      r rounds

Legend: p ranks, m micro-batches, r this rank.
"""

from __future__ import annotations

from collections import deque

from ..ir import Action, Kind, Schedule
from .common import check_sizes


def microbatch_rounds(num_microbatches: int, num_ranks: int) -> list[int]:
    """How many micro-batches each round takes through all the chunks before the next round starts.

    PyTorch's flexible interleaving: ``max(1, m // p)`` rounds. When m divides evenly into them this is
    PyTorch's ``microbatches_per_round`` (Megatron's p when m is a multiple of p); otherwise (PyTorch refuses
    those m) the rounds differ by one, larger first, so every m ≥ 1 runs all of its micro-batches.
    """
    rounds = max(1, num_microbatches // num_ranks)
    base, extra = divmod(num_microbatches, rounds)
    return [base + 1] * extra + [base] * (rounds - extra)


def depth_first_order(
    rank: int,
    num_ranks: int,
    num_microbatches: int,
    num_chunks: int,
    *,
    warmup_hops: int,
    split_backward: bool,
    weight_lag: int = 0,
) -> list[Action]:
    """One rank's list in the 1F1B shape (see the module docstring for the parameters of each family).

    Forwards visit the chunks round by round: all micro-batches of a round through chunk 0, then chunk 1, …;
    backwards visit them in reverse chunk order. Rank r warms up with (v−1)·(first round) + hops·(p−1−r)
    forwards — enough for its first backward's input to arrive — capped at the m·v forwards there are.
    """
    p, m, v = num_ranks, num_microbatches, num_chunks
    sizes = microbatch_rounds(m, p)
    forward_chunks = [chunk for size in sizes for chunk in range(v) for _ in range(size)]
    backward_chunks = [v - 1 - chunk for chunk in forward_chunks]
    total = m * v
    warmup = min((v - 1) * sizes[0] + warmup_hops * (p - 1 - rank), total)
    backward_kind = Kind.I if split_backward else Kind.B
    next_forward, next_backward = [0] * v, [0] * v  # next micro-batch of each chunk (plain lists: fast)

    def forward(k: int) -> Action:
        chunk = forward_chunks[k]
        next_forward[chunk] += 1
        return Action(chunk * p + rank, Kind.F, next_forward[chunk] - 1)

    def backward(k: int) -> Action:
        chunk = backward_chunks[k]
        next_backward[chunk] += 1
        return Action(chunk * p + rank, backward_kind, next_backward[chunk] - 1)

    slots = [forward(k) for k in range(warmup)]  # warm-up
    held_weights: deque[Action] = deque()
    for k in range(warmup, total + warmup):
        if k < total:  # steady 1F1B: one forward, then one backward
            slots.append(forward(k))
        gradient = backward(k - warmup)  # cool-down once the forwards run out
        slots.append(gradient)
        if split_backward:
            held_weights.append(Action(gradient.stage, Kind.W, gradient.microbatch))
            if k - warmup >= weight_lag:
                slots.append(held_weights.popleft())
    slots += held_weights  # the held-back W's fill the tail
    return slots


def depth_first_schedule(
    family: str,
    num_ranks: int,
    num_microbatches: int,
    num_chunks: int = 1,
    *,
    warmup_hops: int,
    split_backward: bool,
    weight_lag_per_rank: int = 0,
) -> Schedule:
    check_sizes(family, num_ranks, num_microbatches, num_chunks)
    ranks = tuple(
        tuple(
            depth_first_order(
                rank,
                num_ranks,
                num_microbatches,
                num_chunks,
                warmup_hops=warmup_hops,
                split_backward=split_backward,
                weight_lag=weight_lag_per_rank * rank,
            )
        )
        for rank in range(num_ranks)
    )
    return Schedule(family, num_ranks, num_microbatches, num_chunks, "loop", ranks)
