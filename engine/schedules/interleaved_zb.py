"""Interleaved zero bubble: ZB-H1's held-back W's over interleaved 1F1B's v chunks per rank."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import (
    M_AT_LEAST_P,
    M_MULTIPLE_OF_P,
    NO_RECOMPUTE,
    ClosedForm,
    Setting,
    form,
    peak,
    split_backward_idle,
)
from ..ir import Schedule
from .common import check_chunks
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def interleaved_zero_bubble(num_ranks: int, num_microbatches: int, num_chunks: int = 2) -> Schedule:
    """Interleaved zero bubble (PyTorch ``ScheduleInterleavedZeroBubble``, whose one-chunk case is ZB-H1;
    after Qi et al. 2024, "Zero Bubble Pipeline Parallelism").

    [Note: the name ZB1P] PyTorch's docstring calls this order "ZB1P". In the paper, ZB-1p is something
    else: the schedule its automatic search finds under 1F1B's memory limit (one chunk per rank). The lab
    calls this family "interleaved zero bubble" and gives "ZB1P" only as PyTorch's name for it.

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
    p = s.p
    return [
        split_backward_idle(
            s,
            timeline,
            "ZB-H1's idle shared out over v chunks (PyTorch's order, measured by this simulator; the lab's rounds "
            "keep it for every m ≥ p)",
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
    pytorch_class="ScheduleInterleavedZeroBubble",
    title="Interleaved zero bubble (v chunks; PyTorch's ZB1P)",
    source="PyTorch ScheduleInterleavedZeroBubble (its docstring's \"ZB1P\"; the paper's ZB-1p is a searched "
    "one-chunk schedule); after Qi et al. 2024, Zero Bubble",
    story="ZB-H1's held-back W's with interleaved 1F1B's v chunks: the remaining gaps are "
    "a chunk's F + I − W instead of a rank's. PyTorch's docstring names this order ZB1P; the Zero Bubble "
    "paper's ZB-1p is a different, automatically searched one-chunk schedule.",
    fixed_chunks=None,
    splits_backward=True,
    in_rounds=True,
    forms=closed_forms,
)
