"""V-Half (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): a V-shaped building block
repeated once per micro-batch, at about half of 1F1B's activation memory. The construction it shares with V-Min
is ``v_shape.py``; this module holds V-Half's building block and its closed forms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import (
    ClosedForm,
    Setting,
)
from ..ir import Schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline

from .v_shape import v_shape_forms, v_shape_schedule


def v_half_block(num_ranks: int) -> list[tuple[int, int, int, int]]:
    """V-Half's building block: the forwards two slots apart going down, one apart coming back; the backwards
    the mirror image. Three slots more between forward and backward when p is even keep each rank's four
    actions on distinct slots mod 6 (reference: ``stable_pattern_v_half``)."""
    p = num_ranks
    gap = 3 if p % 2 == 0 else 0
    return [(2 * r, 3 * p - 2 - r, 3 * p + gap + 2 * r - 1, 6 * p + gap - 2 - r) for r in range(p)]


def v_half(num_ranks: int, num_microbatches: int) -> Schedule:
    """V-Half (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", §2 building a pipeline
    from a building block, §3 V-shape building blocks; the authors' ``zbv_greedy.py`` in
    sail-sg/zero-bubble-pipeline-parallelism, ``--zero-bubble-v-schedule-mem-setup half``).

    V placement: rank r holds stage r (chunk 0) and stage 2p−1−r (chunk 1). The building block places one
    micro-batch's F↓ at slot 2r, F↑ at 3p−2−r, I↑ at 3p−1+2r and I↓ at 6p−2−r (three slots later for both
    backwards when p is even). The paper's accounting (§2: a block repeated every T holds lifespan/T of its
    activations): the two chunks' lifespans on a rank add up to about 6p slots, p periods of half a micro-batch
    each, so about p/2 micro-batches are held — ⌊(p + 2)/2⌋ with the W's, the authors' count.
    Phases (``v_shape_schedule``):

    * repeat: the block once every 6 slots; each W takes the first free slot after its I (the up chunk's
      first);
    * warm-up squeeze: until rank 0's first I↓, every action moves to the earliest free slot its inputs
      allow, unless that raises a rank's peak memory above the block's;
    * steady: the block repeated as it is;
    * cool-down squeeze: from the first F↓ of the last micro-batch, the same squeeze, first with the W's in
      place, then again letting the W's fill the free slots;
    * the W's fill the free slots once more, and each rank runs its actions in slot order.

    The order does not depend on the costs. Accepts any p ≥ 1, m ≥ 1, as the authors' code does (with few
    micro-batches its squeeze of the cool-down never starts; the lab keeps that); PyTorch has no V-Half.
    """
    return v_shape_schedule("v-half", num_ranks, num_microbatches, v_half_block)


# -- closed forms ---------------------------------------------------------------------------------------------------
def v_half_peak(num_ranks: int) -> int:
    """⌊(p + 2)/2⌋ micro-batches: the authors' count for V-Half, about half of 1F1B's p."""
    return (num_ranks + 2) // 2


def v_half_idle(num_ranks: int) -> float:
    """Idle time of each rank, in F, at F = I = W, p ≥ 3 and m ≥ 2p: 3⌊(p − 1)/2⌋ − 1/2."""
    return 3 * ((num_ranks - 1) // 2) - 0.5


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return v_shape_forms(
        s,
        timeline,
        held=("⌊(p + 2)/2⌋", v_half_peak(s.p), []),
        idle=("3⌊(p − 1)/2⌋ − 1/2", v_half_idle(s.p), 3),
        rate="p/(2m) of the step",
    )


FAMILY = Family(
    name="v-half",
    build=v_half,
    title="V-Half (V placement, ½ memory)",
    source="Qi et al. 2024, Pipeline Parallelism with Controllable Memory (§2, §3); the authors' zbv_greedy.py",
    story="ZB-V's V, with each micro-batch's backward brought closer to its forward: a micro-batch's "
    "activations live about half as long, so a rank holds about p/2 + 1 of them instead of p, for a "
    "bubble of about p/(2m) of the step.",
    fixed_chunks=2,
    placement="v",
    splits_backward=True,
    forms=closed_forms,
)
