"""The memory–time frontier: the best step found for each memory budget, with the hand-made families as points
beside it (what the app's Search page draws)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from ..costs import Costs
from ..schedules import FAMILIES, build_schedule
from ..simulator import simulate
from ..timeline import Timeline
from .problem import SearchProblem
from .result import SearchResult, finish
from .solve import DEFAULT_WORKERS, search


@dataclass(frozen=True)
class FamilyPoint:
    """A hand-made family under the same costs: where it sits in (peak memory, makespan)."""

    name: str
    """Registry key, e.g. "zb-h1"."""
    title: str
    """For the chart's legend."""
    placement: str
    """"loop" or "v"."""
    num_chunks: int
    """Model chunks per rank it was built with."""
    peak_memory: float
    """Its busiest rank's peak (micro-batches of a rank's share)."""
    makespan: float
    """Its step time under the costs."""
    timeline: Timeline | None = field(default=None, compare=False, repr=False)
    """Its simulated step (for drawing it next to a searched one)."""


@dataclass(frozen=True, eq=False)
class FrontierPoint:
    """The best schedule found under one budget."""

    memory_budget: float
    """The budget searched (micro-batches of a rank's share)."""
    result: SearchResult
    """The best found under it: its own search's, or a smaller budget's schedule when that was better (it
    fits this budget too; its status and gap are then re-read against this budget's bounds), so the frontier
    never rises as the budget grows."""

    @property
    def makespan(self) -> float:
        return self.result.makespan


@dataclass(frozen=True, eq=False)
class Frontier:
    """Per budget, the best step found; and the hand-made families' points under the same costs."""

    points: tuple[FrontierPoint, ...]
    """In increasing budget."""
    families: tuple[FamilyPoint, ...]
    """Every family the costs apply to (measured per-stage costs fit only those with as many stages)."""


def default_budgets(problem: SearchProblem) -> tuple[float, ...]:
    """From the least budget any schedule needs to 2p, in steps of one micro-batch."""
    low = problem.minimum_budget
    return (low, *(float(b) for b in range(math.floor(low) + 1, 2 * problem.num_ranks + 1)))


def family_points(num_ranks: int, num_microbatches: int, costs: Costs) -> tuple[FamilyPoint, ...]:
    """Each registered family simulated under ``costs`` (families that refuse these sizes are left out)."""
    points = []
    for name, family in FAMILIES.items():
        try:
            schedule = build_schedule(name, num_ranks, num_microbatches)
            timeline = simulate(schedule, costs)
        except ValueError:  # sizes the family does not take, or per-stage costs for another stage count
            continue
        points.append(
            FamilyPoint(
                name=name,
                title=family.title,
                placement=schedule.placement,
                num_chunks=schedule.num_chunks,
                peak_memory=max(timeline.peak_memory_per_rank()),
                makespan=timeline.makespan,
                timeline=timeline,
            )
        )
    return tuple(points)


def frontier(
    num_ranks: int,
    num_microbatches: int,
    costs: Costs,
    placement: str = "loop",
    budgets: tuple[float, ...] | None = None,
    *,
    time_limit_per_budget_s: float = 5.0,
    method: str = "auto",
    num_workers: int = DEFAULT_WORKERS,
    objective: str = "makespan",
    chunks: int | None = None,
) -> Frontier:
    """Search every budget (``default_budgets`` when None) and simulate the hand-made families.

    Budgets run from the smallest up; a smaller budget's schedule also fits a larger one, so each point
    keeps the better of its own search and the point before it: the frontier is monotone by construction.
    Budgets below the least any schedule needs raise ``ValueError`` with the arithmetic. ``chunks``: per rank,
    in a loop (None: one, or a V's two)."""
    first = SearchProblem(
        num_ranks,
        num_microbatches,
        costs,
        max(budgets or (2 * num_ranks,)),
        placement,
        objective=objective,
        chunks=chunks,
    )
    chosen = sorted(set(default_budgets(first) if budgets is None else budgets))
    points: list[FrontierPoint] = []
    for budget in chosen:
        problem = first.with_budget(budget, time_limit_per_budget_s)
        result = search(problem, method, num_workers=num_workers)
        if points and points[-1].result.objective_value < result.objective_value:
            carried = points[-1].result
            result = finish(
                problem,
                carried.schedule.ranks,
                lower_bounds=result.lower_bounds,
                optimal_by_solver=False,
                method=carried.method,
                detail=f"{carried.detail}; found under the budget {carried.problem.memory_budget:g}",
                began=time.perf_counter(),
                clock=time.perf_counter,
            )
        points.append(FrontierPoint(budget, result))
    return Frontier(tuple(points), family_points(num_ranks, num_microbatches, costs))
