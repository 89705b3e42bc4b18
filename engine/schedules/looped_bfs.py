"""Looped BFS: v chunks per rank like interleaved 1F1B, breadth first like GPipe."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import ClosedForm, Setting, held, interleaved_bubble
from ..ir import Action, Kind, Schedule
from .common import check_chunks, check_sizes
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


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


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return [
        interleaved_bubble(s, timeline),
        held(
            s,
            timeline,
            "peak activation memory, micro-batches held at once",
            "m",
            f"{s.m}",
            s.m,
            "breadth first: all forwards first",
            [],
        ),
    ]


FAMILY = Family(
    name="looped-bfs",
    build=looped_bfs,
    pytorch_class="ScheduleLoopedBFS",
    title="Looped BFS",
    source="Lamy-Poirier 2023, Breadth-first pipeline parallelism",
    story="Like interleaved 1F1B, v chunks per rank shorten the fill and drain; but every micro-batch "
    "goes through a chunk before the next chunk starts, so memory is GPipe's.",
    fixed_chunks=None,
    forms=closed_forms,
)
