"""The schedule families and a registry, so the CLI and the app can list and build them by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir import Schedule
from .depth_first import microbatch_rounds, one_f_one_b
from .dualpipe import dualpipev
from .gpipe import gpipe
from .interleaved import interleaved_1f1b, interleaved_zero_bubble, looped_bfs
from .zero_bubble import zb_h1, zb_h2, zb_v


@dataclass(frozen=True)
class Family:
    """A schedule family as the user sees it."""

    name: str
    """Registry key, e.g. "zb-h1"."""
    build: Callable[..., Schedule]
    """Pure generator (num_ranks, num_microbatches[, num_chunks]) -> Schedule."""
    title: str
    """One line for menus."""
    fixed_chunks: int | None = 1
    """Model chunks per rank when the family fixes them (1, or 2 for the V-shaped ones); None when the user
    chooses (v ≥ 2, the ``--chunks`` option)."""
    splits_backward: bool = False
    """True when the family uses I and W instead of B."""
    minimum_microbatches: Callable[[int], int] | None = None
    """For families built for at least this many micro-batches on p ranks (then trimmed to the request)."""
    minimum_reason: str = ""
    """Why that minimum, in words, for the notice the app shows."""
    in_rounds: bool = False
    """True for the interleaved families, whose micro-batches go through the chunks in rounds."""

    @property
    def takes_chunks(self) -> bool:
        return self.fixed_chunks is None

    def built_for(self, num_ranks: int, num_microbatches: int) -> int:
        """The micro-batch count the generator builds before trimming to ``num_microbatches``."""
        if self.minimum_microbatches is None:
            return num_microbatches
        return max(num_microbatches, self.minimum_microbatches(num_ranks))

    def size_notes(self, num_ranks: int, num_microbatches: int) -> list[str]:
        """What was run when it is not simply the sizes asked for, in words (the app shows these)."""
        p, m, notes = num_ranks, num_microbatches, []
        built = self.built_for(p, m)
        if built != m:
            notes.append(
                f"{self.title} needs at least {built} micro-batches on {p} ranks ({self.minimum_reason}): "
                f"it was built for {built} and runs the first {m}; the other {built - m} were dropped, "
                f"as PyTorch does."
            )
        if self.in_rounds and m % p:
            sizes = microbatch_rounds(m, p)
            notes.append(
                f"m = {m} is not a multiple of p = {p}: the micro-batches go through the chunks in "
                f"{len(sizes)} round(s) of {' + '.join(map(str, sizes))}. "
                + (
                    "PyTorch takes the same rounds."
                    if len(set(sizes)) == 1
                    else "PyTorch refuses this m (its rounds must divide m evenly); the lab makes the first "
                    "round(s) one larger."
                )
                + " The closed form (p − 1)/(v·m) assumes m is a multiple of p."
            )
        return notes


DEFAULT_CHUNKS = 2
"""v for a family that takes chunks when none is given."""

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("gpipe", gpipe, "GPipe"),
        Family("1f1b", one_f_one_b, "1F1B (PipeDream-flush)"),
        Family("interleaved-1f1b", interleaved_1f1b, "Interleaved 1F1B (Megatron)", fixed_chunks=None, in_rounds=True),
        Family("looped-bfs", looped_bfs, "Looped BFS", fixed_chunks=None),
        Family("zb-h1", zb_h1, "ZB-H1 (zero bubble, 1F1B memory)", splits_backward=True),
        Family("zb-h2", zb_h2, "ZB-H2 (zero bubble, 2p−1 memory)", splits_backward=True),
        Family(
            "interleaved-zb",
            interleaved_zero_bubble,
            "Interleaved zero bubble (ZB1P, v chunks)",
            fixed_chunks=None,
            splits_backward=True,
            in_rounds=True,
        ),
        Family(
            "zb-v",
            zb_v,
            "ZB-V (V placement)",
            fixed_chunks=2,
            splits_backward=True,
            minimum_microbatches=lambda p: 2 * p - 1,
            minimum_reason="its warm-up alone starts 2p−1 micro-batches on chunk 0",
        ),
        Family(
            "dualpipev",
            dualpipev,
            "DualPipeV (overlapped F&B)",
            fixed_chunks=2,
            splits_backward=True,
            minimum_microbatches=lambda p: 2 * p,
            minimum_reason="its steady phase needs m ≥ 2p to overlap a forward with a backward on every rank",
        ),
    )
}


def build_schedule(name: str, num_ranks: int, num_microbatches: int, num_chunks: int | None = None) -> Schedule:
    """Build a family's schedule by name; ValueError for an unknown name or unaccepted sizes."""
    family = FAMILIES.get(name)
    if family is None:
        raise ValueError(f"unknown schedule {name!r}; choose one of: {', '.join(FAMILIES)}")
    if family.takes_chunks:
        return family.build(num_ranks, num_microbatches, DEFAULT_CHUNKS if num_chunks is None else num_chunks)
    fixed = family.fixed_chunks
    if num_chunks is not None and num_chunks != fixed:
        raise ValueError(
            f"{name} always has {fixed} chunk(s) per rank, so it takes no chunks option (got "
            f"{num_chunks}); only {', '.join(n for n, f in FAMILIES.items() if f.takes_chunks)} take chunks"
        )
    return family.build(num_ranks, num_microbatches)
