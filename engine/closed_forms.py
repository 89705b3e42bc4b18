"""The closed forms the literature gives for each family, with the numbers filled in, next to the simulated
value — and, when the two differ, which of the formula's assumptions this configuration breaks.

Legend: p ranks, m micro-batches, v chunks per rank; F, I, W the durations of one micro-batch through one
rank's share of the model (B = I + W; with recomputation the backward also re-runs F, so I counts as I + F).
Each formula is checked against the simulator in ``tests/test_closed_forms.py`` under its assumptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .costs import Costs
from .ir import Schedule
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
    I: float  # noqa: E741 - the paper's letter
    W: float
    comm: float
    recompute: bool
    keep: float
    """Share of a micro-batch's activations a forward keeps (1, or the recompute fraction)."""
    equal_stages: bool

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
            comm=costs.comm,
            recompute=costs.recompute,
            keep=costs.recompute_memory_fraction if costs.recompute else 1.0,
            equal_stages=(scale is None or len(set(scale)) <= 1) and costs.stage_costs is None,
        )


# -- assumptions: (text, test) ----------------------------------------------------------------------------------
Assumption = tuple[str, Callable[[Setting], bool]]
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
M_AT_LEAST_2P_1: Assumption = ("m ≥ 2p − 1: fewer micro-batches never fill the warm-up", lambda s: s.m >= 2 * s.p - 1)
W_AT_MOST_F: Assumption = ("W ≤ F: a held-back W must fit in the gap a forward leaves", lambda s: s.W <= s.F + 1e-12)
UNIT_COSTS: Assumption = ("F = I = W (the paper's setting)", lambda s: s.F == s.I == s.W)
NO_RECOMPUTE: Assumption = ("no recomputation: with it, I re-creates what W needs", lambda s: not s.recompute)


def _form(
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
    broken = tuple(text for text, test in assumptions if not test(setting))
    return ClosedForm(
        quantity, formula, filled, predicted, simulated, kind, source, tuple(text for text, _ in assumptions), broken
    )


def _n(value: float) -> str:
    return f"{value:g}"


def _bubble_forms(s: Setting, t: Timeline, source: str) -> list[ClosedForm]:
    """GPipe's idle share and Megatron's bubble ratio, for the one-chunk fill-and-drain schedules."""
    base = [NO_TRANSFER, EQUAL_STAGES]
    return [
        _form(
            s,
            "bubble fraction, idle / (p × makespan)",
            "(p − 1) / (m + p − 1)",
            f"({s.p} − 1) / ({s.m} + {s.p} − 1) = {s.p - 1}/{s.m + s.p - 1}",
            (s.p - 1) / (s.m + s.p - 1),
            t.bubble_fraction,
            "share",
            source,
            base,
        ),
        _form(
            s,
            "bubble ratio, idle / busy",
            "(p − 1) / m",
            f"({s.p} − 1) / {s.m} = {s.p - 1}/{s.m}",
            (s.p - 1) / s.m,
            t.bubble_ratio,
            "ratio",
            "Megatron-LM (Narayanan et al. 2021)",
            base,
        ),
    ]


def _peak(t: Timeline) -> float:
    return max(t.peak_memory_per_rank(), default=0.0)


def closed_forms(family: str, schedule: Schedule, costs: Costs, timeline: Timeline) -> list[ClosedForm]:
    """The closed forms of ``family`` for this configuration (empty for a family without one)."""
    s = Setting.of(schedule, costs)
    p, m, v = s.p, s.m, s.v

    def held(quantity: str, formula: str, filled: str, count: float, source: str, assumptions: list) -> ClosedForm:
        """A peak-memory form; with recomputation the held micro-batches keep k of their activations and the
        running backward rebuilds the other (1 − k) of one chunk."""
        if s.recompute:
            k = _n(s.keep)
            formula, filled = f"{formula} × k + (1 − k) / v", f"{filled} × {k} + (1 − {k}) / {v}"
            count = count * s.keep + (1 - s.keep) / v
        return _form(s, quantity, formula, filled, count, _peak(timeline), "memory", source, assumptions)

    if family == "gpipe":
        return _bubble_forms(s, timeline, "GPipe §2.3 (Huang et al. 2019)") + [
            held(
                "peak activation memory, micro-batches held at once",
                "m",
                f"{m}",
                m,
                "GPipe: every forward runs before any backward",
                [],
            )
        ]
    if family == "1f1b":
        return _bubble_forms(s, timeline, "GPipe §2.3; PipeDream-Flush keeps it") + [
            held(
                "peak activation memory, micro-batches held at once (rank 0)",
                "min(p, m)",
                f"min({p}, {m})",
                min(p, m),
                "PipeDream-Flush (Narayanan et al. 2021)",
                [],
            )
        ]
    if family in ("interleaved-1f1b", "looped-bfs"):
        forms = [
            _form(
                s,
                "bubble ratio, idle / busy",
                "(p − 1) / (v · m)",
                f"({p} − 1) / ({v} · {m}) = {p - 1}/{v * m}",
                (p - 1) / (v * m),
                timeline.bubble_ratio,
                "ratio",
                "Megatron-LM §2.2.2 (Narayanan et al. 2021)",
                [NO_TRANSFER, EQUAL_STAGES, M_MULTIPLE_OF_P],
            )
        ]
        if family == "interleaved-1f1b":
            warm = (v - 1) * p + 2 * (p - 1) + 1
            forms.append(
                held(
                    "peak activation memory on rank 0 (chunks of 1/v)",
                    "min((v − 1)·p + 2(p − 1) + 1, v·m) / v",
                    f"min({warm}, {v * m}) / {v}",
                    min(warm, v * m) / v,
                    "Megatron-LM's warm-up count",
                    [M_MULTIPLE_OF_P],
                )
            )
        else:
            forms.append(
                held(
                    "peak activation memory, micro-batches held at once",
                    "m",
                    f"{m}",
                    m,
                    "breadth first: all forwards first",
                    [],
                )
            )
        return forms
    zero_bubble = [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_P, W_AT_MOST_F]
    idle = lambda per_rank: max(per_rank, default=0.0)  # noqa: E731 - every rank idles the same
    if family == "zb-h1":
        return [
            _form(
                s,
                "idle time per rank",
                "(p − 1)(F + I − W)",
                f"({p} − 1)({_n(s.F)} + {_n(s.I)} − {_n(s.W)})",
                (p - 1) * (s.F + s.I - s.W),
                idle(timeline.idle_per_rank()),
                "time",
                "Zero Bubble, Table 2 (its T_B is I here)",
                zero_bubble,
            ),
            _form(
                s,
                "peak activation memory (rank 0)",
                "p",
                f"{p}",
                float(p),
                _peak(timeline),
                "memory",
                "Zero Bubble, Table 2: 1F1B's memory",
                [M_AT_LEAST_P, NO_RECOMPUTE],
            ),
        ]
    if family == "zb-h2":
        return [
            _form(
                s,
                "idle time inside each rank's span",
                "max(0, (p − 1)(F + I − 2W))",
                f"max(0, ({p} − 1)({_n(s.F)} + {_n(s.I)} − 2·{_n(s.W)}))",
                max(0.0, (p - 1) * (s.F + s.I - 2 * s.W)),
                idle(timeline.span_idle_per_rank()),
                "time",
                "Zero Bubble, Table 2",
                zero_bubble + [M_AT_LEAST_2P_1],
            ),
            _form(
                s,
                "peak activation memory (rank 0)",
                "2p − 1",
                f"2·{p} − 1",
                2.0 * p - 1,
                _peak(timeline),
                "memory",
                "Zero Bubble, Table 2",
                [M_AT_LEAST_2P_1, NO_RECOMPUTE],
            ),
        ]
    if family == "interleaved-zb":
        return [
            _form(
                s,
                "idle time per rank",
                "(p − 1)(F + I − W) / v",
                f"({p} − 1)({_n(s.F)} + {_n(s.I)} − {_n(s.W)}) / {v}",
                (p - 1) * (s.F + s.I - s.W) / v,
                idle(timeline.idle_per_rank()),
                "time",
                "ZB-H1's idle shared out over v chunks (PyTorch's ZB1P order, measured by this simulator)",
                zero_bubble + [M_MULTIPLE_OF_P],
            ),
            _form(
                s,
                "peak activation memory (rank 0)",
                "p",
                f"{p}",
                float(p),
                _peak(timeline),
                "memory",
                "as ZB-H1",
                [M_AT_LEAST_P, M_MULTIPLE_OF_P, NO_RECOMPUTE],
            ),
        ]
    if family == "zb-v":
        return [
            _form(
                s,
                "idle time inside each rank's span (when F = I = W)",
                "0",
                "0",
                0.0,
                idle(timeline.span_idle_per_rank()),
                "time",
                "Qi et al. 2024 (controllable memory), §4",
                [NO_TRANSFER, EQUAL_STAGES, M_AT_LEAST_2P_1, UNIT_COSTS],
            ),
            _form(
                s,
                "peak activation memory (every rank)",
                "p",
                f"{p}",
                float(p),
                _peak(timeline),
                "memory",
                "Qi et al. 2024: 1F1B's memory",
                [M_AT_LEAST_2P_1, NO_RECOMPUTE],
            ),
        ]
    return []


STORIES = {
    "gpipe": "Every rank runs all m forwards, then all m backwards. The pipe fills for p − 1 steps and drains "
    "for p − 1 steps, so of the m + p − 1 steps each rank works m; and it holds every micro-batch's "
    "activations at the turn from forward to backward.",
    "1f1b": "After a warm-up of p − 1 − r forwards, rank r alternates one forward with one backward. The fill "
    "and drain are GPipe's, so the bubble is too — but a backward frees a micro-batch as soon as the "
    "next one starts, so rank 0 never holds more than p of them.",
    "interleaved-1f1b": "Each rank holds v smaller chunks of the model, not one; the fill and drain take a "
    "chunk's time instead of a rank's whole share, so the bubble shrinks by v — paid for "
    "with v times as many transfers between ranks.",
    "looped-bfs": "Like interleaved 1F1B, v chunks per rank shorten the fill and drain; but every micro-batch "
    "goes through a chunk before the next chunk starts, so memory is GPipe's.",
    "zb-h1": "The backward is split: I (the input gradient, which the previous stage waits for) and W (the "
    "weight gradient, which nobody waits for). Holding W back fills the drain's gaps, cutting each "
    "rank's idle time to (p − 1)(F + I − W) at 1F1B's memory.",
    "zb-h2": "More warm-up forwards and later W's than ZB-H1 fill every gap inside a rank's span — the "
    "paper's zero bubble, since the next step's warm-up overlaps this step's tail — at 2p − 1 "
    "micro-batches of memory.",
    "interleaved-zb": "ZB-H1's held-back W's with interleaved 1F1B's v chunks: the remaining gaps are "
    "a chunk's F + I − W instead of a rank's.",
    "zb-v": "Two chunks per rank in a V: the model goes down the ranks and back up, so the last stage sits "
    "next to the first and the turn from forward to backward needs no transfer. With F = I = W no "
    "rank idles inside its span, at 1F1B's memory.",
    "dualpipev": "DeepSeek-V3's schedule, cut in half: a V like ZB-V, and in the steady phase one chunk's "
    "forward runs together with the other chunk's backward, so one micro-batch's transfers hide "
    "behind another's compute; the F&B cost sets its gain.",
}
"""One or two sentences per family on why its numbers are what they are."""
