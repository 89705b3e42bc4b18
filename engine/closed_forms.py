"""The machinery of closed forms: a formula with the numbers filled in, next to the simulated value — and,
when the two differ, which of the formula's assumptions this configuration breaks.

The formulas themselves belong to their families and live beside their generators
(``engine/schedules/<family>.py``); this module names no family. Each family's forms are checked against
the simulator in ``tests/engine/test_closed_forms.py`` under their assumptions.

Legend: p ranks, m micro-batches, v chunks per rank; F, I, W the durations of one micro-batch through one
rank's share of the model (B = I + W; with recomputation the backward also re-runs F, so I counts as I + F).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .costs import Costs
from .ir import Schedule

if TYPE_CHECKING:  # the forms read a Timeline's metrics; importing it here would pull pandas into the generators
    from .timeline import Timeline

TOLERANCE = 1e-6


@dataclass(frozen=True)
class ClosedForm:
    quantity: str
    """What is predicted, in words."""
    formula: str
    """The closed form in symbols."""
    filled: str
    """The same with this configuration's numbers."""
    predicted: float
    simulated: float
    kind: str
    """"share" (shown as a percentage), "ratio", "time" or "memory" (micro-batches of a rank's share)."""
    source: str
    """Where the formula comes from."""
    assumptions: tuple[str, ...]
    """When it holds."""
    departures: tuple[str, ...]
    """Which assumptions this configuration breaks (empty: it should hold)."""

    @property
    def holds(self) -> bool:
        return abs(self.predicted - self.simulated) <= TOLERANCE * max(1.0, abs(self.predicted))


@dataclass(frozen=True)
class Setting:
    """What the formulas read: the sizes and the per-rank-share costs."""

    p: int
    m: int
    v: int
    F: float
    I: float  # noqa: E741 - the Zero Bubble paper's letter (its "B")
    W: float
    FB: float
    """F&B: one overlapped forward-and-backward pair (DualPipe, DualPipeV); F + B when overlapping gains nothing."""
    comm: float
    expert_comm: float
    """The all-to-all inside each F and backward (``Costs.expert_comm``)."""
    recompute: bool
    keep: float
    """Share of a micro-batch's activations a forward keeps (1, or the recompute fraction)."""
    equal_stages: bool
    weights: float
    """The most weights a rank holds, in rank's shares of the model (``Schedule.weights_per_rank``)."""

    @classmethod
    def of(cls, schedule: Schedule, costs: Costs) -> Setting:
        extra = costs.forward if costs.recompute else 0.0
        scale = costs.stage_scale
        return cls(
            p=schedule.num_ranks,
            m=schedule.num_microbatches,
            v=schedule.num_chunks,
            F=costs.forward,
            I=costs.backward_input + extra,
            W=costs.backward_weight,
            FB=costs.overlapped + extra,
            comm=costs.comm,
            expert_comm=costs.expert_comm,
            recompute=costs.recompute,
            keep=costs.recompute_memory_fraction if costs.recompute else 1.0,
            equal_stages=(scale is None or len(set(scale)) <= 1) and costs.stage_costs is None,
            weights=max(schedule.weights_per_rank()),
        )


FormsOf = Callable[[Setting, "Timeline"], list[ClosedForm]]
"""A family's closed forms for one configuration and its simulated timeline."""


# -- assumptions: (text, test) ----------------------------------------------------------------------------------
Assumption = tuple[str, Callable[[Setting], bool]]
NO_EXPERT_COMM: Assumption = (
    "no all-to-all inside the actions (expert_comm = 0): it lengthens each F and backward by what it leaves exposed",
    lambda s: s.expert_comm == 0,
)
NO_TRANSFER: Assumption = (
    "no transfer time (comm = 0): each hop between ranks adds comm to the critical path",
    lambda s: s.comm == 0,
)
EQUAL_STAGES: Assumption = ("every stage costs the same: the slowest stage sets the pace", lambda s: s.equal_stages)
M_MULTIPLE_OF_P: Assumption = (
    "m a multiple of p (Megatron's condition): other m take uneven rounds",
    lambda s: s.m % s.p == 0,
)
M_AT_LEAST_P: Assumption = ("m ≥ p: with fewer micro-batches than ranks the pipe never fills", lambda s: s.m >= s.p)
M_AT_LEAST_2P_1: Assumption = (
    "m ≥ 2p − 1: fewer micro-batches never fill the warm-up",
    lambda s: s.m >= 2 * s.p - 1,
)
W_AT_MOST_F: Assumption = ("W ≤ F: a held-back W must fit in the gap a forward leaves", lambda s: s.W <= s.F + 1e-12)
UNIT_COSTS: Assumption = ("F = I = W (the paper's setting)", lambda s: s.F == s.I == s.W)
NO_RECOMPUTE: Assumption = ("no recomputation: with it, I re-creates what W needs", lambda s: not s.recompute)
ZERO_BUBBLE: list[Assumption] = [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_P, W_AT_MOST_F]
"""What the Zero Bubble paper's Table 2 forms assume (ZB-H2's; ZB-H1's is ``split_backward_idle``)."""


def form(
    setting: Setting,
    quantity: str,
    formula: str,
    filled: str,
    predicted: float,
    simulated: float,
    kind: str,
    source: str,
    assumptions: list[Assumption],
) -> ClosedForm:
    """One closed form, with the assumptions this setting breaks worked out. A time is in the costs' units, so an
    all-to-all inside the actions departs from every time form (shares, ratios and memory keep their meaning)."""
    if kind == "time":
        assumptions = [*assumptions, NO_EXPERT_COMM]
    broken = tuple(text for text, test in assumptions if not test(setting))
    return ClosedForm(
        quantity,
        formula,
        filled,
        predicted,
        simulated,
        kind,
        source,
        tuple(text for text, _ in assumptions),
        broken,
    )


def number(value: float) -> str:
    """A cost as the formulas show it: 1, 0.5, 2.25."""
    return f"{value:g}"


def peak(timeline: Timeline) -> float:
    return max(timeline.peak_memory_per_rank(), default=0.0)


def worst_idle(per_rank: list[float]) -> float:
    """The formulas give one rank's idle time; every rank idles the same under their assumptions."""
    return max(per_rank, default=0.0)


def fill_and_drain(s: Setting, timeline: Timeline, source: str) -> list[ClosedForm]:
    """GPipe's idle share and Megatron's bubble ratio, for the one-chunk fill-and-drain schedules."""
    base = [NO_TRANSFER, EQUAL_STAGES]
    return [
        form(
            s,
            "bubble fraction, idle / (p × makespan)",
            "(p − 1) / (m + p − 1)",
            f"({s.p} − 1) / ({s.m} + {s.p} − 1) = {s.p - 1}/{s.m + s.p - 1}",
            (s.p - 1) / (s.m + s.p - 1),
            timeline.bubble_fraction,
            "share",
            source,
            base,
        ),
        form(
            s,
            "bubble ratio, idle / busy",
            "(p − 1) / m",
            f"({s.p} − 1) / {s.m} = {s.p - 1}/{s.m}",
            (s.p - 1) / s.m,
            timeline.bubble_ratio,
            "ratio",
            "Megatron-LM (Narayanan et al. 2021)",
            base,
        ),
    ]


def interleaved_bubble(s: Setting, timeline: Timeline) -> ClosedForm:
    """Megatron's bubble ratio with v chunks per rank. Megatron states it for m a multiple of p; the lab's
    uneven rounds (``depth_first.microbatch_rounds``) reach it exactly for every m ≥ p, so only m < p departs
    (checked over a grid in ``tests/engine/test_closed_forms.py``)."""
    p, m, v = s.p, s.m, s.v
    return form(
        s,
        "bubble ratio, idle / busy",
        "(p − 1) / (v · m)",
        f"({p} − 1) / ({v} · {m}) = {p - 1}/{v * m}",
        (p - 1) / (v * m),
        timeline.bubble_ratio,
        "ratio",
        "Megatron-LM §2.2.2 (Narayanan et al. 2021); the lab's rounds keep it for every m ≥ p",
        [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_P],
    )


def split_backward_idle(s: Setting, timeline: Timeline, source: str) -> ClosedForm:
    """ZB-H1's idle time per rank, shared out over v chunks: (p − 1)(F + I − min(F, I, W)) / v.

    The Zero Bubble paper's Table 2 writes (p − 1)(T_F + T_B − T_W) (its T_B is our I), for W no longer than F
    or I. A longer W still fills a gap, but cannot shorten it below the forward or the input gradient that
    frames it: F + I − min(F, I, W) = max(F + I − W, F, I). With min(F, I, W) the form holds for every
    F, I, W this lab's simulator was checked on (``tests/engine/test_closed_forms.py``), so it needs no W ≤ F, W ≤ I.
    """
    p, v = s.p, s.v
    per_chunk = "" if v == 1 else " / v"
    filled_chunk = "" if v == 1 else f" / {v}"
    return form(
        s,
        "idle time per rank",
        f"(p − 1)(F + I − min(F, I, W)){per_chunk}",
        f"({p} − 1)({number(s.F)} + {number(s.I)} − {number(min(s.F, s.I, s.W))}){filled_chunk}",
        (p - 1) * (s.F + s.I - min(s.F, s.I, s.W)) / v,
        worst_idle(timeline.idle_per_rank()),
        "time",
        source,
        [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_P],
    )


def held(
    s: Setting,
    timeline: Timeline,
    quantity: str,
    formula: str,
    filled: str,
    count: float,
    source: str,
    assumptions: list[Assumption],
) -> ClosedForm:
    """A peak-memory form counting micro-batches held at once; with recomputation the held micro-batches keep k
    of their activations and the running backward rebuilds the other (1 − k) of one chunk."""
    if s.recompute:
        k = number(s.keep)
        formula, filled = f"{formula} × k + (1 − k) / v", f"{filled} × {k} + (1 − {k}) / {s.v}"
        count = count * s.keep + (1 - s.keep) / s.v
    return form(s, quantity, formula, filled, count, peak(timeline), "memory", source, assumptions)
