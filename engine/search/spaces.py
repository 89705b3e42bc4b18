"""``auto`` chunks: one search in each space of schedules the lab can search — one stage per rank, a V, and a
loop of 2, 3 or 4 chunks per rank (Megatron's interleaving with the backward split) — within the one time limit,
keeping the best. Each space's "optimal" is its own: the result names the space it was proven in and lists what
every other space reached, so a hand-made schedule of another placement can never silently beat an "optimal"."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from ..limits import MIN_TIME_LIMIT_S
from .problem import SearchProblem
from .result import SearchResult

SPACES: tuple[tuple[str, int | None], ...] = (("loop", 1), ("v", None), ("loop", 2), ("loop", 3), ("loop", 4))
"""(placement, chunks per rank) searched by ``auto``, cheapest first (one stage per rank is the smallest model)."""


@dataclass(frozen=True)
class SpaceOutcome:
    """What the search reached in one space."""

    space: str
    """``SearchProblem.space``: the schedules searched, in words."""
    placement: str
    chunks: int
    value: float
    """The objective of the best schedule found there (its makespan or period)."""
    status: str
    """``OPTIMAL`` (within that space) or ``NOT_PROVEN``."""
    chosen: bool
    """The space of the schedule returned."""


def spaces_of(problem: SearchProblem) -> list[SearchProblem]:
    """``problem`` in every space of ``SPACES`` that takes its sizes and budget (a size a space refuses, for
    instance too many stage × micro-batch pairs, leaves that space out)."""
    found = []
    for placement, chunks in SPACES:
        try:
            found.append(problem.in_space(placement, chunks, problem.time_limit_s))
        except ValueError:
            continue
    return found


def search_every_space(problem: SearchProblem, method: str = "auto", *, search=None, clock=time.perf_counter):
    """The best schedule over every space, each searched with an equal share of what is left of the time limit
    (a space that finishes early leaves its time to the next). Ties go to the earlier space (fewer chunks)."""
    from .solve import search as search_one  # solve imports nothing from here: no cycle at import time

    search = search or search_one
    began = clock()
    deadline = began + problem.time_limit_s
    spaces = spaces_of(problem)
    if not spaces:
        raise ValueError(f"search: no placement takes {problem.describe()}")
    results: list[SearchResult] = []
    for index, space in enumerate(spaces):
        share = (deadline - clock()) / (len(spaces) - index)
        if share < MIN_TIME_LIMIT_S and results:
            break  # out of time: the spaces searched so far are what the result reports
        try:
            results.append(search(space.with_budget(space.memory_budget, max(share, MIN_TIME_LIMIT_S)), method))
        except ValueError:  # e.g. the exact method refuses a space's size: the other spaces still count
            continue
    if not results:
        raise ValueError(f"search: no placement could be searched with the {method} method")
    best = results[0]
    for result in results[1:]:
        if result.objective_value < best.objective_value - 1e-9 * max(1.0, best.objective_value):
            best = result
    outcomes = tuple(
        SpaceOutcome(
            space=result.problem.space,
            placement=result.problem.placement,
            chunks=result.problem.num_chunks,
            value=result.objective_value,
            status=result.status,
            chosen=result is best,
        )
        for result in results
    )
    return dataclasses.replace(best, spaces=outcomes, wall_time_s=clock() - began)
