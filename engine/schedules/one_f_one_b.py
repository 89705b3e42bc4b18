"""1F1B (PipeDream-flush): a short warm-up, then alternate one forward and one backward."""

from __future__ import annotations

from ..ir import Schedule
from .common import backward, check_sizes, forward


def one_f_one_b(num_ranks: int, num_microbatches: int) -> Schedule:
    """1F1B, the PipeDream-flush schedule (Narayanan et al. 2021, "Memory-efficient pipeline-parallel DNN
    training", §3; Megatron-LM's non-interleaved schedule).

    Rank r runs ``min(p−1−r, m)`` warm-up forwards, then alternates forward and backward, then drains the
    remaining backwards. Same idle time as GPipe, (p−1)/(m+p−1) with equal costs, but rank r never holds
    more than ``min(p−r, m)`` micro-batches of activations instead of m. Accepts any p ≥ 1, m ≥ 1.
    """
    check_sizes("1f1b", num_ranks, num_microbatches)
    p, m = num_ranks, num_microbatches
    ranks = []
    for rank in range(p):
        warmup = min(p - 1 - rank, m)
        slots = [forward(rank, mb) for mb in range(warmup)]  # warm-up
        for step in range(m - warmup):  # steady 1F1B
            slots += [forward(rank, warmup + step), backward(rank, step)]
        slots += [backward(rank, mb) for mb in range(m - warmup, m)]  # cool-down
        ranks.append(tuple(slots))
    return Schedule("1f1b", p, m, 1, "loop", tuple(ranks))
