"""Interleaved zero bubble: ZB-H1's held-back W's over interleaved 1F1B's v chunks per rank."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import (
    M_AT_LEAST_P,
    M_MULTIPLE_OF_P,
    NO_RECOMPUTE,
    ZERO_BUBBLE,
    ClosedForm,
    Setting,
    form,
    number,
    peak,
    worst_idle,
)
from ..ir import Schedule
from .common import check_chunks
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


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
        family,
        num_ranks,
        num_microbatches,
        num_chunks,
        warmup_hops=1,
        split_backward=True,
        weight_lag_per_rank=1,
    )


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    p, v = s.p, s.v
    return [
        form(
            s,
            "idle time per rank",
            "(p − 1)(F + I − W) / v",
            f"({p} − 1)({number(s.F)} + {number(s.I)} − {number(s.W)}) / {v}",
            (p - 1) * (s.F + s.I - s.W) / v,
            worst_idle(timeline.idle_per_rank()),
            "time",
            "ZB-H1's idle shared out over v chunks (PyTorch's ZB1P order, measured by this simulator)",
            ZERO_BUBBLE + [M_MULTIPLE_OF_P],
        ),
        form(
            s,
            "peak activation memory (rank 0)",
            "p",
            f"{p}",
            float(p),
            peak(timeline),
            "memory",
            "as ZB-H1",
            [M_AT_LEAST_P, M_MULTIPLE_OF_P, NO_RECOMPUTE],
        ),
    ]


FAMILY = Family(
    name="interleaved-zb",
    build=interleaved_zero_bubble,
    title="Interleaved zero bubble (ZB1P, v chunks)",
    source="Qi et al. 2024, Zero Bubble (ZB1P); PyTorch ScheduleInterleavedZeroBubble",
    story="ZB-H1's held-back W's with interleaved 1F1B's v chunks: the remaining gaps are "
    "a chunk's F + I − W instead of a rank's.",
    fixed_chunks=None,
    splits_backward=True,
    in_rounds=True,
    forms=closed_forms,
)
