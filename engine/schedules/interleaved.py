"""Interleaved 1F1B (Megatron-LM virtual pipeline stages) and its breadth-first relative, looped BFS."""

from __future__ import annotations

from ..ir import Schedule
from .common import backward, check_chunks, check_sizes, forward, keep_microbatches


def interleaved_1f1b(num_ranks: int, num_microbatches: int, chunks: int = 2) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. 2021, "Efficient large-scale language model training on GPU
    clusters using Megatron-LM", §2.2.2).

    Each rank holds v = ``chunks`` model chunks; stage s = chunk·p + rank (loop placement). Work is taken in
    groups of p micro-batches per chunk: the k-th forward of a rank is chunk ``(k // p) mod v``, micro-batch
    ``(k // (p·v))·p + k mod p``; backwards visit the chunks in reverse. Rank r warms up with
    ``(p−r−1)·2 + (v−1)·p`` forwards (Megatron's ``num_warmup_microbatches``), then alternates 1F1B.
    Bubble ratio idle/busy = (p−1)/(v·m) with equal costs (the paper's formula).

    Megatron's ordering needs m to be a multiple of p; any other m is built for the next multiple of p and
    the extra micro-batches are dropped (``keep_microbatches``), so every m ≥ 1 is accepted. The closed
    form holds for multiples of p.
    """
    family = "interleaved-1f1b"
    check_sizes(family, num_ranks, num_microbatches)
    check_chunks(family, chunks, minimum=2)
    p, m, v = num_ranks, num_microbatches, chunks
    requested, m = m, -(-m // p) * p  # the next multiple of p; extra micro-batches are trimmed at the end
    total = m * v

    def forward_action(k: int, rank: int):
        chunk = (k // p) % v
        return forward(chunk * p + rank, (k // (p * v)) * p + k % p)

    def backward_action(k: int, rank: int):
        chunk = v - 1 - (k // p) % v
        return backward(chunk * p + rank, (k // (p * v)) * p + k % p)

    ranks = []
    for rank in range(p):
        warmup = min((p - rank - 1) * 2 + (v - 1) * p, total)
        slots = [forward_action(k, rank) for k in range(warmup)]  # warm-up
        for step in range(total - warmup):  # steady 1F1B
            slots += [forward_action(warmup + step, rank), backward_action(step, rank)]
        slots += [backward_action(k, rank) for k in range(total - warmup, total)]  # cool-down
        ranks.append(tuple(slots))
    return keep_microbatches(Schedule(family, p, m, v, "loop", tuple(ranks)), requested)


def looped_bfs(num_ranks: int, num_microbatches: int, chunks: int = 2) -> Schedule:
    """Looped BFS (Lamy-Poirier 2023, "Breadth-first pipeline parallelism"; PyTorch ``ScheduleLoopedBFS``).

    Loop placement with v chunks per rank; each rank runs every micro-batch through its first chunk, then
    its second, …, then the backwards chunk by chunk in reverse, last micro-batch first (as PyTorch's). GPipe-like memory (all m micro-batches
    of every chunk), smaller bubble than GPipe because the ramp is a chunk, not a rank's whole share.
    Accepts any p ≥ 1, m ≥ 1, v ≥ 2.
    """
    family = "looped-bfs"
    check_sizes(family, num_ranks, num_microbatches)
    check_chunks(family, chunks, minimum=2)
    p, m, v = num_ranks, num_microbatches, chunks
    ranks = []
    for rank in range(p):
        slots = [forward(chunk * p + rank, mb) for chunk in range(v) for mb in range(m)]  # fill, chunk by chunk
        slots += [backward(chunk * p + rank, mb) for chunk in reversed(range(v)) for mb in reversed(range(m))]  # drain
        ranks.append(tuple(slots))
    return Schedule(family, p, m, v, "loop", tuple(ranks))
