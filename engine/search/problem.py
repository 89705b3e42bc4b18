"""What the search is asked: sizes, placement, costs and a memory budget, checked with the arithmetic in every
refusal; and the per-stage tables (durations, memory changes, transfer times) both search methods read.

The tables are not a second cost model: they are read off the simulator's own (``slot_durations`` and
``memory_model``) on a probe schedule holding one F, I and W of every stage, so the search and the simulator
cannot disagree about what an action costs (see [Note: probe schedule]).

Legend: p ranks, m micro-batches, v chunks per rank (1 for "loop", 2 for "v"), S = p·v stages, B the memory
budget in micro-batches of a rank's share of the activations (the unit ``Timeline.peak_memory_per_rank``
reports).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..costs import Costs
from ..ir import PLACEMENTS, Action, Kind, Schedule, all_actions, rank_of_stage
from ..limits import (
    MAX_MICROBATCHES,
    MAX_RANKS,
    MAX_SEARCH_CHUNKS,
    MAX_SEARCH_COST,
    MAX_SEARCH_PAIRS,
    MAX_TIME_LIMIT_S,
    check_pairs,
    whole_number,
)
from ..simulator import memory_model, slot_durations
from ..timeline import Timeline, before_on_rank

SEARCHED_PLACEMENTS = tuple(name for name, placement in PLACEMENTS.items() if placement.copies == 1)
"""The placements a search builds in: a loop and a V (DualPipe's two copies give each micro-batch half the stages,
which the search's model of a micro-batch through every stage does not hold)."""
SPLIT_KINDS = (Kind.F, Kind.I, Kind.W)
"""The kinds a searched schedule uses: the backward is always split (the Zero Bubble paper's B and W)."""


OBJECTIVES = {
    "makespan": "one step measured from time 0 to its last action: the staircase of a step run alone",
    "period": "the longest rank span, first action to last: what a repeated step costs when the next step's "
    "warm-up starts while this one drains — the Zero Bubble paper's objective (Qi et al. 2024, §3), which "
    "assumes its post-validation of the optimizer step (§4) so no step waits for a global synchronisation",
}
"""What a search minimises, in words."""

MEMORY_TOLERANCE = 1e-12
"""Budgets and peaks are sums of fractions like 1/2 and 1/3: compare them with this much slack (float rounding of
such sums is about 1e-15; a budget of 0.999999999 is below 1 and refused)."""


@dataclass(frozen=True)
class StageTable:
    """Per-stage facts the search methods read, indexed ``[stage, Kind]`` (the B column is unused)."""

    rank_of_stage: tuple[int, ...]
    """Rank holding each stage."""
    duration: np.ndarray
    """(S, len(Kind)) time each action of a stage takes, as the simulator times it."""
    memory_change: np.ndarray
    """(S, len(Kind)) change of the rank's activation memory after each action, as the simulator counts it:
    F +1/v, I −(1 − w)/v, W −w/v (w = ``Costs.w_memory_fraction``)."""
    comm: float
    """Transfer time of a product between two ranks (0 on the same rank)."""

    @property
    def num_stages(self) -> int:
        return len(self.rank_of_stage)

    def stages_of(self, rank: int) -> tuple[int, ...]:
        """The stages a rank holds, nearest the input first."""
        return tuple(s for s, r in enumerate(self.rank_of_stage) if r == rank)

    def hop(self, from_stage: int, to_stage: int) -> float:
        """Transfer time from one stage's product to a neighbour stage: ``comm`` across ranks, 0 on one rank."""
        return 0.0 if self.rank_of_stage[from_stage] == self.rank_of_stage[to_stage] else self.comm


def probe_schedule(num_ranks: int, placement: str, num_chunks: int | None = None) -> Schedule:
    """[Note: probe schedule] One micro-batch, each rank running F, I, W of each of its stages in turn.

    Not a runnable schedule (it is never walked), only the smallest input on which the simulator's cost and
    memory models say what every (stage, kind) costs."""
    num_chunks = PLACEMENTS[placement].chunks(num_chunks)  # v in a loop (1 unless asked), two in a V
    num_stages = num_ranks * num_chunks
    ranks = tuple(
        tuple(
            Action(stage, kind, 0)
            for stage in range(num_stages)
            if rank_of_stage(stage, num_ranks, placement) == rank
            for kind in SPLIT_KINDS
        )
        for rank in range(num_ranks)
    )
    return Schedule("probe", num_ranks, 1, num_chunks, placement, ranks)


def stage_table(num_ranks: int, placement: str, costs: Costs, num_chunks: int | None = None) -> StageTable:
    """The per-stage durations and memory changes under ``costs`` (read from the simulator's models): a rank's
    share split into its chunks, each chunk's F, I and W its share of the rank's."""
    probe = probe_schedule(num_ranks, placement, num_chunks)
    num_stages = probe.num_stages
    placed = list(all_actions(probe))  # (rank, action) in the compiled (rank-then-list) order
    stages = np.array([action.stage for _, action in placed])
    kinds = np.array([int(action.kind) for _, action in placed])
    ranks = np.array([rank for rank, _ in placed])
    duration = np.zeros((num_stages, len(Kind)))
    duration[stages, kinds] = slot_durations(probe, costs)  # one action per slot
    after, _ = memory_model(probe, costs)
    change = np.zeros((num_stages, len(Kind)))
    change[stages, kinds] = after - before_on_rank(after, ranks)
    return StageTable(
        rank_of_stage=tuple(rank_of_stage(s, num_ranks, placement) for s in range(num_stages)),
        duration=duration,
        memory_change=change,
        comm=float(costs.comm),
    )


def minimum_budget(table: StageTable, num_ranks: int) -> tuple[float, int]:
    """The least budget any schedule needs, and the rank that needs it.

    A micro-batch's forwards on every stage of a rank run before that rank's first backward of it can start
    (the backward of the deeper stage waits for its own forward; the shallower stage's backward waits for the
    deeper one's), so each rank holds at least one micro-batch's forwards on all of its stages: 1 micro-batch
    of its share in both placements. One micro-batch at a time through F, I, W meets it, so it is exact."""
    per_rank = [sum(table.memory_change[s, Kind.F] for s in table.stages_of(r)) for r in range(num_ranks)]
    rank = int(np.argmax(per_rank))
    return float(per_rank[rank]), rank


def _fraction(value: float) -> str:
    """1/2 rather than 0.5 where a budget is a simple fraction."""
    for denominator in (1, 2, 3, 4, 8):
        if abs(value * denominator - round(value * denominator)) < 1e-9:
            numerator = round(value * denominator)
            return f"{numerator}" if denominator == 1 else f"{numerator}/{denominator}"
    return f"{value:g}"


@dataclass(frozen=True)
class SearchProblem:
    """One search: find the per-rank orders with the shortest step under a memory budget."""

    num_ranks: int
    """p: pipeline ranks."""
    num_microbatches: int
    """m: micro-batches per step."""
    costs: Costs
    """Durations of F, I and W (one value for all stages, or measured ones per stage in ``stage_costs``),
    ``comm`` and ``w_memory_fraction``. A full-backward cost B alone is split into I = W = B/2, as ``Costs``
    does. Recomputation is not modelled by the search and is refused."""
    memory_budget: float
    """B: the most activation memory any rank may hold at once, in micro-batches of a rank's share (what
    ``Timeline.peak_memory_per_rank`` reports). A W still to run holds its share (``w_memory_fraction``).
    The budget bounds the simulator's peak itself, so a searched schedule never exceeds it."""
    placement: str = "loop"
    """"loop" (stage r on rank r) or "v" (rank r holds stages r and 2p−1−r); see ``engine.ir``."""
    time_limit_s: float = 10.0
    """Seconds the search may take; it stops with the best found so far and says it is not proven."""
    objective: str = "makespan"
    """What to minimise: "makespan" or "period" (``OBJECTIVES``)."""
    chunks: int | None = None
    """v, the model chunks per rank in a loop (1 to ``MAX_SEARCH_CHUNKS``; None: 1), Megatron's interleaving with
    the backward split; a V always has 2."""

    def __post_init__(self) -> None:
        who = "search"
        if self.objective not in OBJECTIVES:
            raise ValueError(f"search: objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        whole_number("ranks", self.num_ranks, 1, MAX_RANKS, who)
        whole_number("microbatches", self.num_microbatches, 1, MAX_MICROBATCHES, who)
        if self.placement not in SEARCHED_PLACEMENTS:
            raise ValueError(
                f"search: placement must be one of {', '.join(SEARCHED_PLACEMENTS)}, got {self.placement!r} (the "
                f"search sends every micro-batch through every stage; DualPipe's two copies are its own family)"
            )
        fixed = PLACEMENTS[self.placement].chunks_per_rank
        if self.chunks is not None and fixed is not None and self.chunks != fixed:
            raise ValueError(f"search: the {self.placement} placement has {fixed} chunks per rank, not {self.chunks}")
        if self.chunks is not None:
            whole_number("chunks", self.chunks, 1, MAX_SEARCH_CHUNKS, who)
        check_pairs(self.num_ranks, self.num_microbatches, self.num_chunks, who)
        if self.num_pairs > MAX_SEARCH_PAIRS:
            raise ValueError(
                f"search: {self.num_stages} stages × {self.num_microbatches} micro-batches = {self.num_pairs:,} "
                f"(stage, micro-batch) pairs; the search takes at most {MAX_SEARCH_PAIRS:,}"
            )
        if not isinstance(self.costs, Costs):
            raise ValueError(f"search: costs must be engine.Costs, got {type(self.costs).__name__}")
        if self.costs.recompute:
            raise ValueError("search: recomputation is not modelled by the search; search without it")
        budget = self.memory_budget
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget):
            raise ValueError(f"search: the memory budget must be a finite number of micro-batches, got {budget!r}")
        limit = self.time_limit_s
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= MAX_TIME_LIMIT_S:
            raise ValueError(f"search: the time limit must be from 0 to {MAX_TIME_LIMIT_S:g} seconds, got {limit!r}")
        table = self.table  # checks the stage costs' length against the stages
        longest = max(float(table.duration.max()), table.comm)
        if longest > MAX_SEARCH_COST:
            raise ValueError(
                f"search: an action or transfer of {longest:g} is longer than the {MAX_SEARCH_COST:g} the search "
                f"takes (costs are relative: divide them all by the same number)"
            )
        zero = [
            f"{kind.name} of stage {stage}"
            for stage in range(self.num_stages)
            for kind in SPLIT_KINDS
            if not table.duration[stage, kind] > 0
        ]
        if zero:
            raise ValueError(
                f"search: every F, I and W must take some time, but {', '.join(zero[:3])}"
                f"{' and others' if len(zero) > 3 else ''} take 0"
            )
        self._check_budget()

    def _check_budget(self) -> None:
        needed, rank = minimum_budget(self.table, self.num_ranks)
        if self.memory_budget >= needed - MEMORY_TOLERANCE:
            return
        budget = f"a memory budget of {self.memory_budget:.12g} micro-batches"
        if self.memory_budget < 1 - MEMORY_TOLERANCE and self.num_chunks == 1:
            raise ValueError(
                f"{budget} is below the 1 micro-batch the first forward needs: stage 0 keeps its activations "
                f"(1 micro-batch of rank 0's share) until that micro-batch's backward runs"
            )
        stages = self.table.stages_of(rank)
        parts = " + ".join(_fraction(self.table.memory_change[s, Kind.F]) for s in stages)
        unit = "micro-batch" if needed == 1 else "micro-batches"
        raise ValueError(
            f"{budget} is below the {needed:g} {unit} rank {rank} needs for its warm-up: the first "
            f"micro-batch's forwards on its stages {', '.join(map(str, stages))} ({parts} = {needed:g}) all "
            f"run before its first backward there can start"
        )

    @property
    def num_chunks(self) -> int:
        """v: ``chunks`` (1 unless asked) in a loop, two in a V (``PLACEMENTS[placement].chunks``)."""
        return PLACEMENTS[self.placement].chunks(self.chunks)

    @property
    def space(self) -> str:
        """The schedules this problem searches among, in words (what "optimal" is relative to)."""
        v = self.num_chunks
        if self.placement == "v":
            return "schedules on a V (2 chunks per rank)"
        if v == 1:
            return "schedules with one stage per rank"
        return f"schedules with {v} chunks per rank in loop placement"

    @property
    def num_stages(self) -> int:
        return self.num_ranks * self.num_chunks

    @property
    def num_pairs(self) -> int:
        """(stage, micro-batch) pairs: each is one F, one I and one W."""
        return self.num_stages * self.num_microbatches

    @cached_property
    def table(self) -> StageTable:
        return stage_table(self.num_ranks, self.placement, self.costs, self.num_chunks)

    @cached_property
    def minimum_budget(self) -> float:
        return minimum_budget(self.table, self.num_ranks)[0]

    def with_budget(self, memory_budget: float, time_limit_s: float | None = None) -> SearchProblem:
        """The same problem under another budget (and time limit)."""
        return SearchProblem(
            self.num_ranks,
            self.num_microbatches,
            self.costs,
            memory_budget,
            self.placement,
            self.time_limit_s if time_limit_s is None else time_limit_s,
            self.objective,
            self.chunks,
        )

    def in_space(self, placement: str, chunks: int | None, time_limit_s: float) -> SearchProblem:
        """The same sizes, costs and budget in another placement or number of chunks."""
        return dataclasses.replace(self, placement=placement, chunks=chunks, time_limit_s=time_limit_s)

    def score(self, timeline: Timeline) -> float:
        """The objective of a simulated step: its makespan or its period (``Timeline.period``)."""
        return timeline.makespan if self.objective == "makespan" else timeline.period

    def describe(self) -> str:
        return (
            f"{self.num_ranks} ranks, {self.num_microbatches} micro-batches, {self.placement} placement, "
            f"{self.num_chunks} chunk(s) per rank, memory budget {self.memory_budget:g} micro-batches, minimising "
            f"the {self.objective}"
        )
