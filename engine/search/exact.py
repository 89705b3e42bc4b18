"""The exact method for small instances: a constraint model solved by OR-Tools CP-SAT.

One interval per action (fixed length: the action's duration, scaled to whole numbers), and:

* per rank, no two intervals overlap (``AddNoOverlap``): a rank runs one action at a time;
* the hand-off rules (``engine.dependencies``) as precedences: F(s, j) starts after F(s−1, j) ends, I(s, j)
  after F(s, j) and I(s+1, j), W(s, j) after I(s, j), plus the transfer time where the neighbour stage sits
  on another rank;
* per rank, memory as a cumulative resource (``AddCumulative``): each micro-batch holds its forward's share
  minus W's from the start of its F to the start of its I, and W's share from the start of its F to the
  start of its W. With one action at a time and every action taking some time, the level just after an
  action starts is exactly the simulator's ``memory_after`` of that action, so "never above the budget"
  here is "peak ≤ budget" in the simulator;
* the objective: the end of the last action (the makespan), or the longest rank span (the period: each rank's
  last W's end minus its first forward's start, that first forward held to its earliest start, the arrival of
  its input, so the model's span is the simulator's, which starts every action as early as it can);
* redundant constraints that spell out what the budget implies for the order (``_memory_precedences``), and
  the lower bounds of ``engine.search.bounds`` on the makespan, which help the solver prove.

Any start times that meet these are at least as late as the simulator's for the same per-rank order (the
simulator starts each action as early as its rank and inputs allow), and the optimum is such an earliest
timing, so the model's optimum is the best simulated makespan over all orders within the budget.

[Note: micro-batch order] Forwards, I's and W's of one stage are ordered by micro-batch. Micro-batches are
identical, so this loses nothing. Take any schedule. If on the first stage s out of order F(s, b) runs
before F(s, a), a < b, swap the labels a and b of the forwards on s and every later stage and of the I's and
W's on every stage. Each action keeps its time and still finds its inputs in time: a's forward on s − 1
ended no later than b's (that stage is in order), and so on along the chain. Then, from the last stage
down, the I's are ordered the same way (swapping I's and W's on that stage and every earlier one: their
forwards are in order now), and last the W's, on their stage alone. Memory counts only how many
micro-batches a rank holds, so it is unchanged. These constraints take away the m! relabellings of every
stage and kind, which is what makes proofs fast.

OR-Tools is imported here, when the exact method runs, so ``python -m engine simulate`` never loads it.

Legend: S stages, m micro-batches, k the time scale (costs × k are whole numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..dependencies import CompiledSchedule, compiled
from ..ir import Action, Kind, Schedule
from ..walk import walk
from .bounds import chain_times
from .heuristic import Candidate
from .problem import SPLIT_KINDS, SearchProblem
from .stoppable import STOP_GRACE_S, SolveInterrupted, solve_until

MAX_SCALE = 1000
"""Costs are scaled to whole numbers by the least factor up to this; costs needing more decimals are refused
by the exact method (the heuristic takes any)."""


FINISH_RESERVE_S = 0.1
"""Seconds kept for checking and timing the result after CP-SAT stops (tens of milliseconds at these sizes)."""


@dataclass(frozen=True)
class Progress:
    """A moment of the exact search: the best step time found so far and the best proven bound."""

    seconds: float
    """Since the search started (the heuristic's time included)."""
    makespan: float | None
    """Best found so far (None before the first)."""
    bound: float
    """Best lower bound proven so far."""


@dataclass(frozen=True)
class ExactOutcome:
    """What CP-SAT returned."""

    ranks: tuple[tuple[Action, ...], ...] | None
    """The best order found (None when it found none in time)."""
    makespan: float | None
    """Its makespan in the problem's units."""
    bound: float | None
    """CP-SAT's proven lower bound (its ``BestObjectiveBound``), in the problem's units; None when it proved no
    finite one before it was stopped (an infinite bound is no bound, and not JSON)."""
    optimal: bool
    """True when CP-SAT proved the order optimal."""
    progress: tuple[Progress, ...]
    """Solutions and bound improvements as they came."""
    time_scale: int
    """k: every duration × k was a whole number of the model's ticks."""


def integer_scale(values: list[float], limit: int = MAX_SCALE) -> int | None:
    """The least k ≤ ``limit`` such that every value × k is a whole number (None if there is none)."""
    for scale in range(1, limit + 1):
        if all(abs(v * scale - round(v * scale)) <= 1e-9 * max(1.0, abs(v * scale)) for v in values):
            return scale
    return None


def model_scales(problem: SearchProblem) -> tuple[int, int] | None:
    """The factors that make every duration (and the transfer time) and every memory change whole numbers,
    or None when no factor up to 1000 does (the exact method then does not apply)."""
    table = problem.table
    stages = range(table.num_stages)
    time_scale = integer_scale([table.duration[s, k] for s in stages for k in SPLIT_KINDS] + [table.comm])
    memory_scale = integer_scale([-table.memory_change[s, k] for s in stages for k in (Kind.I, Kind.W)], 10_000)
    if time_scale is None or memory_scale is None:
        return None
    if min(round(table.duration[s, k] * time_scale) for s in stages for k in SPLIT_KINDS) == 1:
        time_scale *= 2  # with every action one tick long CP-SAT turns no-overlap into a slow all-different
    return time_scale, memory_scale


def solve_exact(
    problem: SearchProblem,
    hint: Candidate,
    lower_bound: float,
    *,
    began: float,
    deadline: float,
    clock,
    num_workers: int,
) -> ExactOutcome:
    """Build and solve the model of the module docstring, starting from ``hint`` (a valid order, which also
    sets the horizon), told that no schedule beats ``lower_bound``, and stopped at ``deadline`` (``clock``
    time; the import and the model's construction count). Progress is timed from ``began``."""
    from ortools.sat.python import cp_model  # lazily: see the module docstring

    scales = model_scales(problem)
    if scales is None:
        raise ValueError(
            "the exact method needs costs that some factor up to 1000 makes whole numbers; use the heuristic"
        )
    time_scale, memory_scale = scales
    timed = _TimedHint.of(problem, hint, time_scale)
    # the model, constraints in this order (CP-SAT's search, and so a timed-out answer, depend on it)
    model = cp_model.CpModel()
    start, interval, index = _add_actions(model, problem, timed)

    def end(i: int):
        return start[i] + timed.duration[i]

    _add_handoffs(model, timed, start, end, index)
    _memory_precedences(model, problem, start, end, index)
    _add_ranks(model, problem, timed, start, interval, index, memory_scale)
    if problem.objective == "period":
        _minimise_period(model, problem, timed, start, end, index, lower_bound)
    else:
        _minimise_makespan(model, problem, timed, end, index, lower_bound)
    return _solve(
        cp_model, model, problem, timed, start, began=began, deadline=deadline, clock=clock, num_workers=num_workers
    )


@dataclass(frozen=True)
class _TimedHint:
    """The actions, numbered as the compiled hint orders them (their hand-offs come from engine.dependencies),
    with durations and transfer in whole ticks, and the hint timed as the simulator would."""

    c: CompiledSchedule
    time_scale: int
    duration: list[int]
    """Per action, ticks."""
    comm: int
    hint_start: list[float]
    horizon: int
    """The hint's makespan: no better order ends later."""

    @classmethod
    def of(cls, problem: SearchProblem, hint: Candidate, time_scale: int) -> _TimedHint:
        schedule = Schedule(
            "hint", problem.num_ranks, problem.num_microbatches, problem.num_chunks, problem.placement, hint.ranks
        )
        c = compiled(schedule)
        duration = np.rint(problem.table.duration[c.stage, c.kind] * time_scale).astype(int).tolist()
        comm = round(problem.table.comm * time_scale)
        hint_start = walk(schedule, duration, comm).starts.tolist()  # the hint timed as the simulator would, in ticks
        horizon = round(max(s + d for s, d in zip(hint_start, duration, strict=True)))
        if problem.objective == "period":  # a shorter period may end later than the hint: room for it
            horizon *= 2
        return cls(c, time_scale, duration, comm, hint_start, horizon)

    def ticks(self, value: float) -> int:
        return round(value * self.time_scale)


def _add_actions(
    model, problem: SearchProblem, timed: _TimedHint
) -> tuple[list, list, dict[tuple[int, int, int], int]]:
    """One start variable and one fixed-length interval per action, each start bounded by one micro-batch's
    chain and hinted with the hint's start; returns (starts, intervals, (stage, kind, micro-batch) -> action)."""
    table, c, horizon, ticks = problem.table, timed.c, timed.horizon, timed.ticks
    chain = chain_times(table)

    def earliest_and_latest(s: int, kind: Kind) -> tuple[int, int]:
        """From one micro-batch's chain: when the action can start at the soonest, and at the latest while
        leaving room for what must follow it."""
        own, forward = ticks(table.duration[s, kind]), ticks(table.duration[s, Kind.F])
        if kind is Kind.F:
            after = forward + ticks(chain.round_trip_gap(table, s)) + ticks(table.duration[s, Kind.I])
            return ticks(chain.forward_start[s]), horizon - after - ticks(chain.after_input[s])
        if kind is Kind.I:
            return ticks(chain.input_start[s]), horizon - own - ticks(chain.after_input[s])
        return ticks(chain.input_start[s] + table.duration[s, Kind.I]), horizon - own

    start, interval = [], []
    index: dict[tuple[int, int, int], int] = {}  # (stage, kind, micro-batch) -> action
    for i in range(c.num_actions):
        s, kind, j = c.action(i)
        low, high = earliest_and_latest(s, kind)
        start.append(model.new_int_var(low, max(low, high), f"{s}{kind}{j}"))
        interval.append(model.new_fixed_size_interval_var(start[i], timed.duration[i], f"run {s}{kind}{j}"))
        index[s, kind, j] = i
        model.add_hint(start[i], round(timed.hint_start[i]))
    return start, interval, index


def _add_handoffs(model, timed: _TimedHint, start, end, index) -> None:
    """The hand-off rules as precedences, with the transfer time across ranks, and [Note: micro-batch order]."""
    c = timed.c
    producer = {int(key): i for i, key in enumerate(c.makes.tolist()) if key >= 0}
    for i in range(c.num_actions):
        if c.from_neighbour[i] >= 0:
            model.add(start[i] >= end(producer[int(c.from_neighbour[i])]) + timed.comm * bool(c.neighbour_is_remote[i]))
        if c.from_own[i] >= 0:
            model.add(start[i] >= end(producer[int(c.from_own[i])]))
        previous = (int(c.stage[i]), int(c.kind[i]), int(c.microbatch[i]) - 1)
        if previous[2] >= 0:  # [Note: micro-batch order]
            model.add(start[i] >= end(index[previous]))


def _add_ranks(model, problem: SearchProblem, timed: _TimedHint, start, interval, index, memory_scale: int) -> None:
    """Per rank: one action at a time, and memory as a cumulative resource under the budget (each micro-batch
    holds a releaser's share from the start of its F to the start of that I or W)."""
    table, m, c, horizon = problem.table, problem.num_microbatches, timed.c, timed.horizon
    capacity = math.floor(problem.memory_budget * memory_scale + 1e-6)
    for rank in range(problem.num_ranks):
        mine = np.flatnonzero(c.rank == rank).tolist()
        model.add_no_overlap([interval[i] for i in mine])
        held, demands = [], []
        for s in table.stages_of(rank):
            for releaser in (Kind.I, Kind.W):
                demand = round(-table.memory_change[s, releaser] * memory_scale)
                if demand <= 0:
                    continue
                for j in range(m):  # held from the start of F(s, j) to the start of its releaser
                    forward, release = index[s, Kind.F, j], index[s, releaser, j]
                    length = model.new_int_var(1, horizon, "")
                    model.add_hint(length, round(timed.hint_start[release] - timed.hint_start[forward]))
                    held.append(model.new_interval_var(start[forward], length, start[release], ""))
                    demands.append(demand)
        if held:
            model.add_cumulative(held, demands, capacity)


def _minimise_makespan(model, problem: SearchProblem, timed: _TimedHint, end, index, lower_bound: float) -> None:
    """The objective: the last W's end, between the lower bound and the hint's makespan (its hint)."""
    makespan = model.new_int_var(
        min(timed.horizon, math.ceil(lower_bound * timed.time_scale - 1e-6)), timed.horizon, "makespan"
    )
    for s in range(problem.table.num_stages):  # W's run in micro-batch order, so the last one of each stage ends last
        model.add(makespan >= end(index[s, Kind.W, problem.num_microbatches - 1]))
    model.minimize(makespan)
    model.add_hint(makespan, timed.horizon)


def _minimise_period(model, problem: SearchProblem, timed: _TimedHint, start, end, index, lower_bound: float):
    """The objective: the longest rank span. Each rank's first action is the forward of micro-batch 0 on its
    shallowest stage; it starts when its input arrives (as the simulator starts it), so a span cannot shrink
    by starting a rank late."""
    table, m = problem.table, problem.num_microbatches
    period = model.new_int_var(
        min(timed.horizon, math.ceil(lower_bound * timed.time_scale - 1e-6)), timed.horizon, "period"
    )
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        first = index[stages[0], Kind.F, 0]
        if stages[0] == 0:
            model.add(start[first] == 0)
        else:
            hop = round(table.hop(stages[0] - 1, stages[0]) * timed.time_scale)
            model.add(start[first] == end(index[stages[0] - 1, Kind.F, 0]) + hop)
        for s in stages:  # W's run in micro-batch order: the last of each stage ends last
            model.add(period >= end(index[s, Kind.W, m - 1]) - start[first])
    model.minimize(period)


class SolverInterrupted(KeyboardInterrupt):
    """CP-SAT told to stop by an interrupt: the interrupt, and each rank's order in its last solution (or None)."""

    def __init__(self, stop: KeyboardInterrupt, ranks):
        super().__init__(str(stop))
        self.stop = stop
        self.ranks = ranks


def _solve(
    cp_model, model, problem: SearchProblem, timed: _TimedHint, start, *, began, deadline, clock, num_workers
) -> ExactOutcome:
    """Run CP-SAT until ``deadline`` (less the reserve for checking the result) in a child process that is always
    gone when this returns (``stoppable.solve_until``, see [Note: a solver that stops on time]), recording every
    solution and bound improvement, and read each rank's order off the start times."""
    time_scale, c = timed.time_scale, timed.c
    solver = cp_model.CpSolver()
    stop_at = deadline - FINISH_RESERVE_S - STOP_GRACE_S  # so that even a killed solve ends the search on time
    solver.parameters.max_time_in_seconds = max(0.01, stop_at - clock())
    solver.parameters.num_workers = num_workers
    solver.parameters.random_seed = 0
    solver.parameters.catch_sigint_signal = False

    def recorder(report):  # runs in the solver's child process: each solution goes back through ``report``
        class Recorder(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                report((clock(), self.objective_value, self.best_objective_bound, [self.value(v) for v in start]))

        return Recorder()

    try:
        solve = solve_until(solver, model, recorder, stop_at - clock())
    except SolveInterrupted as stop:  # Ctrl-C or a stop signal: the solver is gone; hand over its best so far
        reports = stop.solve.reports
        raise SolverInterrupted(stop.stop, _orders(problem, c, reports[-1][3]) if reports else None) from None
    progress = tuple(
        Progress(at - began, value / time_scale, bound / time_scale) for at, value, bound, _ in solve.reports
    )
    last = solve.reports[-1] if solve.reports else None
    if solve.status is None:  # killed at the deadline: the last reported solution and bound
        bound = _finite(last[2] / time_scale) if last else None
        ranks = _orders(problem, c, last[3]) if last else None
        return ExactOutcome(ranks, last[1] / time_scale if last else None, bound, False, progress, time_scale)
    bound = _finite(solve.final_bound / time_scale) if solve.final_bound is not None else None
    if solve.status == cp_model.UNKNOWN or last is None:  # stopped before a first solution: the heuristic's stands
        return ExactOutcome(None, None, bound, False, progress, time_scale)
    if solve.status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise AssertionError(f"CP-SAT answered {solver.status_name(solve.status)} on a model with a known solution")
    return ExactOutcome(
        _orders(problem, c, last[3]),
        last[1] / time_scale,
        bound,
        solve.status == cp_model.OPTIMAL,
        progress,
        time_scale,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _orders(problem: SearchProblem, c: CompiledSchedule, starts: list[int]) -> tuple[tuple[Action, ...], ...]:
    """Each rank's actions in the order of their start times."""
    return tuple(
        tuple(c.action(i) for i in sorted(np.flatnonzero(c.rank == rank).tolist(), key=lambda i: starts[i]))
        for rank in range(problem.num_ranks)
    )


def _memory_precedences(model, problem: SearchProblem, start, end, index) -> None:
    """Redundant constraints that say what the memory budget implies for the order, so the solver need not
    discover it through the cumulative constraint (with them CP-SAT proved 4 ranks × 8 micro-batches on a V
    at a budget of 1, which it had not within 10 s without them).

    With micro-batches in order ([Note: micro-batch order]): if I(s, j) has not started when F(s, j+K) starts,
    micro-batches j..j+K all still hold their forward's share on s — and on the rank's shallower stage too,
    whose I comes later. When K+1 of those exceed the budget, I(s, j) must come first; the same for W, whose
    share every one of them holds at least."""
    table, m, budget = problem.table, problem.num_microbatches, problem.memory_budget + 1e-9
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        for s in stages:
            held_until_input = sum(table.memory_change[t, Kind.F] for t in stages if t <= s)
            held_until_weight = -table.memory_change[s, Kind.W]
            for releaser, held in ((Kind.I, held_until_input), (Kind.W, held_until_weight)):
                if held <= 0:
                    continue
                lag = math.floor(budget / held)  # K: the least with (K + 1) × held > budget
                for j in range(m - lag):
                    model.add(start[index[s, Kind.F, j + lag]] >= end(index[s, releaser, j]))
