"""ZB-H1 (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024, §3).

The backward is split in two: I, the gradient for the stage input, which the previous stage is waiting
for, and W, the gradient for the weights, which nobody waits for. Moving W later fills bubbles.
The paper calls I "B"; here B is PyTorch's full backward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import M_AT_LEAST_P, NO_RECOMPUTE, ClosedForm, Setting, form, peak, split_backward_idle
from ..ir import Schedule
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def zb_h1(num_ranks: int, num_microbatches: int) -> Schedule:
    """ZB-H1 (Zero Bubble paper §3, Figure 3; PyTorch ``ScheduleInterleavedZeroBubble`` with one stage per
    rank).

    1F1B's warm-up (p−1−r forwards on rank r), then rounds of F, I, W where rank r holds back its W's for
    its first r rounds; the held-back W's fill the cool-down. Same peak memory as 1F1B (p micro-batches on
    the busiest rank); idle per rank (p−1)(T_F + T_I − T_W) when W ≤ F and W ≤ I — one third of 1F1B's when
    F = I = W (paper Table 2) — and (p−1)(F + I − min(F, I, W)) for any W (``split_backward_idle``).
    Accepts any p ≥ 1, m ≥ 1.
    """
    return depth_first_schedule(
        "zb-h1", num_ranks, num_microbatches, warmup_hops=1, split_backward=True, weight_lag_per_rank=1
    )


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    p = s.p
    return [
        split_backward_idle(
            s,
            timeline,
            "Zero Bubble, Table 2: (p − 1)(F + I − W) for W ≤ F, I (its T_B is I here); min(F, I, W) for any W",
        ),
        form(
            s,
            "peak activation memory (rank 0)",
            "p",
            f"{p}",
            float(p),
            peak(timeline),
            "memory",
            "Zero Bubble, Table 2: 1F1B's memory",
            [M_AT_LEAST_P, NO_RECOMPUTE],
        ),
    ]


FAMILY = Family(
    name="zb-h1",
    build=zb_h1,
    title="ZB-H1 (split backward, 1F1B memory)",
    source="Qi et al. 2024, Zero Bubble §3",
    story="The backward is split: I (the input gradient, which the previous stage waits for) and W (the "
    "weight gradient, which nobody waits for). Holding W back fills the drain's gaps, cutting each "
    "rank's idle time to (p − 1)(F + I − W) at 1F1B's memory — a third of 1F1B's when F = I = W, not zero: "
    "the name's zero bubble belongs to ZB-H2 and ZB-V.",
    splits_backward=True,
    forms=closed_forms,
)
