"""What a search returns: the schedule as the lab's ``Schedule`` (so every page can draw, play, compare, export
and run it), its simulated timeline, the figures read from it, and how sure the search is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..ir import Schedule
from ..simulator import simulate
from ..timeline import Timeline
from ..validation import validate
from .exact import Progress
from .problem import MEMORY_TOLERANCE, SearchProblem

OPTIMAL = "optimal"
"""Status of a schedule proven to have the shortest step under the budget."""
NOT_PROVEN = "feasible (best found, not proven)"
"""Status of a schedule the search found but could not prove best (the time limit stopped it, or the method
was the heuristic and no bound meets its step time)."""
METHODS = ("exact", "heuristic")
SEARCHED_NAME = "searched"
"""The name searched schedules carry (``Schedule.name``)."""


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The best schedule a search found, checked by the validator and timed by the simulator."""

    problem: SearchProblem
    """What was asked."""
    schedule: Schedule
    """The per-rank orders, named "searched"."""
    timeline: Timeline
    """``simulate(schedule, problem.costs)``: every figure below is read from it."""
    makespan: float
    """Step time."""
    period: float
    """The longest rank span (``Timeline.period``): a repeated step's cost."""
    period_bubble_rate: float
    """The Zero Bubble paper's bubble rate on the period (``Timeline.period_bubble_rate``)."""
    bubble_fraction: float
    """idle / (ranks × makespan)."""
    span_idle_fraction: float
    """Idle inside each rank's own span / (ranks × makespan): the Zero Bubble papers' count."""
    peak_memory: tuple[float, ...]
    """Most activation memory each rank holds (micro-batches of its share); never above the budget."""
    lower_bounds: Mapping[str, float]
    """Each lower bound on the objective (the problem's makespan or period) by name (``engine.search.bounds``,
    plus "cp-sat" when the exact method ran: the solver's proven ``BestObjectiveBound``)."""
    lower_bound: float
    """The largest of them: no schedule under the budget is shorter."""
    gap: float
    """(objective − lower_bound) / lower_bound: how much better the best schedule could at most be."""
    status: str
    """``OPTIMAL`` or ``NOT_PROVEN``."""
    method: str
    """"exact" (CP-SAT's order) or "heuristic" (the greedy's)."""
    proof: str
    """Why the status holds, in words (e.g. "CP-SAT proved it optimal", "makespan equals the lower bound")."""
    detail: str
    """What found it (the greedy's variant, or CP-SAT with its time scale)."""
    wall_time_s: float
    """Seconds the search took, the final check included."""
    progress: tuple[Progress, ...] = field(default=())
    """The exact method's solutions and bounds over time (empty for the heuristic alone)."""
    spaces: tuple = field(default=())
    """With ``auto`` chunks, what each space searched reached (``engine.search.spaces.SpaceOutcome``); empty
    when one space was searched."""

    def __post_init__(self) -> None:
        budget = self.problem.memory_budget
        if max(self.peak_memory) > budget + MEMORY_TOLERANCE:
            raise AssertionError(f"a searched schedule peaks at {max(self.peak_memory):g} > budget {budget:g}")
        if abs(self.makespan - self.timeline.makespan) > 1e-9 * max(1.0, self.makespan):
            raise AssertionError("the makespan must be the simulated one")
        if self.lower_bound > self.objective_value * (1 + 1e-9):
            raise AssertionError(f"lower bound {self.lower_bound:g} above a found {self.objective_value:g}")
        if self.status not in (OPTIMAL, NOT_PROVEN) or self.method not in METHODS:
            raise ValueError(f"unknown status {self.status!r} or method {self.method!r}")

    @property
    def claim(self) -> str:
        """What the status means, naming its space: "optimal" is always among some schedules, under the budget."""
        problem = self.problem
        within = f"among {problem.space}, memory ≤ {problem.memory_budget:g}"
        if self.status == OPTIMAL:
            said = f"optimal {within} ({self.proof})"
        else:
            said = f"the best found {within}, not proven ({self.proof})"
        others = [outcome for outcome in self.spaces if not outcome.chosen]
        if others:
            reached = "; ".join(f"{outcome.space}: {outcome.value:.6g} ({outcome.status})" for outcome in others)
            said += f"; the best of {len(self.spaces)} placements searched (the others: {reached})"
        return said

    @property
    def objective_value(self) -> float:
        """The problem's objective of the found schedule: its makespan or its period."""
        return self.makespan if self.problem.objective == "makespan" else self.period

    def summary(self) -> dict:
        """The figures the CLI's --json prints (plain numbers, lists and strings)."""
        problem = self.problem
        return {
            "schedule": self.schedule.name,
            "ranks": problem.num_ranks,
            "microbatches": problem.num_microbatches,
            "placement": problem.placement,
            "chunks": problem.num_chunks,
            "space": problem.space,
            "claim": self.claim,
            "spaces": [
                {
                    "space": o.space,
                    "placement": o.placement,
                    "chunks": o.chunks,
                    problem.objective: o.value,
                    "status": o.status,
                    "chosen": o.chosen,
                }
                for o in self.spaces
            ],  # fmt: skip
            "memory_budget": problem.memory_budget,
            "status": self.status,
            "optimal": self.status == OPTIMAL,
            "proof": self.proof,
            "method": self.method,
            "detail": self.detail,
            "objective": problem.objective,
            "makespan": self.makespan,
            "period": self.period,
            "period_bubble_rate": self.period_bubble_rate,
            "lower_bound": self.lower_bound,
            "lower_bounds": dict(self.lower_bounds),
            "gap": self.gap,
            "bubble_fraction": self.bubble_fraction,
            "span_idle_fraction": self.span_idle_fraction,
            "peak_memory": list(self.peak_memory),
            "wall_time_s": self.wall_time_s,
            "num_actions": self.schedule.num_actions,
            "orders": self.schedule.to_csv().splitlines(),
        }


class SearchInterrupted(KeyboardInterrupt):
    """A search stopped by Ctrl-C or a stop signal (it unwinds as one): the interrupt itself, and the best
    schedule found before it, validated and timed (None when nothing was found yet). The command line writes
    that schedule only when asked (``--keep-best-on-interrupt``), and says it is not proven."""

    def __init__(self, stop: KeyboardInterrupt, best: SearchResult | None):
        super().__init__(str(stop))
        self.stop = stop
        self.best = best


def finish(
    problem: SearchProblem,
    ranks,
    *,
    lower_bounds: Mapping[str, float],
    optimal_by_solver: bool,
    method: str,
    detail: str,
    began: float,
    clock,
    progress: tuple[Progress, ...] = (),
) -> SearchResult:
    """Validate and simulate the found orders and read every figure from the timeline."""
    p, m, v = problem.num_ranks, problem.num_microbatches, problem.num_chunks
    schedule = validate(Schedule(SEARCHED_NAME, p, m, v, problem.placement, ranks))
    timeline = simulate(schedule, problem.costs, check=False)
    makespan = timeline.makespan
    bound = max(lower_bounds.values())
    gap = max(0.0, (problem.score(timeline) - bound) / bound)
    if optimal_by_solver:
        status, proof = OPTIMAL, "CP-SAT proved it optimal"
    elif gap <= 1e-9:
        status, proof = OPTIMAL, f"its {problem.objective} equals the lower bound"
    else:
        status, proof = NOT_PROVEN, f"within {gap:.2%} of the lower bound"
    return SearchResult(
        problem=problem,
        schedule=schedule,
        timeline=timeline,
        makespan=makespan,
        period=timeline.period,
        period_bubble_rate=timeline.period_bubble_rate,
        bubble_fraction=timeline.bubble_fraction,
        span_idle_fraction=timeline.span_idle_fraction,
        peak_memory=tuple(timeline.peak_memory_per_rank()),
        lower_bounds=dict(lower_bounds),
        lower_bound=bound,
        gap=0.0 if status == OPTIMAL else gap,
        status=status,
        method=method,
        proof=proof,
        detail=detail,
        wall_time_s=clock() - began,
        progress=progress,
    )
