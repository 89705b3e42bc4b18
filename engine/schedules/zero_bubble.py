"""Zero Bubble schedules (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024).

The backward is split in two: I, the gradient for the stage input, which the previous stage is waiting
for, and W, the gradient for the weights, which nobody waits for. Moving W later fills bubbles.
The paper calls I "B"; here B is PyTorch's full backward.
"""

from __future__ import annotations

from collections import defaultdict

from ..ir import Action, Kind, Schedule
from ..limits import check_pairs
from .common import check_sizes, keep_microbatches
from .depth_first import depth_first_schedule


def zb_h1(num_ranks: int, num_microbatches: int) -> Schedule:
    """ZB-H1 (Zero Bubble paper §3, Figure 3; PyTorch ``ScheduleInterleavedZeroBubble`` with one stage per
    rank).

    1F1B's warm-up (p−1−r forwards on rank r), then rounds of F, I, W where rank r holds back its W's for
    its first r rounds; the held-back W's fill the cool-down. Same peak memory as 1F1B (p micro-batches on
    the busiest rank); idle per rank (p−1)(T_F + T_I − T_W) — one third of 1F1B's when F = I = W
    (paper Table 2). Accepts any p ≥ 1, m ≥ 1.
    """
    return depth_first_schedule(
        "zb-h1", num_ranks, num_microbatches, warmup_hops=1, split_backward=True, weight_lag_per_rank=1
    )


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


def zb_v(num_ranks: int, num_microbatches: int) -> Schedule:
    """ZB-V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", §4; Zero Bubble repository;
    PyTorch ``ScheduleZBVZeroBubble``).

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
    requested, m = m, max(m, 2 * p - 1)
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
