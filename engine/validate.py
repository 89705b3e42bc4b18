"""Structural checks of a schedule, with errors that draw the rank × step grid.

Checks (DESIGN.md): every (stage, micro-batch) has exactly one F and either one B or one I and one W; on a
stage, F comes before I/B, and I before W; each action runs on the rank that holds its stage; and the
ranks' orders cannot deadlock (checked by walking the dependencies, which does not depend on costs).
"""

from __future__ import annotations

import numpy as np

from .ir import KIND_LETTERS, Action, Kind, Schedule


class ScheduleError(ValueError):
    """A schedule that cannot run; the message shows the grid with ``<-- here``."""


def _fail(schedule: Schedule, problem: str, places: dict[int, int], notes: dict[int, str] | None = None) -> None:
    raise ScheduleError(f"{problem}\n{schedule.grid(mark=places, notes=notes, max_rows=24)}")


def check_structure(schedule: Schedule) -> None:
    """Everything but deadlock: completeness, uniqueness, placement and per-stage order.

    Vectorised over the compiled arrays (a 100k-action schedule checks in milliseconds); only when a check
    fails is the first offender looked up to write the message.
    """
    c = schedule.compiled
    p, m, num_stages = schedule.num_ranks, schedule.num_microbatches, schedule.num_stages

    def first(mask: np.ndarray) -> int:
        return int(np.flatnonzero(mask)[0])

    def action(i: int) -> Action:
        return Action(int(c.stage[i]), Kind(KIND_LETTERS[c.kind[i]]), int(c.microbatch[i]))

    outside = (c.stage < 0) | (c.stage >= num_stages) | (c.microbatch < 0) | (c.microbatch >= m)
    if outside.any():
        i = first(outside)
        _fail(schedule, f"{action(i)} is outside {num_stages} stages × {m} micro-batches", {int(c.rank[i]): int(c.step[i])})
    owner = np.array([schedule.rank_of(s) for s in range(num_stages)])
    misplaced = owner[c.stage] != c.rank
    if misplaced.any():
        i = first(misplaced)
        _fail(schedule, f"{action(i)} is on rank {c.rank[i]} but stage {c.stage[i]} lives on rank "
                        f"{owner[c.stage[i]]} ({schedule.placement} placement, {p} ranks)",
              {int(c.rank[i]): int(c.step[i])})
    cell = c.stage * m + c.microbatch  # (stage, micro-batch) pair
    key = c.kind * (num_stages * m) + cell
    counts = np.bincount(key, minlength=4 * num_stages * m)
    if (counts > 1).any():
        repeated = np.flatnonzero(counts[key] > 1)[:2]
        _fail(schedule, f"{action(int(repeated[0]))} appears twice",
              {int(c.rank[i]): int(c.step[i]) for i in repeated})
    forwards, fulls, inputs, weights = counts.reshape(4, num_stages * m)
    # list position of each (kind, cell); -1 where absent
    position = np.full(4 * num_stages * m, -1)
    position[key] = c.step
    pos_f, pos_b, pos_i, pos_w = position.reshape(4, num_stages * m)

    def where(index: int) -> str:
        stage, mb = divmod(index, m)
        return f"stage {stage}, micro-batch {mb}"

    def mark(index: int, pos: np.ndarray) -> dict[int, int]:
        return {schedule.rank_of(index // m): int(pos[index])}

    def owner_end(index: int) -> dict[int, int]:
        """Where a missing action should have been: the end of its stage's rank list."""
        rank = schedule.rank_of(index // m)
        return {rank: max(len(schedule.ranks[rank]) - 1, 0)} if schedule.ranks[rank] else {}

    if (forwards == 0).any():
        i = first(forwards == 0)
        _fail(schedule, f"{where(i)} has no forward {i // m}F{i % m} (rank {schedule.rank_of(i // m)} never runs it)",
              owner_end(i))
    both = (fulls > 0) & ((inputs > 0) | (weights > 0))
    if both.any():
        i = first(both)
        _fail(schedule, f"{where(i)} has both a full backward B and a split I/W", mark(i, np.maximum(pos_i, pos_w)))
    neither = (fulls == 0) & (inputs == 0) & (weights == 0)
    if neither.any():
        i = first(neither)
        _fail(schedule, f"{where(i)} has no backward: expected {i // m}B{i % m} or {i // m}I{i % m} and "
                        f"{i // m}W{i % m} on rank {schedule.rank_of(i // m)}", owner_end(i))
    half = (inputs != weights)
    if half.any():
        i = first(half)
        missing, present = ("I", pos_w) if inputs[i] == 0 else ("W", pos_i)
        _fail(schedule, f"{where(i)} has a split backward without its {missing}", mark(i, present))
    pos_grad = np.where(fulls > 0, pos_b, pos_i)
    early = pos_grad <= pos_f
    if early.any():
        i = first(early)
        _fail(schedule, f"{where(i)}: the backward comes before (or with) its forward on rank "
                        f"{schedule.rank_of(i // m)}", mark(i, pos_grad))
    early_w = (weights > 0) & (pos_w <= pos_i)
    if early_w.any():
        i = first(early_w)
        _fail(schedule, f"{where(i)}: W comes before (or with) its I on rank {schedule.rank_of(i // m)}",
              mark(i, pos_w))


def validate(schedule: Schedule) -> Schedule:
    """Raise ScheduleError unless the schedule is complete, well ordered and deadlock-free; return it."""
    from .simulate import walk  # the same dependency walk the simulator times

    check_structure(schedule)
    walk(schedule)
    return schedule
