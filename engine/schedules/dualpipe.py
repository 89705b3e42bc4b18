"""DualPipe, DeepSeek-V3's own bidirectional schedule (DeepSeek-V3 technical report §3.2.1; deepseek-ai/DualPipe
``dualpipe/dualpipe.py``, ``DualPipe.step``).

P ranks (even) hold two copies of the model (the ``dual`` placement, ``engine.ir``): rank r holds block r of the
first copy and block P−1−r of the second. Half the N micro-batches (N even, N ≥ 2P) enter at rank 0 and go down
through the first copy; the other half enter at rank P−1 and come back up through the second. In the lab's
numbering, stage s < P is block s of the first copy, stage P + j block j of the second (on rank P−1−j), and
micro-batches 0..N/2−1 take the first copy, N/2..N−1 the second.

Rank r and rank P−1−r run the same program, mirrored: DeepSeek's step() works on the *half rank*
h = min(r, P−1−r) and on *phases*, phase 0 being the direction that enters at the rank's own end (the first copy
on ranks 0..P/2−1, the second on the others). In phases, a rank's order is DualPipeV's on P/2 ranks and N/2
micro-batches at rank h, its chunk 0 being phase 0 — DualPipeV is DualPipe "cut in half" (Sea AI Lab), and the
cut is undone here: ``dualpipev.dualpipev_order`` gives the phases, this module maps them to copies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import ClosedForm, Setting, form, number, peak, worst_idle
from ..ir import Action, Overlap, Schedule, Slot, slot_actions
from ..limits import check_pairs
from .common import check_sizes
from .dualpipev import dualpipev_order
from .family import Family

if TYPE_CHECKING:  # the forms read a Timeline's metrics; importing it here would pull pandas into the generators
    from ..timeline import Timeline


def refusal(num_ranks: int, num_microbatches: int) -> str | None:
    """DeepSeek's own conditions (``assert num_ranks % 2 == 0`` and ``num_chunks % 2 == 0 and num_chunks >=
    num_ranks * 2`` in ``DualPipe.step``), with the arithmetic; None when the sizes are accepted."""
    p, m = num_ranks, num_microbatches
    if p % 2:
        return (
            f"dualpipe needs an even number of ranks: rank r and rank p−1−r mirror each other (two copies of the "
            f"model, one per direction), got p = {p}"
        )
    if m % 2:
        return f"dualpipe sends half the micro-batches down and half up, so m must be even, got m = {m}"
    if m < 2 * p:
        return (
            f"dualpipe needs m ≥ 2p micro-batches (its main step runs m/2 − p + h + 1 ≥ 1 rounds on every rank "
            f"h): 2 × {p} = {2 * p}, got m = {m}; DeepSeek's DualPipe refuses it too"
        )
    return None


def fitted(num_ranks: int, num_microbatches: int) -> tuple[int, int]:
    """The nearest sizes at or above (p, m) that DualPipe runs: p even, m even and at least 2p."""
    p = num_ranks + num_ranks % 2
    m = max(num_microbatches + num_microbatches % 2, 2 * p)
    return p, m


def dualpipe(num_ranks: int, num_microbatches: int) -> Schedule:
    """DualPipe on p ranks (even) and m micro-batches (even, m ≥ 2p); rank r's order is ``DualPipe.step``'s
    steps 1–8 (see the module's docstring)."""
    family = "dualpipe"
    check_sizes(family, num_ranks, num_microbatches, 2)
    refused = refusal(num_ranks, num_microbatches)
    if refused:
        raise ValueError(refused)
    p, m = num_ranks, num_microbatches
    check_pairs(p, m, 2, family)
    ranks = tuple(_rank_order(rank, p, m) for rank in range(p))
    return Schedule(family, p, m, 2, "dual", ranks)


def _rank_order(rank: int, p: int, m: int) -> tuple[Slot, ...]:
    """Rank ``rank``'s list: DualPipeV's at the half rank, each phase mapped to its copy."""
    half_rank, half_ranks, half_m = min(rank, p - 1 - rank), p // 2, m // 2
    in_second_half = rank >= half_ranks
    phase_zero_stage = half_rank  # DualPipeV's chunk 0 on rank h is stage h of its V over p/2 ranks
    stage_of_copy = (rank, 2 * p - 1 - rank)  # the first copy's block r, the second copy's block p−1−r

    def mapped(action: Action) -> Action:
        phase = 0 if action.stage == phase_zero_stage else 1
        copy = phase ^ in_second_half  # DeepSeek: ``phase ^= self.is_in_second_half``
        return Action(stage_of_copy[copy], action.kind, action.microbatch + copy * half_m)

    def mapped_slot(slot: Slot) -> Slot:
        if isinstance(slot, Overlap):
            forward, backward = (mapped(a) for a in slot_actions(slot))
            return Overlap(forward, backward)
        return mapped(slot)

    return tuple(mapped_slot(slot) for slot in dualpipev_order(half_rank, half_ranks, half_m))


# -- closed forms: DeepSeek's table (deepseek-ai/DualPipe README, "Pipeline Bubbles and Memory Usage") --------------
def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    """The bubble (PP/2 − 1)(F&B + B − 3W) is one rank's idle time, in the costs of one stage; the activations,
    PP + 1 micro-batches of one stage on the busiest rank (1F1B holds PP); the parameters 2× (``held_weights``)."""
    p, b = s.p, s.I + s.W
    conditions = [  # checked over a grid of costs and sizes (tests/engine/test_dualpipe.py): inside, it holds
        ("no transfer time (comm = 0)", lambda x: x.comm == 0),
        ("every stage costs the same", lambda x: x.equal_stages),
        ("no recomputation", lambda x: not x.recompute),
        ("F = I: a forward as long as an input-gradient backward", lambda x: abs(x.F - x.I) <= 1e-12),
        ("W ≤ F: a held-back W fits in the gap a forward leaves", lambda x: x.W <= x.F + 1e-12),
        (
            "max(F, B) ≤ F&B ≤ F + B: overlapping a pair takes no longer than running its halves one after the other",
            lambda x: max(x.F, x.I + x.W) - 1e-12 <= x.FB <= x.F + x.I + x.W + 1e-12,
        ),
    ]
    return [
        form(
            s,
            "idle time per rank (DeepSeek's bubble)",
            "(PP/2 − 1)(F&B + B − 3W)",
            f"({p}/2 − 1)({number(s.FB)} + {number(b)} − 3 × {number(s.W)})",
            (p // 2 - 1) * (s.FB + b - 3 * s.W),
            worst_idle(timeline.idle_per_rank()),
            "time",
            "DeepSeek-V3 report Table 2; deepseek-ai/DualPipe README",
            conditions,
        ),
        form(
            s,
            "weights per rank, in one rank's share of the model (1F1B's: 1)",
            "2×",
            "2 copies × 1/p of the model each",
            2.0,
            s.weights,
            "ratio",
            "DeepSeek-V3 report Table 2 (parameters per device 2×)",
            [],
        ),
        form(
            s,
            "peak activation memory, micro-batches of one stage held at once",
            "PP + 1",
            f"{p} + 1",
            p + 1,
            peak(timeline),
            "memory",
            "DeepSeek-V3 report Table 2; deepseek-ai/DualPipe README",
            [("no recomputation", lambda x: not x.recompute)],
        ),
    ]


FAMILY = Family(
    name="dualpipe",
    build=dualpipe,
    title="DualPipe (bidirectional, DeepSeek-V3)",
    source="DeepSeek-V3 report §3.2.1; deepseek-ai/DualPipe DualPipe.step",
    story="DeepSeek-V3's schedule: two copies of the model, one per direction, so half the micro-batches enter "
    "at each end and both ends start at once; in the steady phase a forward of one direction runs together with "
    "a backward of the other, so one's communication hides behind the other's compute. Each rank holds twice the "
    "weights, and its two blocks' gradients are summed with their copies' before the optimizer step.",
    fixed_chunks=2,
    placement="dual",
    splits_backward=True,
    overlaps_forward_backward=True,
    forms=closed_forms,
    refusal=refusal,
    fitted=fitted,
)
