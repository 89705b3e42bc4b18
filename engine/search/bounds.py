"""Lower bounds on the step time (makespan) of any schedule of a problem, and the chain times they rest on.

Every bound here holds for every valid order under the budget, so ``gap = (makespan − bound) / bound`` says
how far a schedule can at most be from the optimum. Three bounds, the largest is reported as *the* bound:

* ``busiest rank``: a rank cannot start before its first forward's input can arrive (``head``) and then has
  all of its work to do: head + work.
* ``round trip``: the Zero Bubble paper's observation (§3, "the bubble before the first B") made a bound.
  Until the first micro-batch has gone down the pipeline and its input gradient has come back (the round
  trip), a rank can only run forwards, and only as many as its budget holds (with two chunks, until its
  shallow chunk's first I, also the deep chunk's backwards of the micro-batches it has started); after its
  last forward it can only run the backwards it holds in memory until that micro-batch's gradient comes
  back. Whatever of those two windows the budget cannot fill is idle time.
* ``memory × time``: every micro-batch holds its activations on a stage from its forward until its I (and
  W's share until its W), at least a round trip long; a rank's memory never exceeds B, so the area under
  its memory curve, at most B × (makespan − head), is at least the sum of those holds.

Legend: S stages, m micro-batches, B budget, δ = memory a forward adds (1/v), w = W's share of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import Kind
from .problem import SearchProblem, StageTable

BOUND_NAMES = ("busiest rank", "round trip", "memory × time")
PERIOD_BOUND_NAMES = ("busiest rank's work",)
"""The bound on the period (the longest rank span): no rank's span is shorter than its own work. (The Zero
Bubble paper's memory argument, its Appendix B, bounds the makespan's staircase, which the period leaves out.)"""


@dataclass(frozen=True)
class ChainTimes:
    """Earliest times along one micro-batch's chain, ignoring every other micro-batch (indexed by stage)."""

    forward_start: tuple[float, ...]
    """Earliest start of F(s, ·): the forwards of the stages before it, plus transfers."""
    input_start: tuple[float, ...]
    """Earliest start of I(s, ·): the forward down to the last stage and the input gradients back to s."""
    after_input: tuple[float, ...]
    """Least time from the end of I(s, ·) to the end of the step: its own W, or the rest of the chain back
    to stage 0 and stage 0's W, whichever is longer."""

    def round_trip_gap(self, table: StageTable, stage: int) -> float:
        """Least time from the end of F(s, j) to the start of I(s, j): the way down and back beyond s."""
        return self.input_start[stage] - self.forward_start[stage] - table.duration[stage, Kind.F]


def chain_times(table: StageTable) -> ChainTimes:
    """The hand-off rules (``engine.dependencies``) applied to one micro-batch alone."""
    duration, num_stages = table.duration, table.num_stages
    forward = [0.0] * num_stages
    for s in range(1, num_stages):
        forward[s] = forward[s - 1] + duration[s - 1, Kind.F] + table.hop(s - 1, s)
    last = num_stages - 1
    backward = [0.0] * num_stages
    backward[last] = forward[last] + duration[last, Kind.F]
    for s in range(last - 1, -1, -1):
        backward[s] = backward[s + 1] + duration[s + 1, Kind.I] + table.hop(s + 1, s)
    after = [0.0] * num_stages
    after[0] = duration[0, Kind.W]
    for s in range(1, num_stages):
        after[s] = max(duration[s, Kind.W], table.hop(s, s - 1) + duration[s - 1, Kind.I] + after[s - 1])
    return ChainTimes(tuple(forward), tuple(backward), tuple(after))


def _most_work(items: list[tuple[float, float, int]], capacity: float) -> float:
    """Fractional knapsack: the most work from items (work, memory, count) whose memory fits in ``capacity``.

    Taking fractions makes it an upper bound on any whole choice, which is what a lower bound needs. Items
    that hold no memory (a W when ``w_memory_fraction`` is 0) are all taken."""
    total = sum(work * count for work, memory, count in items if memory <= 0)
    items = [item for item in items if item[1] > 0]
    for work, memory, count in sorted(items, key=lambda item: item[0] / item[1], reverse=True):
        if capacity <= 0:
            break
        taken = min(count, capacity / memory)
        total += taken * work
        capacity -= taken * memory
    return total


def _round_trip_idle(table: StageTable, chain: ChainTimes, stages: tuple[int, ...], m: int, budget: float) -> float:
    """The least idle time a rank holding ``stages`` has inside [its first possible start, its last action).

    Micro-batches run in order on every stage ([Note: micro-batch order]); some optimal schedule does, so a
    bound on those is a bound on the optimum. ``a`` is the rank's shallowest stage, ``d`` its deepest (the
    same stage with one chunk)."""
    duration, change = table.duration, table.memory_change
    forward, backward, weight = (lambda t, k=k: float(duration[t, k]) for k in (Kind.F, Kind.I, Kind.W))
    shares = {t: float(change[t, Kind.F]) for t in stages}
    a, d = stages[0], stages[-1]
    head = chain.forward_start[a]

    # before the rank's first I (on d) can start, only forwards run, and nothing frees memory: the budget
    # holds them all
    forwards = [(forward(t), shares[t], m) for t in stages]
    before = {d: chain.input_start[d] - head - _most_work(forwards, budget)}
    # before I(a, 0) can start (with two chunks): forwards, and the deep stage's backwards, of micro-batches
    # the rank has started; each holds a's share until its I on a, so the budget caps how many
    started = min(m, math.floor(budget / shares[a] + 1e-9))
    if len(stages) == 2:  # (a loop of 3 or more chunks gets the first-I and last-forward windows only)
        per_microbatch = sum(forward(t) for t in stages) + backward(d) + weight(d)
        before[a] = chain.input_start[a] - head - started * per_microbatch
    # after the last forward, F(d, m−1): until I(a, m−1) can start, only that micro-batch's own I's and W's
    # on the deeper stages, and backwards the rank holds in what that micro-batch leaves of the budget
    window = chain.input_start[a] - chain.forward_start[d] - forward(d)
    own = sum(backward(t) + weight(t) for t in stages if t != a)
    held = [(backward(t) + weight(t), shares[t], m) for t in stages]
    held += [(weight(t), float(-change[t, Kind.W]), m) for t in stages]
    after = max(0.0, window - own - _most_work(held, budget - sum(shares.values())))
    # the two windows are apart when the budget cannot hold every micro-batch's shares up to s at once: an I
    # at or after I(s, 0)'s earliest start then runs before the last forward
    idle = after
    for s in before:
        apart = m * sum(shares[t] for t in stages if t <= s) > budget + 1e-9
        idle = max(idle, max(0.0, before[s]) + (after if apart else 0.0))
    return idle


def lower_bounds(problem: SearchProblem) -> dict[str, float]:
    """Each bound on the problem's objective, by name: the module docstring's for the makespan,
    ``PERIOD_BOUND_NAMES`` for the period."""
    if problem.objective == "period":
        return {PERIOD_BOUND_NAMES[0]: max(rank_work(problem, rank) for rank in range(problem.num_ranks))}
    return makespan_bounds(problem)


def rank_work(problem: SearchProblem, rank: int) -> float:
    """All of one rank's F, I and W for the step."""
    duration = problem.table.duration
    stages = problem.table.stages_of(rank)
    return float(problem.num_microbatches * sum(duration[s, k] for s in stages for k in (Kind.F, Kind.I, Kind.W)))


def makespan_bounds(problem: SearchProblem) -> dict[str, float]:
    """Each bound of the module docstring on the makespan, by name."""
    table, m, budget = problem.table, problem.num_microbatches, problem.memory_budget
    chain = chain_times(table)
    duration, change = table.duration, table.memory_change
    busiest = round_trip = memory_time = 0.0
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        head = min(chain.forward_start[s] for s in stages)
        work = m * sum(duration[s, Kind.F] + duration[s, Kind.I] + duration[s, Kind.W] for s in stages)
        busiest = max(busiest, head + work)

        round_trip = max(round_trip, head + work + _round_trip_idle(table, chain, stages, m, budget))

        # memory × time: I releases the forward's share but W's, W releases W's share
        area = 0.0
        for s in stages:
            until_input = duration[s, Kind.F] + chain.round_trip_gap(table, s)
            area += -change[s, Kind.I] * until_input - change[s, Kind.W] * (until_input + duration[s, Kind.I])
        memory_time = max(memory_time, head + m * area / budget)
    return {name: float(value) for name, value in zip(BOUND_NAMES, (busiest, round_trip, memory_time), strict=True)}
