"""The heuristic for large instances, in the spirit of the Zero Bubble paper's automatic scheduler (Qi et al.,
ICLR 2024, §3.1): fill the warm-up with as many forwards as the memory budget and the first backward's round
trip call for, then let every rank choose greedily, input-gradient backwards (the paper's "B") first because
the rank before is waiting for them, forwards next, and weight-gradient backwards (W) to fill the gaps — or
earlier when the memory they hold is needed for the next forward. A few variants (warm-up size, how eagerly W
fills a gap, how much room a V keeps for its deep forwards) are tried, and the shortest step is kept
(``engine.search.solve`` also tries the hand-made families).

The greedy runs as a list scheduler in time order over all ranks at once: a rank decides at the moment it
becomes free, with every product that has arrived by then known (anything not yet known arrives later,
because every action takes some time). It starts an action at max(rank free, inputs arrived), exactly as the
simulator times the resulting order, so its step time is the simulated one.

Per stage, forwards, I's and W's each run in micro-batch order: micro-batches are identical, so any schedule
can be relabelled into that order without changing a single time (see [Note: micro-batch order] in
``engine.search.exact``).

Legend: p ranks, m micro-batches, S stages, B budget, δ memory a forward adds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass

from ..ir import Action, Kind
from .bounds import chain_times
from .problem import MEMORY_TOLERANCE, SearchProblem

WARMUPS = ("fill", "one-f-one-b", "budget")
"""How much memory a rank fills with forwards before it waits for backwards:

* ``fill``: the forwards that fit in the time before its first I can start (the paper's warm-up, §3.1; ZB-H2's
  2(p−r)−1 forwards with equal costs);
* ``one-f-one-b``: half of that (1F1B's and ZB-H1's p−r);
* ``budget``: as many as the budget holds."""

WEIGHT_POLICIES = ("fit", "eager")
"""When an idle rank runs a held-back W: ``fit`` only if it ends before the next known input arrives (the
paper's "fill a bubble with W"); ``eager`` whenever nothing else is ready. (Running each W right after its
I, as ZB-V's steady state does, lost to both in our trials.)"""

CHUNK_SHARING = ("turn", "next", "all", "one")
"""With two chunks per rank (V placement), how far a rank's shallow forwards may run ahead of its deep ones.
Each keeps some room for deep forwards, or a rank could fill up with shallow forwards that never reach their
backward:

* ``turn``: ahead by the shallow forwards that fit before the first deep forward can arrive (ZB-V's warm-up,
  2(p−r)−1 with equal costs), keeping room for the next deep forward;
* ``next``: as far as memory allows, keeping room for the next deep forward (enough: micro-batches go through
  in order, and the oldest one's deep forward, then its backwards, free what the next one needs);
* ``all``: keeping room for every deep forward still to come;
* ``one``: one micro-batch at a time, no room kept: the deep forward waits for the older micro-batches'
  backwards to free it (the pattern of the tightest budgets)."""


@dataclass(frozen=True)
class Variant:
    """One setting of the greedy's choices."""

    warmup: str
    """One of ``WARMUPS``."""
    weights: str
    """One of ``WEIGHT_POLICIES``."""
    chunks: str | None = None
    """One of ``CHUNK_SHARING`` with two chunks per rank; None with one."""

    def __post_init__(self) -> None:
        if (
            self.warmup not in WARMUPS
            or self.weights not in WEIGHT_POLICIES
            or self.chunks not in (None, *CHUNK_SHARING)
        ):
            raise ValueError(f"unknown variant {self.warmup}, {self.weights}, {self.chunks}")

    def __str__(self) -> str:
        sharing = "" if self.chunks is None else f", chunks {self.chunks}"
        return f"warm-up {self.warmup}, W {self.weights}{sharing}"


def variants(problem: SearchProblem) -> Iterator[Variant]:
    """The variants to try, the usually best first (so a short time limit keeps the likely winner)."""
    if problem.num_chunks == 1:
        for warmup in WARMUPS:
            for weights in WEIGHT_POLICIES:
                yield Variant(warmup, weights)
        return
    for chunks in CHUNK_SHARING:  # on a V the chunk sharing sets the warm-up; the memory cap is the budget's
        for weights in WEIGHT_POLICIES if chunks != "next" else WEIGHT_POLICIES[::-1]:
            yield Variant("budget", weights, chunks)


def lead_caps(problem: SearchProblem) -> list[int]:
    """Per stage, for the shallower of a rank's two chunks (V placement), how many of its forwards fit in the
    forwards of the stages between it and its deep chunk (``turn`` in ``CHUNK_SHARING``: ZB-V's 2(p−r)−1 with
    equal costs; transfers left out, as ZB-V leaves them); 0 elsewhere."""
    table = problem.table
    caps = [0] * table.num_stages
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        if len(stages) == 2:
            shallow, deep = stages
            window = sum(table.duration[s, Kind.F] for s in range(shallow, deep))
            caps[shallow] = max(1, math.ceil(window / table.duration[shallow, Kind.F] - 1e-9))
    return caps


@dataclass(frozen=True)
class Candidate:
    """A schedule the search considers: what one greedy run produced, or a hand-made family's."""

    ranks: tuple[tuple[Action, ...], ...]
    """Each rank's list (F, I and W; per stage and kind in micro-batch order)."""
    makespan: float
    """Its step time (the simulator's)."""
    source: str
    """Where it came from, in words (the greedy's variant, or the family)."""


def warmup_caps(problem: SearchProblem, warmup: str) -> list[float]:
    """Per rank, the memory of forwards waiting for their I that the rank lets build up (never more than the
    budget, never less than one micro-batch's forwards on all its stages, without which nothing could run)."""
    table, budget = problem.table, problem.memory_budget
    chain = chain_times(table)
    caps = []
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        one_microbatch = sum(table.memory_change[s, Kind.F] for s in stages)
        if warmup == "budget":
            caps.append(budget)
            continue
        head = min(chain.forward_start[s] for s in stages)
        window = min(chain.input_start[s] for s in stages) - head  # until the first I can start
        mean_forward = sum(table.duration[s, Kind.F] for s in stages) / len(stages)
        mean_memory = one_microbatch / len(stages)
        forwards = max(1, math.ceil(window / mean_forward - 1e-9))
        if warmup == "one-f-one-b":
            forwards = math.ceil(forwards / 2)
        caps.append(min(budget, max(one_microbatch, forwards * mean_memory)))
    return caps


def greedy(problem: SearchProblem, variant: Variant) -> Candidate:
    """One run of the list scheduler under ``variant`` (see the module docstring)."""
    table, m, p = problem.table, problem.num_microbatches, problem.num_ranks
    num_stages = table.num_stages
    rank_of = list(table.rank_of_stage)
    forward_time, input_time, weight_time = (table.duration[:, kind].tolist() for kind in (Kind.F, Kind.I, Kind.W))
    forward_memory, input_memory, weight_memory = (
        table.memory_change[:, kind].tolist() for kind in (Kind.F, Kind.I, Kind.W)
    )
    down_hop = [table.hop(s, s + 1) if s + 1 < num_stages else 0.0 for s in range(num_stages)]  # F(s) → F(s+1)
    up_hop = [table.hop(s, s - 1) if s > 0 else 0.0 for s in range(num_stages)]  # I(s) → I(s−1)
    stages_of = [table.stages_of(r) for r in range(p)]
    # with two chunks, the deep stage of each shallow one (``CHUNK_SHARING``)
    partner = [-1] * num_stages
    for stages in stages_of:
        if len(stages) == 2:
            partner[stages[0]] = stages[1]
    budget = problem.memory_budget + MEMORY_TOLERANCE
    caps = [cap + MEMORY_TOLERANCE for cap in warmup_caps(problem, variant.warmup)]
    fit, sharing = variant.weights == "fit", variant.chunks
    lead = lead_caps(problem) if sharing == "turn" else [problem.num_microbatches] * num_stages

    forwards_done, inputs_done, weights_done = [0] * num_stages, [0] * num_stages, [0] * num_stages
    forward_end = [[0.0] * m for _ in range(num_stages)]
    input_end = [[0.0] * m for _ in range(num_stages)]
    free, memory, waiting_memory = [0.0] * p, [0.0] * p, [0.0] * p  # waiting: forwards whose I is to come
    left = [3 * m * len(stages) for stages in stages_of]
    order: list[list[Action]] = [[] for _ in range(p)]
    decision = [0.0] * p  # when each rank decides next (inf: when an input it waits for is produced)
    queue = [(0.0, rank) for rank in range(p)]
    infinity = math.inf

    def forward_arrival(s: int) -> float | None:
        j = forwards_done[s]
        if j >= m:
            return None
        if s == 0:
            return 0.0
        if j < forwards_done[s - 1]:
            return forward_end[s - 1][j] + down_hop[s - 1]
        return infinity  # its input is not produced yet

    def input_arrival(s: int) -> float | None:
        j = inputs_done[s]
        if j >= forwards_done[s]:
            return None  # its own forward has not run (that is this rank's choice, not a wait)
        own = forward_end[s][j]
        if s == num_stages - 1:
            return own
        if j < inputs_done[s + 1]:
            return max(own, input_end[s + 1][j] + up_hop[s + 1])
        return infinity

    def forward_fits(rank: int, s: int) -> tuple[bool, bool]:
        """(fits the budget, fits the warm-up cap)."""
        need = forward_memory[s]
        deeper = partner[s]
        if deeper >= 0:  # a shallow forward, ahead of its deep ones (``CHUNK_SHARING``)
            ahead = forwards_done[s] - forwards_done[deeper]
            if (sharing == "one" and ahead) or ahead >= lead[s]:
                return False, True  # waits for the deep forwards (reported as memory: W's may help)
            kept = {"turn": 1, "next": 1, "all": ahead + 1, "one": 0}[sharing or "next"]
            need += kept * forward_memory[deeper]
            return memory[rank] + need <= budget, waiting_memory[rank] + need <= caps[rank]
        if len(stages_of[rank]) == 2:  # the deep forward: its room was reserved, the cap must not block it
            return memory[rank] + need <= budget, True
        return memory[rank] + need <= budget, waiting_memory[rank] + need <= caps[rank]

    def wake(rank: int, arrival: float) -> None:
        when = max(arrival, free[rank])
        if when < decision[rank]:
            decision[rank] = when
            heapq.heappush(queue, (when, rank))

    done = {Kind.F: forwards_done, Kind.I: inputs_done, Kind.W: weights_done}
    took = {Kind.F: forward_time, Kind.I: input_time, Kind.W: weight_time}
    changes = {Kind.F: forward_memory, Kind.I: input_memory, Kind.W: weight_memory}
    waits = {Kind.F: +1.0, Kind.I: -1.0, Kind.W: 0.0}  # a forward waits for its I from its end to the I
    hands_on = {Kind.F: (forward_end, +1, down_hop), Kind.I: (input_end, -1, up_hop)}  # product, next stage

    def run(rank: int, kind: Kind, s: int, start: float) -> None:
        j = done[kind][s]
        end = start + took[kind][s]
        done[kind][s] += 1
        memory[rank] += changes[kind][s]
        waiting_memory[rank] += waits[kind] * forward_memory[s]
        if kind in hands_on:
            ends, step, hops = hands_on[kind]
            ends[s][j] = end
            if 0 <= s + step < num_stages:
                wake(rank_of[s + step], end + hops[s])
        order[rank].append(Action(s, kind, j))
        left[rank] -= 1
        free[rank] = end
        decision[rank] = end
        heapq.heappush(queue, (end, rank))

    while queue:
        now, rank = heapq.heappop(queue)
        if now != decision[rank] or not left[rank]:
            continue  # a stale entry, or a finished rank
        ready: dict[Kind, list[tuple[int, int, float]]] = {Kind.I: [], Kind.F: []}  # (micro-batch, −stage, arrival)
        soon = infinity  # the next known arrival of something this rank could run
        memory_blocks = False
        pending_weight, most_pending = -1, 0
        for s in stages_of[rank]:
            arrival = input_arrival(s)
            if arrival is not None:
                if arrival <= now:
                    ready[Kind.I].append((inputs_done[s], -s, arrival))
                else:
                    soon = min(soon, arrival)
            arrival = forward_arrival(s)
            if arrival is not None:
                fits_budget, fits_cap = forward_fits(rank, s)
                if fits_budget and fits_cap:
                    if arrival <= now:
                        ready[Kind.F].append((forwards_done[s], -s, arrival))
                    else:
                        soon = min(soon, arrival)
                elif arrival <= now and not fits_budget:
                    memory_blocks = True
            pending = inputs_done[s] - weights_done[s]
            if pending > most_pending:
                pending_weight, most_pending = s, pending
        # the paper's priorities: I first (the previous rank waits for it), then F, then W to fill the gap;
        # between the two chunks of a V, the older micro-batch first, then the deeper stage
        kind = Kind.I if ready[Kind.I] else Kind.F if ready[Kind.F] else None
        if kind is not None:
            _, minus_stage, arrival = min(ready[kind])
            run(rank, kind, -minus_stage, max(now, arrival))
        elif pending_weight >= 0 and (
            memory_blocks or not fit or soon == infinity or soon - now >= weight_time[pending_weight] - 1e-12
        ):
            run(rank, Kind.W, pending_weight, now)
        else:  # idle until the next known arrival, or until an input this rank waits for is produced
            decision[rank] = soon
            if soon < infinity:
                heapq.heappush(queue, (soon, rank))
    if any(left):  # the reservations above make this unreachable; a failure here is a bug, not bad input
        raise AssertionError(f"greedy search stalled with {sum(left)} actions left ({variant})")
    return Candidate(tuple(tuple(actions) for actions in order), max(free), f"greedy list scheduler ({variant})")
