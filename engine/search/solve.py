"""One search from start to finish: bounds, the heuristic's variants, CP-SAT for small instances, and the final
check by the validator and the simulator, all inside the problem's time limit."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial

from ..ir import Schedule
from ..simulator import simulate
from .bounds import lower_bounds
from .coarse import coarse_problem
from .exact import Progress, SolverInterrupted, model_scales, solve_exact
from .heuristic import Candidate, greedy, one_at_a_time, variants
from .problem import SearchProblem
from .result import SearchInterrupted, SearchResult, finish
from .seeds import family_candidates

SEARCH_METHODS = ("auto", "exact", "heuristic")
"""``auto``: the heuristic, then CP-SAT when the instance is small (at most ``AUTO_EXACT_PAIRS``), its
costs have at most 3 decimals and the heuristic's step time is not already proven by a bound; ``exact``:
always CP-SAT (up to ``MAX_EXACT_PAIRS``); ``heuristic``: never CP-SAT."""
AUTO_EXACT_PAIRS = 64
"""Stages × micro-batches up to which ``auto`` runs CP-SAT on the makespan: 4 ranks × 8 micro-batches, looped or
V. On the period ``auto`` runs it up to ``MAX_EXACT_PAIRS``: the greedy is weaker there (on the Zero Bubble
paper's own timings it stays above the paper's ZB-2p where CP-SAT, given 20 s, matches or beats it)."""
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
    scalable = model_scales(problem) is not None
    if method == "exact" and not scalable:
        raise ValueError(
            "the exact method needs costs that some factor up to 1000 makes whole numbers (e.g. at most 3 "
            "decimals, or thirds); use auto or heuristic"
        )
    clock = time.perf_counter
    began = clock()
    found: list[tuple] = []  # (orders, how found, method) as they improve: what an interrupt keeps
    try:
        return _search(problem, method, pairs, scalable, began, clock, num_workers, found)
    except KeyboardInterrupt as stop:  # Ctrl-C or a stop signal: the best so far goes with the interrupt
        if isinstance(stop, SolverInterrupted):
            if stop.ranks is not None:
                found.append((stop.ranks, "CP-SAT's last solution before the interrupt", "exact"))
            stop = stop.stop
        best = None
        if found:
            ranks, detail, used = found[-1]
            best = finish(problem, ranks, lower_bounds=lower_bounds(problem), optimal_by_solver=False,
                          method=used, detail=f"{detail}; interrupted", began=began, clock=clock)  # fmt: skip
        raise SearchInterrupted(stop, best) from None


def _search(problem, method, pairs, scalable, began, clock, num_workers, found: list) -> SearchResult:
    """``search``'s body; each better order it finds is appended to ``found``."""
    deadline = began + problem.time_limit_s
    bounds = lower_bounds(problem)
    bound = max(bounds.values())  # on the problem's objective

    # the candidates, likely best first, while a next one still fits before the deadline
    best: Candidate | None = None
    for make in candidates(problem):
        started = clock()
        candidate = make()
        if candidate is not None and (best is None or candidate.score < best.score - 1e-9):
            best = candidate
            found.append((best.ranks, best.source, "heuristic"))
        spent = clock() - started
        if best is not None and (best.score <= bound * (1 + 1e-9) or clock() + 2 * spent > deadline):
            break  # proven by the bound, or out of time (room kept for the final check)
    if best is None:  # no greedy variant or family could be placed (none is known to): the sequential order
        best = one_at_a_time(problem)
        found.append((best.ranks, best.source, "heuristic"))
    proven = best.score <= bound * (1 + 1e-9)
    ranks, by_solver, used, detail = best.ranks, False, "heuristic", best.source
    progress: tuple[Progress, ...] = ()
    auto_pairs = AUTO_EXACT_PAIRS if problem.objective == "makespan" else MAX_EXACT_PAIRS
    if method == "exact" or (method == "auto" and pairs <= auto_pairs and scalable and not proven):
        coarse = _coarse_pass(problem, best, deadline, clock, began, num_workers, found)
        if coarse is not best:  # CP-SAT's order on the rounded costs: the exact model starts from it
            best, used = coarse, "exact"
            ranks, detail = best.ranks, best.source
        outcome = solve_exact(
            problem, best, bound, began=began, deadline=deadline, clock=clock, num_workers=num_workers
        )
        if outcome.bound is not None:  # a bound CP-SAT proved; none when it was stopped first
            bounds["cp-sat"] = outcome.bound
        progress = outcome.progress
        if outcome.ranks is None:  # stopped before CP-SAT's first solution: the heuristic's order stands
            detail += "; CP-SAT found nothing better in time"
        else:
            ranks, by_solver, used = outcome.ranks, outcome.optimal, "exact"
            detail = f"CP-SAT, {num_workers} worker(s), time ×{outcome.time_scale}, started from {best.source}"
    return finish(
        problem,
        ranks,
        lower_bounds=bounds,
        optimal_by_solver=by_solver,
        method=used,
        detail=detail,
        began=began,
        clock=clock,
        progress=progress,
    )


COARSE_SHARE = 0.45
"""Share of the time left that the coarse pass (``exact.coarse_scale``) takes before the exact model starts from
its answer."""


def _coarse_pass(problem, best: Candidate, deadline, clock, began, num_workers, found: list) -> Candidate:
    """CP-SAT on the costs rounded to a coarser tick (``engine.search.coarse``) for ``COARSE_SHARE`` of the time
    left, from ``best``; its order timed with the true costs, kept when it beats ``best`` (returned otherwise)."""
    coarse_pair = coarse_problem(problem)
    if coarse_pair is None:
        return best
    rounded, scale = coarse_pair
    stop = clock() + COARSE_SHARE * (deadline - clock())
    bound = max(lower_bounds(rounded).values())
    outcome = solve_exact(rounded, best, bound, began=began, deadline=stop, clock=clock, num_workers=num_workers)
    if outcome.ranks is None:
        return best
    p, m, v = problem.num_ranks, problem.num_microbatches, problem.num_chunks
    timeline = simulate(Schedule("coarse", p, m, v, problem.placement, outcome.ranks), problem.costs, check=False)
    source = f"CP-SAT on the costs × {scale} rounded, started from {best.source}"
    coarse = Candidate(outcome.ranks, timeline.makespan, source, problem.score(timeline))
    if coarse.score >= best.score - 1e-9:
        return best
    found.append((coarse.ranks, coarse.source, "exact"))
    return coarse


def candidates(problem: SearchProblem) -> Iterator[Callable[[], Candidate | None]]:
    """What the heuristic tries, in order: the greedy's usual winner, the hand-made families of the same
    placement (``engine.search.seeds``), then the greedy's other variants."""
    first, *others = variants(problem)
    yield partial(greedy, problem, first)
    yield from family_candidates(problem)
    for variant in others:
        yield partial(greedy, problem, variant)
