"""Several model chunks per rank: interleaved 1F1B (Megatron-LM), interleaved zero bubble (PyTorch's
``ScheduleInterleavedZeroBubble``) and the breadth-first looped BFS."""

from __future__ import annotations

from ..ir import Action, Kind, Schedule
from .common import check_chunks, check_sizes
from .depth_first import depth_first_schedule


def interleaved_1f1b(num_ranks: int, num_microbatches: int, num_chunks: int = 2) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. 2021, "Efficient large-scale language model training on GPU
    clusters using Megatron-LM", §2.2.2; PyTorch ``ScheduleInterleaved1F1B``).

    Each rank holds v = ``num_chunks`` model chunks; stage s = chunk·p + rank (loop placement). Micro-batches
    go through the chunks in rounds (``depth_first.microbatch_rounds``: p per round when m is a multiple of
    p, as in Megatron; PyTorch's flexible rounds otherwise). Rank r warms up with (v−1)·(round) + 2(p−1−r)
    forwards (Megatron's ``num_warmup_microbatches``), then alternates 1F1B. Bubble ratio idle/busy
    = (p−1)/(v·m) with equal costs when m is a multiple of p (the paper's formula). Accepts any m ≥ 1.
    """
    family = "interleaved-1f1b"
    check_chunks(family, num_chunks, minimum=2)
    return depth_first_schedule(family, num_ranks, num_microbatches, num_chunks, warmup_hops=2, split_backward=False)


def interleaved_zero_bubble(num_ranks: int, num_microbatches: int, num_chunks: int = 2) -> Schedule:
    """Interleaved zero bubble (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", the ZB1P schedule with
    v chunks per rank; PyTorch ``ScheduleInterleavedZeroBubble``, whose one-chunk case is ZB-H1).

    Interleaved 1F1B's order of chunks and rounds, with a warm-up of (v−1)·(round) + (p−1−r) forwards and
    the backward split: rank r runs I where interleaved 1F1B runs B, and holds back each W for r rounds;
    the held-back W's fill the cool-down. Accepts any m ≥ 1, v ≥ 2.
    """
    family = "interleaved-zb"
    check_chunks(family, num_chunks, minimum=2)
    return depth_first_schedule(
        family, num_ranks, num_microbatches, num_chunks, warmup_hops=1, split_backward=True, weight_lag_per_rank=1
    )


def looped_bfs(num_ranks: int, num_microbatches: int, num_chunks: int = 2) -> Schedule:
    """Looped BFS (Lamy-Poirier 2023, "Breadth-first pipeline parallelism"; PyTorch ``ScheduleLoopedBFS``).

    Loop placement with v chunks per rank; each rank runs every micro-batch through its first chunk, then
    its second, …, then the backwards chunk by chunk in reverse, last micro-batch first (as PyTorch's).
    GPipe-like memory (all m micro-batches of every chunk), smaller bubble than GPipe because the ramp is a
    chunk, not a rank's whole share. Accepts any p ≥ 1, m ≥ 1, v ≥ 2.
    """
    family = "looped-bfs"
    check_chunks(family, num_chunks, minimum=2)
    check_sizes(family, num_ranks, num_microbatches, num_chunks)
    p, m, v = num_ranks, num_microbatches, num_chunks
    ranks = []
    for rank in range(p):
        slots = [Action(chunk * p + rank, Kind.F, mb) for chunk in range(v) for mb in range(m)]  # fill
        slots += [
            Action(chunk * p + rank, Kind.B, mb) for chunk in reversed(range(v)) for mb in reversed(range(m))
        ]  # drain
        ranks.append(tuple(slots))
    return Schedule(family, p, m, v, "loop", tuple(ranks))
