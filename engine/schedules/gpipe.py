"""GPipe: all forwards, then all backwards (Huang et al. 2019, §2.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import ClosedForm, Setting, fill_and_drain, held
from ..ir import Action, Kind, Schedule
from .common import check_sizes
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


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


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return fill_and_drain(s, timeline, "GPipe §2.3 (Huang et al. 2019)") + [
        held(
            s,
            timeline,
            "peak activation memory, micro-batches held at once",
            "m",
            f"{s.m}",
            s.m,
            "GPipe: every forward runs before any backward",
            [],
        )
    ]


FAMILY = Family(
    name="gpipe",
    build=gpipe,
    pytorch_class="ScheduleGPipe",
    title="GPipe",
    source="Huang et al. 2019, GPipe §2.3",
    story="Every rank runs all m forwards, then all m backwards. The pipe fills for p − 1 steps and drains "
    "for p − 1 steps, so of the m + p − 1 steps each rank works m; and it holds every micro-batch's "
    "activations at the turn from forward to backward.",
    forms=closed_forms,
)
