"""1F1B, the PipeDream-flush schedule: GPipe's bubble at a fraction of its memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import ClosedForm, Setting, fill_and_drain, held
from ..ir import Schedule
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def one_f_one_b(num_ranks: int, num_microbatches: int) -> Schedule:
    """1F1B, the PipeDream-flush schedule (Narayanan et al. 2021, "Memory-efficient pipeline-parallel DNN
    training", §3; Megatron-LM's non-interleaved schedule; PyTorch ``Schedule1F1B``).

    Rank r runs ``min(p−1−r, m)`` warm-up forwards, then alternates forward and backward, then drains the
    remaining backwards. Same idle time as GPipe, (p−1)/(m+p−1) with equal costs, but rank r never holds
    more than ``min(p−r, m)`` micro-batches of activations instead of m. Accepts any p ≥ 1, m ≥ 1.
    """
    return depth_first_schedule("1f1b", num_ranks, num_microbatches, warmup_hops=1, split_backward=False)


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return fill_and_drain(s, timeline, "GPipe §2.3; PipeDream-Flush keeps it") + [
        held(
            s,
            timeline,
            "peak activation memory, micro-batches held at once (rank 0)",
            "min(p, m)",
            f"min({s.p}, {s.m})",
            min(s.p, s.m),
            "PipeDream-Flush (Narayanan et al. 2021)",
            [],
        )
    ]


FAMILY = Family(
    name="1f1b",
    build=one_f_one_b,
    title="1F1B (PipeDream-flush)",
    source="Narayanan et al. 2021 (PipeDream-flush)",
    story="After a warm-up of p − 1 − r forwards, rank r alternates one forward with one backward. The fill "
    "and drain are GPipe's, so the bubble is too — but a backward frees a micro-batch as soon as the "
    "next one starts, so rank 0 never holds more than p of them.",
    forms=closed_forms,
)
