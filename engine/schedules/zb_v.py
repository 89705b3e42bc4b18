"""ZB-V (Qi et al. 2024: the Zero Bubble paper's arXiv version §6, and the V shapes of "Pipeline Parallelism
with Controllable Memory" §3; the Zero Bubble repository): two chunks per rank in a V, zero bubble at 1F1B's
memory when F = I = W."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from ..closed_forms import (
    EQUAL_STAGES,
    M_AT_LEAST_2P_1,
    NO_RECOMPUTE,
    NO_TRANSFER,
    UNIT_COSTS,
    ClosedForm,
    Setting,
    form,
    peak,
    worst_idle,
)
from ..ir import Action, Kind, Schedule
from ..limits import check_pairs
from .common import check_sizes, keep_microbatches
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def minimum_microbatches(num_ranks: int) -> int:
    """2p − 1: the warm-up alone starts that many micro-batches on chunk 0."""
    return 2 * num_ranks - 1


def zb_v(num_ranks: int, num_microbatches: int) -> Schedule:
    """ZB-V (Zero Bubble paper, arXiv version 2401.10241 §6, which claims zero bubble at 1F1B's peak memory
    p·M_B when T_F = T_B = T_W; V-shaped schedules are defined in §3 of "Pipeline Parallelism with
    Controllable Memory", Qi et al. 2024; PyTorch ``ScheduleZBVZeroBubble``).

    V placement: rank r holds stage r (chunk 0, on the way down) and stage 2p−1−r (chunk 1, on the way
    back up), so the last stage sits on rank 0 and a micro-batch's turn from forward to backward costs no
    transfer. Phases on rank r (chunk 0 = c0, chunk 1 = c1):

    * warm-up: 2(p−r)−1 forwards of c0; then r pairs (F c1, F c0); then p−r rounds (F c1, I c1, W c1);
    * steady: rounds of (F c0, I c0, W c0, F c1, I c1, W c1) until every forward has run;
    * cool-down: r pairs (I c0, I c1); then p−r pairs (I c0, W c0); then the held-back W's, c1 first.

    Peak memory about p micro-batches of a rank's share on every rank — 1F1B's — and, when F = I = W, no
    idle time inside a rank's span (the paper's zero-bubble count, same caveat as ZB-H2).
    The warm-up alone starts 2p−1 micro-batches on chunk 0; for fewer, the schedule is built for 2p−1 and
    the extra micro-batches are dropped, as PyTorch's ScheduleZBVZeroBubble does. Accepts any m ≥ 1.
    """
    family = "zb-v"
    check_sizes(family, num_ranks, num_microbatches, 2)
    p, m = num_ranks, num_microbatches
    requested, m = m, max(m, minimum_microbatches(p))
    check_pairs(p, m, 2, f"{family} (built for {m} micro-batches, the fewest it runs on, 2p−1)")
    ranks = tuple(_zb_v_rank(rank, p, m) for rank in range(p))
    return keep_microbatches(Schedule(family, p, m, 2, "v", ranks), requested)


def _zb_v_rank(rank: int, p: int, m: int) -> tuple[Action, ...]:
    """Rank ``rank``'s list of ZB-V on p ranks and m micro-batches (the phases in ``zb_v``)."""
    down, up = rank, 2 * p - 1 - rank  # chunk 0 and chunk 1 stages of this rank
    slots = []
    taken: dict[tuple[Kind, int], int] = defaultdict(int)  # next micro-batch of each (kind, stage)

    def run(kind: Kind, stage: int) -> None:
        slots.append(Action(stage, kind, taken[kind, stage]))
        taken[kind, stage] += 1

    for _ in range(2 * (p - rank) - 1):  # warm-up: fill chunk 0
        run(Kind.F, down)
    for _ in range(rank):
        run(Kind.F, up)
        run(Kind.F, down)
    for _ in range(p - rank):  # first backwards of chunk 1, W at once (memory stays flat)
        run(Kind.F, up)
        run(Kind.I, up)
        run(Kind.W, up)
    while taken[Kind.F, up] < m:  # steady
        if taken[Kind.F, down] < m:
            run(Kind.F, down)
        run(Kind.I, down)
        run(Kind.W, down)
        run(Kind.F, up)
        run(Kind.I, up)
        run(Kind.W, up)
    for _ in range(rank):  # cool-down: input gradients first, they are on the critical path
        run(Kind.I, down)
        run(Kind.I, up)
    for _ in range(p - rank):
        run(Kind.I, down)
        run(Kind.W, down)
    while taken[Kind.W, up] < m:  # the held-back W's fill the tail
        run(Kind.W, up)
    while taken[Kind.W, down] < m:
        run(Kind.W, down)
    return tuple(slots)


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    p = s.p
    return [
        form(
            s,
            "idle time inside each rank's span (when F = I = W)",
            "0",
            "0",
            0.0,
            worst_idle(timeline.span_idle_per_rank()),
            "time",
            "Zero Bubble paper, arXiv version §6 (T_F = T_B = T_W, memory p·M_B)",
            [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_2P_1, UNIT_COSTS],
        ),
        form(
            s,
            "peak activation memory (every rank)",
            "p",
            f"{p}",
            float(p),
            peak(timeline),
            "memory",
            "Qi et al. 2024: 1F1B's memory",
            [M_AT_LEAST_2P_1, NO_RECOMPUTE],
        ),
    ]


FAMILY = Family(
    name="zb-v",
    build=zb_v,
    pytorch_class="ScheduleZBVZeroBubble",
    title="ZB-V (V placement)",
    source="Qi et al. 2024, Zero Bubble (arXiv version) §6; V shapes: Pipeline Parallelism with Controllable "
    "Memory §3; PyTorch ScheduleZBVZeroBubble",
    story="Two chunks per rank in a V: the model goes down the ranks and back up, so the last stage sits "
    "next to the first and the turn from forward to backward needs no transfer. With F = I = W no "
    "rank idles inside its span, at 1F1B's memory.",
    fixed_chunks=2,
    placement="v",
    splits_backward=True,
    minimum_microbatches=minimum_microbatches,
    minimum_reason="its warm-up alone starts 2p−1 micro-batches on chunk 0",
    trim_note="PyTorch's ScheduleZBVZeroBubble does the same.",
    forms=closed_forms,
)
