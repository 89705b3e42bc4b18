"""Structural checks of a schedule, with errors that draw the rank × step grid.

Checks (DESIGN.md): every (stage, micro-batch) has exactly one F and either one B or one I and one W; on a
stage, F comes before I/B, and I before W; each action runs on the rank that holds its stage; and the
ranks' orders cannot deadlock (checked by walking the dependencies, which does not depend on costs).

``check_structure`` runs its phases in order, each assuming the ones before it passed:

1. ``_check_bounds``:       every action names a stage and micro-batch that exist, on its stage's rank
2. ``_count_actions``:      no (kind, stage, micro-batch) appears twice; count and place the rest
3. ``_check_completeness``: every pair has its F, and one B or both I and W (never both kinds)
4. ``_check_order``:        on each stage, F before I/B and I before W
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dependencies import CompiledSchedule, ScheduleError, compiled
from .ir import Action, Kind, Schedule
from .walk import execution_order

__all__ = ["ScheduleError", "check_structure", "validate"]


def _fail(schedule: Schedule, problem: str, places: dict[int, int], notes: dict[int, str] | None = None) -> None:
    raise ScheduleError(f"{problem}\n{schedule.grid(mark=places, notes=notes, max_rows=24)}")


def _first(mask: np.ndarray) -> int:
    """The index of the first offender (only looked up once a vectorised check has failed)."""
    return int(np.flatnonzero(mask)[0])


def check_structure(schedule: Schedule) -> None:
    """Everything but deadlock: completeness, uniqueness, placement and per-stage order.

    Vectorised over the compiled arrays (a 100k-action schedule checks in milliseconds); only when a check
    fails is the first offender looked up to write the message.
    """
    c = compiled(schedule)
    _check_bounds(schedule, c)
    pairs = _count_actions(schedule, c)
    _check_completeness(pairs)
    _check_order(pairs)


def _check_bounds(schedule: Schedule, c: CompiledSchedule) -> None:
    """Phase 1: stages and micro-batches in range, each action on the rank that holds its stage."""
    m, num_stages = schedule.num_microbatches, schedule.num_stages

    def at(i: int) -> dict[int, int]:
        return {int(c.rank[i]): int(c.step[i])}

    outside = (c.stage < 0) | (c.stage >= num_stages) | (c.microbatch < 0) | (c.microbatch >= m)
    if outside.any():
        i = _first(outside)
        _fail(
            schedule,
            f"{c.label(i)} is outside {num_stages} stages × {m} micro-batches (stages 0..{num_stages - 1}, "
            f"micro-batches 0..{m - 1})",
            at(i),
        )
    off_route = c.stage // c.route_length != _route_of(schedule, c.microbatch)
    if off_route.any():  # DualPipe: a micro-batch goes through one copy of the model only
        i = _first(off_route)
        mb = int(c.microbatch[i])
        stages = schedule.route(mb)
        _fail(
            schedule,
            f"{c.label(i)}: micro-batch {mb} goes through stages {stages.start}..{stages.stop - 1} only (the "
            f"{schedule.placement} placement sends micro-batches 0..{m // 2 - 1} through the first copy, "
            f"{m // 2}..{m - 1} through the second)",
            at(i),
        )
    # only now is c.stage a safe index into c.owner
    misplaced = c.owner[c.stage] != c.rank
    if misplaced.any():
        i = _first(misplaced)
        _fail(
            schedule,
            f"{c.label(i)} is on rank {c.rank[i]} but stage {c.stage[i]} lives on rank "
            f"{c.owner[c.stage[i]]} ({schedule.placement} placement, {schedule.num_ranks} ranks)",
            at(i),
        )


@dataclass(frozen=True)
class _PairTable:
    """Per kind, over the (stage, micro-batch) pairs (index stage·m + micro-batch): how often each action
    appears and at which list position (-1 where absent); plus the words and grid marks for messages."""

    schedule: Schedule
    count: dict[Kind, np.ndarray]
    place: dict[Kind, np.ndarray]
    on_route: np.ndarray
    """True for the pairs that exist: every pair, but for DualPipe a micro-batch's own copy's stages."""

    def where(self, index: int) -> str:
        stage, mb = divmod(index, self.schedule.num_microbatches)
        return f"stage {stage}, micro-batch {mb}"

    def named(self, index: int, kind: Kind) -> Action:
        """The action of ``kind`` on pair ``index``, present or not."""
        stage, mb = divmod(index, self.schedule.num_microbatches)
        return Action(stage, kind, mb)

    def rank(self, index: int) -> int:
        """The rank that holds pair ``index``'s stage."""
        return self.schedule.rank_of(index // self.schedule.num_microbatches)

    def mark(self, index: int, positions: np.ndarray) -> dict[int, int]:
        return {self.rank(index): int(positions[index])}

    def owner_end(self, index: int) -> dict[int, int]:
        """Where a missing action should have been: the end of its stage's rank list."""
        rank = self.rank(index)
        actions = self.schedule.ranks[rank]
        return {rank: max(len(actions) - 1, 0)} if actions else {}


def _count_actions(schedule: Schedule, c: CompiledSchedule) -> _PairTable:
    """Phase 2: fail on a repeated action; otherwise count and place every (kind, pair) in one bincount."""
    m = schedule.num_microbatches
    pairs = schedule.num_stages * m
    cell = c.stage * m + c.microbatch  # (stage, micro-batch) pair
    key = c.kind * pairs + cell
    counts = np.bincount(key, minlength=len(Kind) * pairs)
    if (counts > 1).any():
        repeated = np.flatnonzero(counts[key] > 1)[:2]
        _fail(
            schedule, f"{c.label(int(repeated[0]))} appears twice", {int(c.rank[i]): int(c.step[i]) for i in repeated}
        )
    position = np.full(len(Kind) * pairs, -1)  # list position of each (kind, pair); -1 where absent
    position[key] = c.step
    stage_of_pair, mb_of_pair = np.divmod(np.arange(pairs), m)
    return _PairTable(
        schedule,
        count={kind: counts[kind * pairs : (kind + 1) * pairs] for kind in Kind},
        place={kind: position[kind * pairs : (kind + 1) * pairs] for kind in Kind},
        on_route=stage_of_pair // schedule.route_length == _route_of(schedule, mb_of_pair),
    )


def _route_of(schedule: Schedule, microbatch: np.ndarray) -> np.ndarray:
    """Which copy of the model each micro-batch goes through (0 but for DualPipe, ``Schedule.route``)."""
    per_copy = max(schedule.num_microbatches // schedule.copies, 1)
    return np.minimum(microbatch // per_copy, schedule.copies - 1)


def _check_completeness(t: _PairTable) -> None:
    """Phase 3: one F per pair, and exactly one way of running its backward (B, or I and W)."""
    schedule, count, place = t.schedule, t.count, t.place
    if ((count[Kind.F] == 0) & t.on_route).any():
        i = _first((count[Kind.F] == 0) & t.on_route)
        _fail(
            schedule,
            f"{t.where(i)} has no forward {t.named(i, Kind.F)} (rank {t.rank(i)} never runs it)",
            t.owner_end(i),
        )
    split = (count[Kind.I] > 0) | (count[Kind.W] > 0)
    both = (count[Kind.B] > 0) & split
    if both.any():
        i = _first(both)
        _fail(
            schedule,
            f"{t.where(i)} has both a full backward B and a split I/W",
            t.mark(i, np.maximum(place[Kind.I], place[Kind.W])),
        )
    neither = (count[Kind.B] == 0) & ~split & t.on_route
    if neither.any():
        i = _first(neither)
        _fail(
            schedule,
            f"{t.where(i)} has no backward: expected {t.named(i, Kind.B)} or {t.named(i, Kind.I)} and "
            f"{t.named(i, Kind.W)} on rank {t.rank(i)}",
            t.owner_end(i),
        )
    half = count[Kind.I] != count[Kind.W]
    if half.any():
        i = _first(half)
        missing, present = ("I", place[Kind.W]) if count[Kind.I][i] == 0 else ("W", place[Kind.I])
        _fail(schedule, f"{t.where(i)} has a split backward without its {missing}", t.mark(i, present))


def _check_order(t: _PairTable) -> None:
    """Phase 4: per stage, the gradient (B or I) after its F, and W after its I (list positions, one rank)."""
    schedule, count, place = t.schedule, t.count, t.place
    gradient_place = np.where(count[Kind.B] > 0, place[Kind.B], place[Kind.I])
    early = (gradient_place <= place[Kind.F]) & t.on_route
    if early.any():
        i = _first(early)
        _fail(
            schedule,
            f"{t.where(i)}: the backward comes before (or with) its forward on rank {t.rank(i)}",
            t.mark(i, gradient_place),
        )
    early_w = (count[Kind.W] > 0) & (place[Kind.W] <= place[Kind.I])
    if early_w.any():
        i = _first(early_w)
        _fail(
            schedule,
            f"{t.where(i)}: W comes before (or with) its I on rank {t.rank(i)}",
            t.mark(i, place[Kind.W]),
        )


def validate(schedule: Schedule) -> Schedule:
    """Raise ScheduleError unless the schedule is complete, well ordered and deadlock-free; return it.

    The deadlock check is the untimed walk, whose visiting order is kept for the runtime."""
    check_structure(schedule)
    execution_order(schedule)
    return schedule
