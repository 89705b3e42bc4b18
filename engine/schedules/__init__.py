"""The schedule families and a registry, so the CLI and the app can list and build them by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir import Schedule
from .dualpipe import dualpipev
from .gpipe import gpipe
from .interleaved import interleaved_1f1b, looped_bfs
from .one_f_one_b import one_f_one_b
from .zero_bubble import zb_h1, zb_h2, zb_v


@dataclass(frozen=True)
class Family:
    """A schedule family as the user sees it."""

    name: str
    """Registry key, e.g. "zb-h1"."""
    build: Callable[..., Schedule]
    """Pure generator (num_ranks, num_microbatches[, chunks]) -> Schedule."""
    title: str
    """One line for menus."""
    takes_chunks: bool = False
    """True when the family has a stages-per-rank parameter (v ≥ 2)."""
    splits_backward: bool = False
    """True when the family uses I and W instead of B."""
    fixed_stages_per_rank: int = 1
    """Stages per rank of a family without a chunks option (2 for the V-shaped ones)."""


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("gpipe", gpipe, "GPipe"),
        Family("1f1b", one_f_one_b, "1F1B (PipeDream-flush)"),
        Family("interleaved-1f1b", interleaved_1f1b, "Interleaved 1F1B (Megatron)", takes_chunks=True),
        Family("looped-bfs", looped_bfs, "Looped BFS", takes_chunks=True),
        Family("zb-h1", zb_h1, "ZB-H1 (zero bubble, 1F1B memory)", splits_backward=True),
        Family("zb-h2", zb_h2, "ZB-H2 (zero bubble, 2p−1 memory)", splits_backward=True),
        Family("zb-v", zb_v, "ZB-V (V placement)", splits_backward=True, fixed_stages_per_rank=2),
        Family("dualpipev", dualpipev, "DualPipeV (overlapped F&B)", splits_backward=True, fixed_stages_per_rank=2),
    )
}


def build_schedule(name: str, num_ranks: int, num_microbatches: int, chunks: int | None = None) -> Schedule:
    """Build a family's schedule by name; ValueError for an unknown name or unaccepted sizes."""
    family = FAMILIES.get(name)
    if family is None:
        raise ValueError(f"unknown schedule {name!r}; choose one of: {', '.join(FAMILIES)}")
    if family.takes_chunks:
        return family.build(num_ranks, num_microbatches, 2 if chunks is None else chunks)
    fixed = family.fixed_stages_per_rank
    if chunks is not None and chunks != fixed:
        raise ValueError(f"{name} always has {fixed} stage(s) per rank, so it takes no chunks option (got {chunks}); "
                         f"only {', '.join(n for n, f in FAMILIES.items() if f.takes_chunks)} take chunks")
    return family.build(num_ranks, num_microbatches)
