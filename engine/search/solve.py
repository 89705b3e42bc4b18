"""One search from start to finish: bounds, the heuristic's variants, CP-SAT for small instances, and the final
check by the validator and the simulator, all inside the problem's time limit."""

from __future__ import annotations

import time

from .bounds import lower_bounds
from .exact import solve_exact
from .heuristic import GreedyOrder, greedy, variants
from .problem import SearchProblem
from .result import SearchResult, finish

SEARCH_METHODS = ("auto", "exact", "heuristic")
"""``auto``: the heuristic, then CP-SAT when the instance is small (at most ``AUTO_EXACT_PAIRS``) and the
heuristic's step time is not already proven by a bound; ``exact``: always CP-SAT (up to
``MAX_EXACT_PAIRS``); ``heuristic``: never CP-SAT."""
AUTO_EXACT_PAIRS = 64
"""Stages × micro-batches up to which ``auto`` runs CP-SAT: 4 ranks × 8 micro-batches, looped or V."""
MAX_EXACT_PAIRS = 512
"""Stages × micro-batches up to which the exact model may be built at all (it will rarely prove more)."""
DEFAULT_WORKERS = 2
"""CP-SAT's threads: the lab's machines have 2 cores."""


def search(problem: SearchProblem, method: str = "auto", *, num_workers: int = DEFAULT_WORKERS) -> SearchResult:
    """The shortest step found for ``problem`` within its time limit (see ``SearchResult`` for what is in it).

    The time limit covers everything. The heuristic's first variant always runs (it is the fallback and the
    exact method's starting point: milliseconds for small instances, about a second at 32 ranks × 256
    micro-batches); the others run while the time allows, keeping room for the final check."""
    if method not in SEARCH_METHODS:
        raise ValueError(f"search method must be one of {', '.join(SEARCH_METHODS)}, got {method!r}")
    pairs = problem.num_pairs
    if method == "exact" and pairs > MAX_EXACT_PAIRS:
        raise ValueError(
            f"the exact method takes at most {MAX_EXACT_PAIRS} (stage, micro-batch) pairs; "
            f"{problem.num_stages} stages × {problem.num_microbatches} micro-batches = {pairs}: use auto or "
            f"heuristic"
        )
    clock = time.perf_counter
    began = clock()
    deadline = began + problem.time_limit_s
    bounds = lower_bounds(problem)
    bound = max(bounds.values())

    # the heuristic's variants, best-first, while a next one still fits before the deadline
    best: GreedyOrder | None = None
    for variant in variants(problem):
        started = clock()
        order = greedy(problem, variant)
        if best is None or order.makespan < best.makespan - 1e-9:
            best = order
        spent = clock() - started
        if best.makespan <= bound * (1 + 1e-9) or clock() + 2 * spent > deadline:
            break  # proven by the bound, or out of time (room kept for the final check)
    assert best is not None
    proven = best.makespan <= bound * (1 + 1e-9)
    use_exact = method == "exact" or (method == "auto" and pairs <= AUTO_EXACT_PAIRS and not proven)
    if not use_exact:
        return finish(
            problem,
            best.ranks,
            lower_bounds=bounds,
            optimal_by_solver=False,
            method="heuristic",
            detail=f"greedy list scheduler ({best.variant})",
            began=began,
            clock=clock,
        )
    outcome = solve_exact(problem, best, bound, began=began, deadline=deadline, clock=clock, num_workers=num_workers)
    bounds["cp-sat"] = outcome.bound
    if outcome.ranks is None:  # stopped before CP-SAT's first solution: the heuristic's order stands
        return finish(
            problem,
            best.ranks,
            lower_bounds=bounds,
            optimal_by_solver=False,
            method="heuristic",
            detail=f"greedy list scheduler ({best.variant}); CP-SAT found nothing better in time",
            began=began,
            clock=clock,
            progress=outcome.progress,
        )
    return finish(
        problem,
        outcome.ranks,
        lower_bounds=bounds,
        optimal_by_solver=outcome.optimal,
        method="exact",
        detail=f"CP-SAT, {num_workers} worker(s), time scale ×{outcome.time_scale}, started from the greedy's order",
        began=began,
        clock=clock,
        progress=outcome.progress,
    )
