"""Lower bounds on the step time (makespan) of any schedule of a problem, and the chain times they rest on.

Every bound here holds for every valid order under the budget, so ``gap = (makespan − bound) / bound`` says
how far a schedule can at most be from the optimum. Three bounds, the largest is reported as *the* bound:

* ``busiest rank``: a rank cannot start before its first forward's input can arrive (``head``) and then has
  all of its work to do: head + work.
* ``round trip``: the Zero Bubble paper's observation (§3, "the bubble before the first B") made a bound.
  Until the first micro-batch has gone down the pipeline and its input gradient has come back (the round
  trip), a rank can only run forwards, and only as many as its budget holds; after its last forward it can
  only run the backwards it holds in memory until that forward's own gradient comes back. Whatever of those
  two windows the budget cannot fill is idle time.
* ``memory × time``: every micro-batch holds its activations on a stage from its forward until its I (and
  W's share until its W), at least a round trip long; a rank's memory never exceeds B, so the area under
  its memory curve, at most B × (makespan − head), is at least the sum of those holds.

Legend: S stages, m micro-batches, B budget, δ = memory a forward adds (1/v), w = W's share of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Kind
from .problem import SearchProblem, StageTable

BOUND_NAMES = ("busiest rank", "round trip", "memory × time")


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

    Taking fractions makes it an upper bound on any whole choice, which is what a lower bound needs."""
    total = 0.0
    for work, memory, count in sorted(items, key=lambda item: item[0] / item[1], reverse=True):
        if capacity <= 0:
            break
        taken = min(count, capacity / memory)
        total += taken * work
        capacity -= taken * memory
    return total


def lower_bounds(problem: SearchProblem) -> dict[str, float]:
    """Each bound of the module docstring, by name."""
    table, m, budget = problem.table, problem.num_microbatches, problem.memory_budget
    chain = chain_times(table)
    duration, change = table.duration, table.memory_change
    busiest = round_trip = memory_time = 0.0
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        head = min(chain.forward_start[s] for s in stages)
        work = m * sum(duration[s, Kind.F] + duration[s, Kind.I] + duration[s, Kind.W] for s in stages)
        busiest = max(busiest, head + work)

        # round trip: before the first I can start only forwards run, as many as the budget holds
        first_input = min(chain.input_start[s] for s in stages)
        forwards = [(duration[s, Kind.F], change[s, Kind.F], m) for s in stages]
        idle_before = max(0.0, first_input - head - _most_work(forwards, budget))
        # after the last forward (of stage s) only held backwards run until I(s) of that micro-batch can start
        held = [(duration[s, Kind.I] + duration[s, Kind.W], change[s, Kind.F], m) for s in stages]
        held += [(duration[s, Kind.W], -change[s, Kind.W], m) for s in stages if change[s, Kind.W] < 0]
        idle_after = min(
            max(0.0, chain.round_trip_gap(table, s) - _most_work(held, budget - change[s, Kind.F])) for s in stages
        )
        # the windows are apart when the budget cannot hold every forward at once (some I runs in between)
        apart = m * sum(change[s, Kind.F] for s in stages) > budget + 1e-9
        idle = idle_before + idle_after if apart else max(idle_before, idle_after)
        round_trip = max(round_trip, head + work + idle)

        # memory × time: I releases the forward's share but W's, W releases W's share
        area = 0.0
        for s in stages:
            until_input = duration[s, Kind.F] + chain.round_trip_gap(table, s)
            area += -change[s, Kind.I] * until_input - change[s, Kind.W] * (until_input + duration[s, Kind.I])
        memory_time = max(memory_time, head + m * area / budget)
    return {name: float(value) for name, value in zip(BOUND_NAMES, (busiest, round_trip, memory_time), strict=True)}
