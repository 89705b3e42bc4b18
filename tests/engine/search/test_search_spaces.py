"""The search over chunked placements — a loop of 2, 3 or 4 chunks per rank besides one stage per rank
and the V — and ``auto``, which searches every space within the one time limit and keeps the best. "Optimal" always
names its space; the searched step is never longer than a hand-made family's that fits the same memory."""

from __future__ import annotations

import json
import time

import pytest

from engine import FAMILIES, UNIT, Costs, build_schedule, simulate
from engine.cli import main
from engine.search import OPTIMAL, SearchProblem, lower_bounds, search
from engine.search.spaces import search_every_space
from tests.engine.search.test_search import HALVES, UNEVEN, best_of_all_orders, check


def every_family_at(p: int, m: int, costs: Costs):
    """Each family as the page lists it, and the interleaved ones at every chunk count the search takes."""
    for name, family in FAMILIES.items():
        for chunks in (2, 3, 4) if family.takes_chunks else (None,):
            try:
                schedule = build_schedule(name, p, m, chunks)
            except ValueError:
                continue
            yield f"{name} (v={schedule.num_chunks})", simulate(schedule, costs)


@pytest.mark.parametrize("memory", [4, 5, 8])
def test_the_search_is_never_beaten_by_a_family_that_fits_its_memory(memory):
    """4 ranks × 8 micro-batches, F = I = W = 1: the issue's counter-example was 27 "optimal" beside interleaved
    zero bubble's 25.5 at the same memory."""
    result = check(search_every_space(SearchProblem(4, 8, UNIT, memory, time_limit_s=10)))
    fitting = {
        name: timeline.makespan
        for name, timeline in every_family_at(4, 8, UNIT)
        if max(timeline.peak_memory_per_rank()) <= memory + 1e-9
    }
    assert "interleaved-zb (v=2)" in fitting and fitting["interleaved-zb (v=2)"] == 25.5
    assert all(result.makespan <= makespan + 1e-9 for makespan in fitting.values()), (result.makespan, fitting)
    words = result.claim
    assert f"memory ≤ {memory}" in words and "chunks per rank" in words, words  # its space, named
    assert len(result.spaces) == 5 and sum(outcome.chosen for outcome in result.spaces) == 1
    chosen = next(outcome for outcome in result.spaces if outcome.chosen)
    assert (chosen.placement, chosen.chunks) == (result.problem.placement, result.problem.num_chunks)
    assert chosen.value == min(outcome.value for outcome in result.spaces)


def test_optimal_is_said_of_its_space():
    """One stage per rank: 27 is optimal there, and the words say among what."""
    result = check(search(SearchProblem(4, 8, UNIT, 4, time_limit_s=10)))
    assert result.status == OPTIMAL and result.makespan == 27
    assert result.claim.startswith("optimal among schedules with one stage per rank, memory ≤ 4"), result.claim


@pytest.mark.parametrize("chunks", [2, 3, 4])
def test_the_interleaved_families_are_candidates_in_their_space(chunks):
    """A loop of v chunks starts from interleaved zero bubble at v: never longer than it within its memory."""
    family = simulate(build_schedule("interleaved-zb", 4, 8, chunks), UNIT)
    memory = max(family.peak_memory_per_rank())
    result = check(search(SearchProblem(4, 8, UNIT, memory, chunks=chunks, time_limit_s=5)))
    assert result.problem.num_chunks == chunks and result.schedule.num_chunks == chunks
    assert result.makespan <= family.makespan + 1e-9


@pytest.mark.parametrize("costs", [UNIT, UNEVEN, HALVES, Costs.of({"F": 1, "I": 1, "W": 2}, comm=1)])
def test_lower_bounds_hold_for_the_interleaved_families(costs):
    """A bound is one only if no schedule beats it: each interleaved family under its own peak as budget."""
    for name in ("interleaved-1f1b", "interleaved-zb"):
        for p, m, chunks in ((4, 8, 2), (4, 8, 3), (4, 8, 4), (3, 6, 2), (2, 4, 4)):
            try:
                schedule = build_schedule(name, p, m, chunks)
            except ValueError:
                continue
            timeline = simulate(schedule, costs)
            problem = SearchProblem(p, m, costs, max(timeline.peak_memory_per_rank()), chunks=chunks)
            for bound_name, bound in lower_bounds(problem).items():
                assert bound <= timeline.makespan + 1e-9, (name, p, m, chunks, bound_name)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("p", "m", "chunks", "costs", "budget"),
    [(1, 2, 2, UNIT, 1), (2, 1, 2, UNEVEN, 1), (1, 2, 3, UNEVEN, 1), (2, 1, 3, UNIT, 1)],
)
def test_exact_method_equals_the_best_of_all_orders_in_a_chunked_loop(p, m, chunks, costs, budget):
    """Against every order of every rank (``tests/test_search.best_of_all_orders``): the exact model and the
    bounds are right for a loop of 2 and 3 chunks."""
    problem = SearchProblem(p, m, costs, budget, chunks=chunks, time_limit_s=30)
    best = best_of_all_orders(problem)
    result = check(search(problem, "exact", num_workers=1))
    assert result.status == OPTIMAL and result.makespan == pytest.approx(best)
    assert all(bound <= best + 1e-9 for bound in result.lower_bounds.values())


def test_the_command_line_searches_every_space_and_says_which_won(capsys):
    began = time.perf_counter()
    code = main(["search", "--ranks", "4", "--microbatches", "8", "--memory", "4", "--chunks", "auto",
                 "--time-limit", "10", "--json"])  # fmt: skip
    assert code == 0 and time.perf_counter() - began < 12
    found = json.loads(capsys.readouterr().out)
    assert found["makespan"] <= 25.5 and found["chunks"] > 1
    assert [(s["placement"], s["chunks"]) for s in found["spaces"]] == [
        ("loop", 1), ("v", 2), ("loop", 2), ("loop", 3), ("loop", 4)
    ]  # fmt: skip
    assert found["space"] in found["claim"]


def test_auto_refuses_costs_per_stage(capsys):
    code = main(["search", "--ranks", "2", "--microbatches", "4", "--memory", "2", "--chunks", "auto",
                 "--costs", "F=1:1,I=1:1,W=1:1"])  # fmt: skip
    assert code == 2
    assert "one cost per kind" in capsys.readouterr().err


def test_a_v_with_other_chunks_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="the v placement has 2 chunks per rank, not 3"):
        SearchProblem(4, 8, UNIT, 4, "v", chunks=3)
