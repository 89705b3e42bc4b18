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

from ..ir import Action, Kind, Schedule
from ..simulator import simulate
from .bounds import chain_times
from .problem import MEMORY_TOLERANCE, SPLIT_KINDS, SearchProblem

WARMUPS = ("fill", "one-f-one-b", "budget")
"""How much memory a rank fills with forwards before it waits for backwards:

* ``fill``: the forwards that fit in the time before its first I can start (the paper's warm-up, §3.1; ZB-H2's
  2(p−r)−1 forwards with equal costs);
* ``one-f-one-b``: half of that (1F1B's and ZB-H1's p−r);
* ``budget``: as many as the budget holds."""

WEIGHT_POLICIES = ("fit", "eager", "fit-then-eager")
"""When an idle rank runs a held-back W: ``fit`` only if it ends before the next known input arrives (the
paper's "fill a bubble with W"); ``eager`` whenever nothing else is ready; ``fit-then-eager``: ``fit`` while the
rank has forwards to run, ``eager`` in its drain — the W's kept for the drain fill the gaps between its last I's
(on the Zero Bubble paper's 1.5B timings, p = 8, m = 32, period objective at 2p: a bubble rate of 0.0089 where
``eager`` gives 0.0278). (Running each W right after its I, as ZB-V's steady state does, lost in our trials.)"""

CHUNK_SHARING = ("turn", "next", "all", "one")
"""With several chunks per rank (a V, or a loop of v), how far a rank's shallower forwards may run ahead of its
next deeper ones.
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
        first = ("eager", "fit") if chunks == "next" else ("fit", "eager")
        for weights in (*first, "fit-then-eager"):
            yield Variant("budget", weights, chunks)


def lead_caps(problem: SearchProblem) -> list[int]:
    """Per stage, for each but the deepest of a rank's chunks (a V, or a loop of v), how many of its forwards fit
    in the forwards of the stages between it and the rank's next deeper chunk (``turn`` in ``CHUNK_SHARING``:
    ZB-V's 2(p−r)−1 with equal costs; transfers left out, as ZB-V leaves them); 0 elsewhere."""
    table = problem.table
    caps = [0] * table.num_stages
    for rank in range(problem.num_ranks):
        stages = table.stages_of(rank)
        for shallow, deep in zip(stages, stages[1:], strict=False):  # each chunk and the rank's next deeper one
            window = sum(table.duration[s, Kind.F] for s in range(shallow, deep))
            caps[shallow] = max(1, math.ceil(window / table.duration[shallow, Kind.F] - 1e-9))
    return caps


@dataclass(frozen=True)
class Candidate:
    """A schedule the search considers: what one greedy run produced, or a hand-made family's; ``score`` is the
    problem's objective (its makespan, or its period)."""

    ranks: tuple[tuple[Action, ...], ...]
    """Each rank's list (F, I and W; per stage and kind in micro-batch order)."""
    makespan: float
    """Its step time (the simulator's)."""
    source: str
    """Where it came from, in words (the greedy's variant, or the family)."""
    score: float
    """The problem's objective of this order (the simulator's): its makespan, or its period."""


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


def greedy(problem: SearchProblem, variant: Variant) -> Candidate | None:
    """One run of the list scheduler under ``variant`` (see the module docstring): ranks decide in time order,
    each when it becomes free or when an input it waits for arrives. None when it stalls with actions left
    (every rank waiting for memory another's backwards would free): the reservations in ``forward_fits`` are
    meant to make that unreachable at any budget the problem takes (the tests try every placement, 1 to 4
    chunks and the least budgets), and ``engine.search.solve`` still has ``one_at_a_time`` if a variant does."""
    state = _ListScheduler(problem, variant)
    while state.queue:
        now, rank = heapq.heappop(state.queue)
        if now != state.decision[rank] or not state.left[rank]:
            continue  # a stale entry, or a finished rank
        state.decide(rank, now)
    if any(state.left):
        return None
    order = tuple(tuple(actions) for actions in state.order)
    return scored(problem, order, max(state.free), f"greedy list scheduler ({variant})")


def one_at_a_time(problem: SearchProblem) -> Candidate:
    """Each micro-batch alone through the pipeline: every rank runs its forwards of micro-batch j on its stages,
    shallow to deep, then its I and W on them, deep to shallow, before micro-batch j + 1. Its peak is the least
    any schedule needs (``problem.minimum_budget``: one micro-batch's forwards on every stage of a rank), so it
    fits every budget a ``SearchProblem`` takes: the search's answer when no other candidate could be placed."""
    table, p, m = problem.table, problem.num_ranks, problem.num_microbatches
    ranks = []
    for rank in range(p):
        stages = table.stages_of(rank)
        actions: list[Action] = []
        for j in range(m):
            actions += [Action(s, Kind.F, j) for s in stages]
            for s in reversed(stages):
                actions += [Action(s, Kind.I, j), Action(s, Kind.W, j)]
        ranks.append(tuple(actions))
    order = tuple(ranks)
    schedule = Schedule("one-at-a-time", p, m, problem.num_chunks, problem.placement, order)
    timeline = simulate(schedule, problem.costs, check=False)
    return Candidate(order, timeline.makespan, "one micro-batch at a time", problem.score(timeline))


def scored(problem: SearchProblem, ranks, makespan: float, source: str) -> Candidate:
    """A candidate with the problem's objective: the makespan as given, the period by simulating the order."""
    if problem.objective == "makespan":
        return Candidate(ranks, makespan, source, makespan)
    p, m, v = problem.num_ranks, problem.num_microbatches, problem.num_chunks
    timeline = simulate(Schedule("candidate", p, m, v, problem.placement, ranks), problem.costs, check=False)
    return Candidate(ranks, timeline.makespan, source, problem.score(timeline))


@dataclass(slots=True)
class _Choices:
    """What a free rank can do at ``now``: the I's and F's whose inputs have arrived, the next known arrival
    of one it could run, whether a forward is held back by the budget, and the stage with most W's pending."""

    ready: dict[Kind, list[tuple[int, int, float]]]
    """Per kind (I, F): (micro-batch, −stage, arrival), so ``min`` picks the older micro-batch, then the
    deeper stage."""
    soon: float = math.inf
    memory_blocks: bool = False
    pending_weight: int = -1
    """The stage with the most I's whose W has not run (−1: none)."""


class _ListScheduler:
    """The greedy's state: the instance as plain per-stage lists (read in the inner loop), the variant's
    settings, and per stage and rank what has run, when, and what it holds."""

    def __init__(self, problem: SearchProblem, variant: Variant) -> None:
        table, m, p = problem.table, problem.num_microbatches, problem.num_ranks
        num_stages = table.num_stages
        self.m, self.num_stages = m, num_stages
        # the instance
        self.rank_of = list(table.rank_of_stage)
        self.took = {kind: table.duration[:, kind].tolist() for kind in SPLIT_KINDS}
        self.changes = {kind: table.memory_change[:, kind].tolist() for kind in SPLIT_KINDS}
        self.forward_memory = self.changes[Kind.F]
        down_hop = [table.hop(s, s + 1) if s + 1 < num_stages else 0.0 for s in range(num_stages)]  # F(s) → F(s+1)
        up_hop = [table.hop(s, s - 1) if s > 0 else 0.0 for s in range(num_stages)]  # I(s) → I(s−1)
        self.down_hop, self.up_hop = down_hop, up_hop
        self.stages_of = [table.stages_of(r) for r in range(p)]
        # with several chunks, the next deeper stage on the same rank of each shallower one (``CHUNK_SHARING``),
        # and all the deeper ones, nearest first (three or four chunks in a loop: more than the partner)
        self.partner = [-1] * num_stages
        self.deeper: list[tuple[int, ...]] = [()] * num_stages
        for stages in self.stages_of:
            for index, shallow in enumerate(stages[:-1]):
                self.partner[shallow] = stages[index + 1]
                self.deeper[shallow] = stages[index + 1 :]
        # the variant
        self.budget = problem.memory_budget + MEMORY_TOLERANCE
        self.caps = [cap + MEMORY_TOLERANCE for cap in warmup_caps(problem, variant.warmup)]
        self.weights, self.sharing = variant.weights, variant.chunks
        self.lead = lead_caps(problem) if self.sharing == "turn" else [problem.num_microbatches] * num_stages
        # the state: per stage, how many of each kind have run and when each product was made
        self.forwards_done, self.inputs_done, self.weights_done = [0] * num_stages, [0] * num_stages, [0] * num_stages
        self.done = {Kind.F: self.forwards_done, Kind.I: self.inputs_done, Kind.W: self.weights_done}
        self.forward_end = [[0.0] * m for _ in range(num_stages)]
        self.input_end = [[0.0] * m for _ in range(num_stages)]
        self.hands_on = {Kind.F: (self.forward_end, +1, down_hop), Kind.I: (self.input_end, -1, up_hop)}
        # per rank: free from, memory held, memory of forwards whose I is to come, actions left, the order
        self.free, self.memory, self.waiting_memory = [0.0] * p, [0.0] * p, [0.0] * p
        self.left = [3 * m * len(stages) for stages in self.stages_of]
        self.order: list[list[Action]] = [[] for _ in range(p)]
        self.decision = [0.0] * p  # when each rank decides next (inf: when an input it waits for is produced)
        self.queue = [(0.0, rank) for rank in range(p)]

    def forward_arrival(self, s: int) -> float | None:
        """When stage ``s``'s next forward has its input (inf: not produced yet; None: all forwards ran)."""
        forwards_done = self.forwards_done
        j = forwards_done[s]
        if j >= self.m:
            return None
        if s == 0:
            return 0.0
        if j < forwards_done[s - 1]:
            return self.forward_end[s - 1][j] + self.down_hop[s - 1]
        return math.inf  # its input is not produced yet

    def input_arrival(self, s: int) -> float | None:
        """When stage ``s``'s next I has its inputs (inf: not produced yet; None: its own forward has not run)."""
        inputs_done = self.inputs_done
        j = inputs_done[s]
        if j >= self.forwards_done[s]:
            return None  # its own forward has not run (that is this rank's choice, not a wait)
        own = self.forward_end[s][j]
        if s == self.num_stages - 1:
            return own
        if j < inputs_done[s + 1]:
            return max(own, self.input_end[s + 1][j] + self.up_hop[s + 1])
        return math.inf

    def forward_fits(self, rank: int, s: int) -> tuple[bool, bool]:
        """(fits the budget, fits the warm-up cap).

        A shallow forward keeps room for the forwards of every deeper chunk of the rank, not only the next one:
        with three chunks, room kept for the middle chunk alone let the first chunk's next forward take what the
        deepest chunk's needed, and at the least budget every rank stalled full of forwards (the greedy then
        placed 8 of 288 actions at 4 ranks × 8 micro-batches, budget 1)."""
        memory, need = self.memory[rank], self.forward_memory[s]
        deeper = self.partner[s]
        if deeper >= 0:  # a shallow forward, ahead of its deep ones (``CHUNK_SHARING``)
            done = self.forwards_done
            ahead = done[s] - done[deeper]
            if ahead >= self.lead[s] or (self.sharing == "one" and done[s] > done[self.deeper[s][-1]]):
                return False, True  # waits for the deep forwards (reported as memory: W's may help)
            for deep in self.deeper[s]:
                kept = {"turn": 1, "next": 1, "all": done[s] - done[deep] + 1, "one": 0}[self.sharing or "next"]
                need += kept * self.forward_memory[deep]
            return memory + need <= self.budget, self.waiting_memory[rank] + need <= self.caps[rank]
        if len(self.stages_of[rank]) > 1:  # the deepest forward: its room was reserved, the cap must not block it
            return memory + need <= self.budget, True
        return memory + need <= self.budget, self.waiting_memory[rank] + need <= self.caps[rank]

    def fits_weights(self, rank: int) -> bool:
        """Whether ``rank`` runs a W only where it fits before the next arrival (``WEIGHT_POLICIES``)."""
        if self.weights == "fit-then-eager":
            return any(self.forwards_done[s] < self.m for s in self.stages_of[rank])
        return self.weights == "fit"

    def wake(self, rank: int, arrival: float) -> None:
        """An input of ``rank``'s arrives at ``arrival``: decide then, if that is sooner than planned."""
        when = max(arrival, self.free[rank])
        if when < self.decision[rank]:
            self.decision[rank] = when
            heapq.heappush(self.queue, (when, rank))

    def run(self, rank: int, kind: Kind, s: int, start: float) -> None:
        """Append ``kind`` of stage ``s`` (its next micro-batch) to ``rank``'s order, starting at ``start``."""
        j = self.done[kind][s]
        end = start + self.took[kind][s]
        self.done[kind][s] += 1
        self.memory[rank] += self.changes[kind][s]
        self.waiting_memory[rank] += _WAITS[kind] * self.forward_memory[s]
        if kind in self.hands_on:  # its product wakes the neighbour stage's rank
            ends, step, hops = self.hands_on[kind]
            ends[s][j] = end
            if 0 <= s + step < self.num_stages:
                self.wake(self.rank_of[s + step], end + hops[s])
        self.order[rank].append(Action(s, kind, j))
        self.left[rank] -= 1
        self.free[rank] = end
        self.decision[rank] = end
        heapq.heappush(self.queue, (end, rank))

    def choices(self, rank: int, now: float) -> _Choices:
        """What ``rank`` could run at ``now`` on each of its stages (see ``_Choices``)."""
        ready_inputs: list[tuple[int, int, float]] = []
        ready_forwards: list[tuple[int, int, float]] = []
        soon = math.inf
        memory_blocks = False
        pending_weight, most_pending = -1, 0
        forwards_done, inputs_done, weights_done = self.forwards_done, self.inputs_done, self.weights_done
        for s in self.stages_of[rank]:
            arrival = self.input_arrival(s)
            if arrival is not None:
                if arrival <= now:
                    ready_inputs.append((inputs_done[s], -s, arrival))
                else:
                    soon = min(soon, arrival)
            arrival = self.forward_arrival(s)
            if arrival is not None:
                fits_budget, fits_cap = self.forward_fits(rank, s)
                if fits_budget and fits_cap:
                    if arrival <= now:
                        ready_forwards.append((forwards_done[s], -s, arrival))
                    else:
                        soon = min(soon, arrival)
                elif arrival <= now and not fits_budget:
                    memory_blocks = True
            pending = inputs_done[s] - weights_done[s]
            if pending > most_pending:
                pending_weight, most_pending = s, pending
        return _Choices({Kind.I: ready_inputs, Kind.F: ready_forwards}, soon, memory_blocks, pending_weight)

    def decide(self, rank: int, now: float) -> None:
        """The paper's priorities: I first (the previous rank waits for it), then F, then W to fill the gap
        (``WEIGHT_POLICIES``); between the two chunks of a V, the older micro-batch first, then the deeper
        stage. With nothing to run, idle until the next known arrival or until a waited-for input is made."""
        found = self.choices(rank, now)
        ready, soon, weight = found.ready, found.soon, found.pending_weight
        kind = Kind.I if ready[Kind.I] else Kind.F if ready[Kind.F] else None
        if kind is not None:
            _, minus_stage, arrival = min(ready[kind])
            self.run(rank, kind, -minus_stage, max(now, arrival))
        elif weight >= 0 and (
            found.memory_blocks
            or not self.fits_weights(rank)
            or soon == math.inf
            or soon - now >= self.took[Kind.W][weight] - 1e-12
        ):
            self.run(rank, Kind.W, weight, now)
        else:
            self.decision[rank] = soon
            if soon < math.inf:
                heapq.heappush(self.queue, (soon, rank))


_WAITS = {Kind.F: +1.0, Kind.I: -1.0, Kind.W: 0.0}
"""How each kind changes the memory of forwards waiting for their I (a forward waits from its end to its I)."""
