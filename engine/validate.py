"""Structural checks of a schedule, with errors that draw the rank × step grid.

Checks (DESIGN.md): every (stage, micro-batch) has exactly one F and either one B or one I and one W; on a
stage, F comes before I/B, and I before W; each action runs on the rank that holds its stage; and the
ranks' orders cannot deadlock (checked by walking the dependencies, which does not depend on costs).
"""

from __future__ import annotations

import numpy as np

from .dependencies import ScheduleError, compiled, execution_order
from .ir import Action, Kind, Schedule

__all__ = ["ScheduleError", "check_structure", "validate"]


def _fail(schedule: Schedule, problem: str, places: dict[int, int], notes: dict[int, str] | None = None) -> None:
    raise ScheduleError(f"{problem}\n{schedule.grid(mark=places, notes=notes, max_rows=24)}")


def check_structure(schedule: Schedule) -> None:
    """Everything but deadlock: completeness, uniqueness, placement and per-stage order.

    Vectorised over the compiled arrays (a 100k-action schedule checks in milliseconds); only when a check
    fails is the first offender looked up to write the message.
    """
    c = compiled(schedule)
    p, m, num_stages = schedule.num_ranks, schedule.num_microbatches, schedule.num_stages

    def first(mask: np.ndarray) -> int:
        return int(np.flatnonzero(mask)[0])

    def at(i: int) -> dict[int, int]:
        return {int(c.rank[i]): int(c.step[i])}

    outside = (c.stage < 0) | (c.stage >= num_stages) | (c.microbatch < 0) | (c.microbatch >= m)
    if outside.any():
        i = first(outside)
        _fail(
            schedule,
            f"{c.label(i)} is outside {num_stages} stages × {m} micro-batches (stages 0..{num_stages - 1}, "
            f"micro-batches 0..{m - 1})",
            at(i),
        )
    misplaced = c.owner[c.stage] != c.rank
    if misplaced.any():
        i = first(misplaced)
        _fail(
            schedule,
            f"{c.label(i)} is on rank {c.rank[i]} but stage {c.stage[i]} lives on rank "
            f"{c.owner[c.stage[i]]} ({schedule.placement} placement, {p} ranks)",
            at(i),
        )
    pairs = num_stages * m
    cell = c.stage * m + c.microbatch  # (stage, micro-batch) pair
    key = c.kind * pairs + cell
    counts = np.bincount(key, minlength=len(Kind) * pairs)
    if (counts > 1).any():
        repeated = np.flatnonzero(counts[key] > 1)[:2]
        _fail(
            schedule, f"{c.label(int(repeated[0]))} appears twice", {int(c.rank[i]): int(c.step[i]) for i in repeated}
        )
    count = {kind: counts[kind * pairs : (kind + 1) * pairs] for kind in Kind}
    position = np.full(len(Kind) * pairs, -1)  # list position of each (kind, pair); -1 where absent
    position[key] = c.step
    place = {kind: position[kind * pairs : (kind + 1) * pairs] for kind in Kind}

    def where(index: int) -> str:
        stage, mb = divmod(index, m)
        return f"stage {stage}, micro-batch {mb}"

    def named(index: int, kind: Kind) -> Action:
        """The action of ``kind`` on (stage, micro-batch) pair ``index``, present or not."""
        stage, mb = divmod(index, m)
        return Action(stage, kind, mb)

    def mark(index: int, positions: np.ndarray) -> dict[int, int]:
        return {schedule.rank_of(index // m): int(positions[index])}

    def owner_end(index: int) -> dict[int, int]:
        """Where a missing action should have been: the end of its stage's rank list."""
        rank = schedule.rank_of(index // m)
        return {rank: max(len(schedule.ranks[rank]) - 1, 0)} if schedule.ranks[rank] else {}

    if (count[Kind.F] == 0).any():
        i = first(count[Kind.F] == 0)
        _fail(
            schedule,
            f"{where(i)} has no forward {named(i, Kind.F)} (rank {schedule.rank_of(i // m)} never runs it)",
            owner_end(i),
        )
    split = (count[Kind.I] > 0) | (count[Kind.W] > 0)
    both = (count[Kind.B] > 0) & split
    if both.any():
        i = first(both)
        _fail(
            schedule,
            f"{where(i)} has both a full backward B and a split I/W",
            mark(i, np.maximum(place[Kind.I], place[Kind.W])),
        )
    neither = (count[Kind.B] == 0) & ~split
    if neither.any():
        i = first(neither)
        _fail(
            schedule,
            f"{where(i)} has no backward: expected {named(i, Kind.B)} or {named(i, Kind.I)} and "
            f"{named(i, Kind.W)} on rank {schedule.rank_of(i // m)}",
            owner_end(i),
        )
    half = count[Kind.I] != count[Kind.W]
    if half.any():
        i = first(half)
        missing, present = ("I", place[Kind.W]) if count[Kind.I][i] == 0 else ("W", place[Kind.I])
        _fail(schedule, f"{where(i)} has a split backward without its {missing}", mark(i, present))
    gradient_place = np.where(count[Kind.B] > 0, place[Kind.B], place[Kind.I])
    early = gradient_place <= place[Kind.F]
    if early.any():
        i = first(early)
        _fail(
            schedule,
            f"{where(i)}: the backward comes before (or with) its forward on rank {schedule.rank_of(i // m)}",
            mark(i, gradient_place),
        )
    early_w = (count[Kind.W] > 0) & (place[Kind.W] <= place[Kind.I])
    if early_w.any():
        i = first(early_w)
        _fail(
            schedule,
            f"{where(i)}: W comes before (or with) its I on rank {schedule.rank_of(i // m)}",
            mark(i, place[Kind.W]),
        )


def validate(schedule: Schedule) -> Schedule:
    """Raise ScheduleError unless the schedule is complete, well ordered and deadlock-free; return it.

    The deadlock check is the untimed walk, whose visiting order is kept for the runtime."""
    check_structure(schedule)
    execution_order(schedule)
    return schedule
