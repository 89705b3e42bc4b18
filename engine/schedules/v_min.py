"""V-Min (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): the tightest V-shaped building
block, at about a third of 1F1B's activation memory. Built like V-Half (``v_shape.v_shape_schedule``); only the
block differs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import Assumption, ClosedForm, Setting
from ..ir import Schedule
from .family import Family
from .v_shape import v_shape_forms, v_shape_schedule

if TYPE_CHECKING:
    from ..timeline import Timeline


def v_min_block(num_ranks: int) -> list[tuple[int, int, int, int]]:
    """V-Min's building block: every pass one slot after its input, so a micro-batch goes down and back up
    the V in 2p slots and its backward follows at once. Two slots more between forward and backward when 3
    divides p keep each rank's four actions on distinct slots mod 6 (reference: ``stable_pattern_v_min``)."""
    p = num_ranks
    gap = 2 if p % 3 == 0 else 0
    return [(r, 2 * p - 1 - r, 2 * p + gap + r, 4 * p + gap - 1 - r) for r in range(p)]


def v_min(num_ranks: int, num_microbatches: int) -> Schedule:
    """V-Min (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", §2 building a pipeline from a
    building block, §3 V-shape building blocks; the authors' ``zbv_greedy.py`` in
    sail-sg/zero-bubble-pipeline-parallelism, ``--zero-bubble-v-schedule-mem-setup min``).

    V placement: rank r holds stage r (chunk 0) and stage 2p−1−r (chunk 1). The building block places one
    micro-batch's F↓ at slot r, F↑ at 2p−1−r, I↑ at 2p+r and I↓ at 4p−1−r (two slots later for both
    backwards when 3 divides p): every pass runs one slot after its input, so the two chunks' lifespans on a
    rank add up to about 4p slots, 2p/3 periods of half a micro-batch each (the paper's §2 accounting): about
    p/3 micro-batches held — ⌊(p + 4)/3⌋ with the W's, the authors' count. The price: the block leaves holes
    that only W's can fill, about 2p/(3m) of the step idle.
    Phases, as V-Half's (``v_half.v_half``):

    * repeat: the block once every 6 slots; each W takes the first free slot after its I (the up chunk's
      first);
    * warm-up squeeze: until rank 0's first I↓, every action moves to the earliest free slot its inputs
      allow, unless that raises a rank's peak memory above the block's;
    * steady: the block repeated as it is;
    * cool-down squeeze: from the first F↓ of the last micro-batch, the same squeeze, first with the W's in
      place, then again letting the W's fill the free slots;
    * the W's fill the free slots once more, and each rank runs its actions in slot order.

    The order does not depend on the costs. Accepts any p ≥ 1, m ≥ 1, as the authors' code does; PyTorch has
    no V-Min.
    """
    return v_shape_schedule("v-min", num_ranks, num_microbatches, v_min_block)


def v_min_peak(num_ranks: int) -> int:
    """⌊(p + 4)/3⌋ micro-batches: the authors' count for V-Min, about a third of 1F1B's p."""
    return (num_ranks + 4) // 3


def v_min_idle(num_ranks: int) -> float:
    """Idle time of each rank, in F, at F = I = W, p ≥ 2 and m ≥ 2p: 2p − 5/2, one less when 3 divides p (the
    block's two extra slots)."""
    p = num_ranks
    return 2 * p - 2.5 - (p % 3 == 0)


NOT_TWO_RANKS: Assumption = (
    "p ≠ 2: on 2 ranks V-Min holds 1.5 micro-batches, less than ⌊(2 + 4)/3⌋ = 2, unless W needs all of them",
    lambda s: s.p != 2,
)


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return v_shape_forms(
        s,
        timeline,
        held=("⌊(p + 4)/3⌋", v_min_peak(s.p), [NOT_TWO_RANKS]),
        idle=("2p − 5/2 − [3 divides p]", v_min_idle(s.p), 2),
        rate="2p/(3m) of the step",
    )


FAMILY = Family(
    name="v-min",
    build=v_min,
    title="V-Min (V placement, ⅓ memory)",
    source="Qi et al. 2024, Pipeline Parallelism with Controllable Memory (§2, §3); the authors' zbv_greedy.py",
    story="The tightest V: every pass runs right after its input and the backward follows the forward at "
    "once, so a rank holds only about p/3 + 1 micro-batches — a third of 1F1B's p — but the block leaves "
    "holes only W's can fill: about 2p/(3m) of the step idles.",
    fixed_chunks=2,
    placement="v",
    splits_backward=True,
    forms=closed_forms,
)
