"""GPipe: all forwards, then all backwards."""

from __future__ import annotations

from ..ir import Action, Kind, Schedule
from .common import check_sizes


def gpipe(num_ranks: int, num_microbatches: int) -> Schedule:
    """GPipe (Huang et al. 2019, §2.3): every rank runs the forward of every micro-batch, then every backward.

    Idle fraction with equal stage costs and free communication: (p−1)/(m+p−1) (GPipe §2.3). Every rank
    holds the activations of all m micro-batches at the turn from forward to backward.
    Accepts any p ≥ 1, m ≥ 1.
    """
    check_sizes("gpipe", num_ranks, num_microbatches)
    ranks = []
    for rank in range(num_ranks):
        slots = [Action(rank, Kind.F, mb) for mb in range(num_microbatches)]  # fill
        slots += [Action(rank, Kind.B, mb) for mb in range(num_microbatches)]  # drain
        ranks.append(tuple(slots))
    return Schedule("gpipe", num_ranks, num_microbatches, 1, "loop", tuple(ranks))
