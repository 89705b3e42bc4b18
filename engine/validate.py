"""Structural checks of a schedule, with errors that draw the rank × step grid.

Checks (DESIGN.md): every (stage, micro-batch) has exactly one F and either one B or one I and one W; on a
stage, F comes before I/B, and I before W; each action runs on the rank that holds its stage; and the
ranks' orders cannot deadlock (checked by walking the dependencies, which does not depend on costs).
"""

from __future__ import annotations

from .ir import Action, Kind, Schedule, slot_actions


class ScheduleError(ValueError):
    """A schedule that cannot run; the message shows the grid with ``<-- here``."""


def _fail(schedule: Schedule, problem: str, places: dict[int, int], notes: dict[int, str] | None = None) -> None:
    raise ScheduleError(f"{problem}\n{schedule.grid(mark=places, notes=notes, max_rows=24)}")


def check_structure(schedule: Schedule) -> None:
    """Everything but deadlock: completeness, uniqueness, placement and per-stage order."""
    p, m, num_stages = schedule.num_ranks, schedule.num_microbatches, schedule.num_stages
    seen: dict[tuple[int, Kind, int], tuple[int, int]] = {}
    for rank, slots in enumerate(schedule.ranks):
        for step, slot in enumerate(slots):
            for action in slot_actions(slot):
                if not (0 <= action.stage < num_stages and 0 <= action.microbatch < m):
                    _fail(schedule, f"{action} is outside {num_stages} stages × {m} micro-batches", {rank: step})
                if schedule.rank_of(action.stage) != rank:
                    _fail(
                        schedule,
                        f"{action} is on rank {rank} but stage {action.stage} lives on rank "
                        f"{schedule.rank_of(action.stage)} ({schedule.placement} placement, {p} ranks)",
                        {rank: step},
                    )
                key = (action.stage, action.kind, action.microbatch)
                if key in seen:
                    _fail(schedule, f"{action} appears twice", {rank: step, seen[key][0]: seen[key][1]})
                seen[key] = (rank, step)
    for stage in range(num_stages):
        rank = schedule.rank_of(stage)
        for mb in range(m):
            where = {kind: seen.get((stage, kind, mb)) for kind in Kind}
            label = f"stage {stage}, micro-batch {mb}"
            if where[Kind.F] is None:
                _fail(schedule, f"{label} has no forward {Action(stage, Kind.F, mb)}", {})
            has_split = where[Kind.I] is not None or where[Kind.W] is not None
            if where[Kind.B] is not None and has_split:
                step = (where[Kind.I] or where[Kind.W])[1]
                _fail(schedule, f"{label} has both a full backward B and a split I/W", {rank: step})
            if where[Kind.B] is None and not has_split:
                _fail(schedule, f"{label} has no backward: expected {stage}B{mb} or {stage}I{mb} and {stage}W{mb}", {})
            if has_split and (where[Kind.I] is None or where[Kind.W] is None):
                missing = "I" if where[Kind.I] is None else "W"
                present = where[Kind.W] if missing == "I" else where[Kind.I]
                _fail(schedule, f"{label} has a split backward without its {missing}", {rank: present[1]})
            backward = where[Kind.B] or where[Kind.I]
            if backward[1] <= where[Kind.F][1]:
                _fail(schedule, f"{label}: the backward comes before (or with) its forward on rank {rank}",
                      {rank: backward[1]})
            if where[Kind.W] is not None and where[Kind.W][1] <= where[Kind.I][1]:
                _fail(schedule, f"{label}: W comes before (or with) its I on rank {rank}", {rank: where[Kind.W][1]})


def validate(schedule: Schedule) -> Schedule:
    """Raise ScheduleError unless the schedule is complete, well ordered and deadlock-free; return it."""
    from .simulate import walk  # the same dependency walk the simulator times

    check_structure(schedule)
    walk(schedule, durations=None)
    return schedule
