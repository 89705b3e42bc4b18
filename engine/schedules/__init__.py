"""The schedule families and their registry, so the CLI and the app can list and build them by name.

Each family is one module that defines ``FAMILY`` (``family.Family``: generator, titles, shape, closed forms,
story); adding a family is that module plus one line below.
"""

from __future__ import annotations

from ..ir import Schedule
from . import (
    dualpipe,
    dualpipev,
    gpipe,
    interleaved_1f1b,
    interleaved_zb,
    looped_bfs,
    one_f_one_b,
    v_half,
    v_min,
    zb_h1,
    zb_h2,
    zb_v,
)
from .family import Family

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        gpipe.FAMILY,
        one_f_one_b.FAMILY,
        interleaved_1f1b.FAMILY,
        looped_bfs.FAMILY,
        zb_h1.FAMILY,
        zb_h2.FAMILY,
        interleaved_zb.FAMILY,
        zb_v.FAMILY,
        dualpipev.FAMILY,
        dualpipe.FAMILY,
        v_half.FAMILY,
        v_min.FAMILY,
    )
}

DEFAULT_CHUNKS = 2
"""v for a family that takes chunks when none is given."""


def build_schedule(name: str, num_ranks: int, num_microbatches: int, num_chunks: int | None = None) -> Schedule:
    """Build a family's schedule by name; ValueError for an unknown name or unaccepted sizes."""
    family = FAMILIES.get(name)
    if family is None:
        raise ValueError(f"unknown schedule {name!r}; choose one of: {', '.join(FAMILIES)}")
    if family.takes_chunks:
        return family.build(num_ranks, num_microbatches, DEFAULT_CHUNKS if num_chunks is None else num_chunks)
    fixed = family.fixed_chunks
    if num_chunks is not None and num_chunks != fixed:
        takers = ", ".join(n for n, f in FAMILIES.items() if f.takes_chunks)
        raise ValueError(
            f"{name} always has {fixed} chunk(s) per rank, so it takes no chunks option (got "
            f"{num_chunks}); only {takers} take chunks"
        )
    return family.build(num_ranks, num_microbatches)


__all__ = ["DEFAULT_CHUNKS", "FAMILIES", "Family", "build_schedule"]
