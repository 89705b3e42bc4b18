"""A search in a fresh child process, for a long-lived server (the app): CP-SAT's threads and every byte the
solver allocated go when the child ends, the child runs below the server's priority so the pages and the
health check keep answering while it works, and a child past its limit is ended. (Searches in the server's own
process leave their memory and CP-SAT's threads behind: six visitors searching at once leave 282 MB and 37
threads, and slow the health check to 4 s.)

Children are forked by a fork server that imported the search once (``FORK_SERVER``, started by the first
search): a fresh interpreter importing the engine for each would take 0.7 s on an idle machine and up to 4.7 s
with six visitors' pages loading, out of a 5 s limit. What the start still takes is counted in the visitor's
limit, as the command line counts its own imports.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from functools import partial

from ..costs import Costs
from ..limits import MIN_TIME_LIMIT_S
from ..runtime.fork_server import FORK_SERVER, start_fork_server
from ..runtime.isolated import call_isolated
from ..runtime.progress import Progress
from .frontier import Frontier, frontier
from .problem import SearchProblem
from .result import SearchInterrupted, SearchResult
from .solve import search
from .spaces import search_every_space

NICENESS = 2
"""The child's priority a little below the server's (Linux ``nice``: 0.64 of its weight), so the event loop wins a
busy core's ties without the search starving while visitors' pages load (at nice 5 a search starting beside six
page loads found nothing in 5 s)."""
WORKERS = max(1, (os.cpu_count() or 2) - 1)
"""CP-SAT's threads in the app: every core but one, which stays with the server's pages and health check."""
ANSWER_GRACE_S = 2.0
"""How long a search stopped at its limit may take to send its best order (validated and timed) back."""
GRACE_S = 30.0
"""How long past its budgets' limits a frontier may take before it is ended (a safety net: each budget's search
stops itself at its limit)."""
RETURN_RESERVE_S = 0.2
"""Kept from the search's limit for sending its result back (pickled, a few MB at 32 × 256) on a busy host."""


def search_isolated(problem: SearchProblem, *, every_space: bool = False) -> SearchResult:
    """``search(problem)`` in a child process, its start counted in ``problem.time_limit_s`` (the fork server's
    own start, once per server, is not); a child still searching at that limit (a busy host gives it less than
    its share) is stopped and answers with its best order so far. ValueError when the problem is refused,
    ``RunFailed`` when the child fails or sends nothing. ``every_space``: ``auto`` chunks, every placement
    searched within the limit (``engine.search.spaces``)."""
    start_fork_server()
    return call_isolated(
        _search_counting_start,
        (problem, time.time(), every_space),
        time_limit_s=problem.time_limit_s,
        what="search",
        niceness=NICENESS,
        context=FORK_SERVER,
        answer_grace_s=ANSWER_GRACE_S,
    )


def frontier_isolated(
    num_ranks: int,
    num_microbatches: int,
    costs: Costs,
    placement: str,
    budgets: tuple[float, ...],
    *,
    time_limit_per_budget_s: float,
    objective: str,
    chunks: int | None = None,
) -> Frontier:
    """``frontier(...)`` in a child process, ended past the budgets' time limits and the grace."""
    start_fork_server()
    return call_isolated(
        _frontier,
        (num_ranks, num_microbatches, costs, placement, budgets, time_limit_per_budget_s, objective, chunks),
        time_limit_s=len(budgets) * time_limit_per_budget_s + GRACE_S,
        what="search",
        niceness=NICENESS,
        context=FORK_SERVER,
    )


def _search_counting_start(
    problem: SearchProblem, asked_at: float, every_space: bool, progress: Progress
) -> SearchResult:
    """In the child: what is left of the limit once the child has started (the wall clock: the parent's
    monotonic clock means nothing here), then the search."""
    started = max(0.0, time.time() - asked_at)  # a forked child's process age is its fork server's
    left = problem.time_limit_s - started - RETURN_RESERVE_S
    try:
        problem = replace(problem, time_limit_s=max(MIN_TIME_LIMIT_S, left))
        if every_space:
            return search_every_space(problem, search=partial(search, num_workers=WORKERS))
        return search(problem, num_workers=WORKERS)
    except SearchInterrupted as stop:  # asked to stop at the visitor's limit: the best so far, validated and timed
        if stop.best is None:
            raise stop.stop from None
        return replace(stop.best, detail=stop.best.detail.replace("; interrupted", "; stopped at the time limit"))


def _frontier(num_ranks, num_microbatches, costs, placement, budgets, seconds, objective, chunks, progress):
    try:
        return frontier(
            num_ranks,
            num_microbatches,
            costs,
            placement,
            budgets,
            time_limit_per_budget_s=seconds,
            objective=objective,
            chunks=chunks,
            num_workers=WORKERS,
        )
    except SearchInterrupted as stop:  # ended past its limit: no frontier (the parent says so)
        raise stop.stop from None
