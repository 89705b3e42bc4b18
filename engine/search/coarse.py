"""A coarse first pass for CP-SAT: the same problem with its costs rounded to a coarser tick.

CP-SAT's time is whole ticks; costs with three decimals make every action thousands of ticks long, and the
solver then spends its time on start times that differ by a tick. On costs rounded so that the shortest action
is about ``COARSE_TICKS`` ticks it finds good orders much sooner: on the Zero Bubble paper's 1.5B timings
(p = 8, m = 32, period at a budget of 2p) a bubble rate of 0.0024–0.0034 in 5–10 s, where the exact model ends
near 0.005. The rounded problem's orders are valid orders of the true one (an order does not depend on the
durations); ``engine.search.solve`` times them with the true costs, and only the exact model proves anything.
"""

from __future__ import annotations

import dataclasses
import math

from ..costs import resolved
from .exact import model_scales
from .problem import SPLIT_KINDS, SearchProblem

COARSE_TICKS = 50
"""The shortest action of the rounded problem is at least this many ticks long."""


def coarse_problem(problem: SearchProblem) -> tuple[SearchProblem, int] | None:
    """The problem with F, I, W and the transfer rounded to 1/k of the time unit, k the least power of ten that
    keeps the shortest action at ``COARSE_TICKS`` ticks or more, and k; None when k would be no coarser than the
    exact model's scale, or the costs are not one F, I, W for every stage (per-stage costs or scales, a time per
    hop or shared links keep the exact model)."""
    costs, scales = problem.costs, model_scales(problem)
    if scales is None or costs.stage_costs or costs.stage_scale or costs.hop_comm or costs.shared_links:
        return None
    table = problem.table
    shortest = min(table.duration[s, kind] for s in range(table.num_stages) for kind in SPLIT_KINDS)
    scale = 10 ** max(0, math.ceil(math.log10(COARSE_TICKS / shortest)))
    if scale >= scales[0]:
        return None

    def rounded(value: float) -> float:
        return max(1, round(value * scale)) / scale if value > 0 else 0.0

    durations = resolved({kind: rounded(costs.durations[kind]) for kind in ("F", "I", "W")})
    coarse = dataclasses.replace(costs, durations=durations, comm=rounded(costs.comm))
    return dataclasses.replace(problem, costs=coarse), scale
