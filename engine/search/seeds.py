"""The hand-made families as candidates: a family built for the same placement and chunks, its full backwards
split into I then W (same time, same peak), is a schedule the search may return when it fits the budget and
beats what the greedy found. It makes the search never worse than a family it could have picked (ZB-H1 at p,
ZB-H2 at 2p − 1, ZB-V on a V, interleaved 1F1B and its zero-bubble variant at v chunks in a loop), whatever
the costs.

Only orders that keep each stage's forwards, I's and W's in micro-batch order are taken: the exact model
assumes that order ([Note: micro-batch order] in ``engine.search.exact``) and uses the seed as its hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..ir import Action, Kind, Schedule, all_actions, slot_actions
from ..schedules import FAMILIES, build_schedule
from ..simulator import simulate
from .heuristic import Candidate
from .problem import MEMORY_TOLERANCE, SearchProblem


def split_backwards(schedule: Schedule) -> tuple[tuple[Action, ...], ...]:
    """Each rank's list with every B as I then W, and every overlapped F&B pair as its actions in turn."""
    ranks = []
    for slots in schedule.ranks:
        actions: list[Action] = []
        for action in (a for slot in slots for a in slot_actions(slot)):
            if action.kind is Kind.B:
                actions += [action._replace(kind=Kind.I), action._replace(kind=Kind.W)]
            else:
                actions.append(action)
        ranks.append(tuple(actions))
    return tuple(ranks)


def in_microbatch_order(schedule: Schedule) -> bool:
    """True when, on every stage, each kind runs its micro-batches 0, 1, 2, … in turn."""
    taken: dict[tuple[int, Kind], int] = {}
    for _, action in all_actions(schedule):
        key = (action.stage, action.kind)
        if taken.get(key, 0) != action.microbatch:
            return False
        taken[key] = action.microbatch + 1
    return True


def family_candidates(problem: SearchProblem) -> Iterator[Callable[[], Candidate | None]]:
    """For each family with the problem's placement, a function that builds and times it (None when it is
    over the budget or out of micro-batch order); built lazily, so the search's clock decides how many run."""
    for name, family in FAMILIES.items():
        chunked = family.takes_chunks and problem.placement == "loop" and problem.num_chunks > 1
        if not chunked and (family.takes_chunks or family.fixed_chunks != problem.num_chunks):
            continue

        def build(name: str = name, title: str = family.title, chunked: bool = chunked) -> Candidate | None:
            try:  # an interleaved family at the problem's chunks (it may refuse the sizes)
                chunks = problem.num_chunks if chunked else None
                built = build_schedule(name, problem.num_ranks, problem.num_microbatches, chunks)
            except ValueError:
                return None
            if built.placement != problem.placement or built.num_chunks != problem.num_chunks:
                return None
            p, m, v = problem.num_ranks, problem.num_microbatches, problem.num_chunks
            ranks = split_backwards(built)
            schedule = Schedule(name, p, m, v, problem.placement, ranks)
            if not in_microbatch_order(schedule):
                return None
            timeline = simulate(schedule, problem.costs)
            if max(timeline.peak_memory_per_rank()) > problem.memory_budget + MEMORY_TOLERANCE:
                return None
            changed = "" if ranks == built.ranks else " (each B or overlapped pair run as its parts in turn)"
            return Candidate(ranks, timeline.makespan, f"the hand-made {title}{changed}", problem.score(timeline))

        yield build
