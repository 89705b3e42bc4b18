"""ZB-H2 (Zero Bubble paper §3, Figure 4): ZB-H1 with a longer warm-up and later W's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import (
    M_AT_LEAST_2P_1,
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
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def zb_h2(num_ranks: int, num_microbatches: int) -> Schedule:
    """ZB-H2 (Zero Bubble paper §3, Figure 4): more warm-up forwards and later W's than ZB-H1.

    Rank r warms up with 2(p−1−r) forwards — enough to fill the time until its first I arrives — and holds
    back its W's for 2r rounds, so the deferred W's fill the whole cool-down. Every rank is then busy
    without a gap from its first action to its last: the paper's bubble (p−1)(T_F + T_I − 2T_W) is zero when
    F = I = W. That count assumes the next step's warm-up overlaps this step's tail (the paper replaces the
    optimizer's global synchronisation by post-validation, §4), so the ranks form a parallelogram.
    Within one isolated step, rank r still waits r at the start and p−1−r at the end: see
    ``Timeline.span_idle_per_rank`` for the paper's count and ``idle_per_rank`` for one step's.
    Peak memory 2p−1 micro-batches on rank 0 (paper Table 2). Accepts any p ≥ 1, m ≥ 1.
    """
    return depth_first_schedule(
        "zb-h2", num_ranks, num_microbatches, warmup_hops=2, split_backward=True, weight_lag_per_rank=2
    )


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    p = s.p
    return [
        form(
            s,
            "idle time inside each rank's span",
            "max(0, (p − 1)(F + I − 2W))",
            f"max(0, ({p} − 1)({number(s.F)} + {number(s.I)} − 2·{number(s.W)}))",
            max(0.0, (p - 1) * (s.F + s.I - 2 * s.W)),
            worst_idle(timeline.span_idle_per_rank()),
            "time",
            "Zero Bubble, Table 2",
            ZERO_BUBBLE + [M_AT_LEAST_2P_1],
        ),
        form(
            s,
            "peak activation memory (rank 0)",
            "2p − 1",
            f"2·{p} − 1",
            2.0 * p - 1,
            peak(timeline),
            "memory",
            "Zero Bubble, Table 2",
            [M_AT_LEAST_2P_1, NO_RECOMPUTE],
        ),
    ]


FAMILY = Family(
    name="zb-h2",
    build=zb_h2,
    title="ZB-H2 (zero bubble, 2p−1 memory)",
    source="Qi et al. 2024, Zero Bubble §3",
    story="More warm-up forwards and later W's than ZB-H1 fill every gap inside a rank's span — the "
    "paper's zero bubble, since the next step's warm-up overlaps this step's tail — at 2p − 1 "
    "micro-batches of memory.",
    splits_backward=True,
    forms=closed_forms,
)
