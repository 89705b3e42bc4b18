"""The coarse first pass (engine.search.coarse): the rounded problem against rounding done here, when it applies,
and that an order it finds is kept only when it is better with the true costs."""

from __future__ import annotations

import time

import pytest

from engine import Costs
from engine.search import SearchProblem
from engine.search.coarse import coarse_problem
from engine.search.heuristic import Variant, greedy
from engine.search.solve import _coarse_pass
from engine.search.zero_bubble_paper import TABLE_5


def test_the_zero_bubble_papers_timings_are_rounded_to_tenths():
    row = TABLE_5[1]  # 1.5B, p = 8, m = 32: F 18.513, I 18.086, W 9.331, transfer 0.626
    problem = SearchProblem(8, 32, row.costs, 16, objective="period", time_limit_s=10)
    rounded, scale = coarse_problem(problem)
    assert scale == 10  # 9.331 × 10 = 93 ticks ≥ 50; × 1 would be 9
    durations = rounded.costs.durations
    assert (durations["F"], durations["I"], durations["W"], rounded.costs.comm) == (18.5, 18.1, 9.3, 0.6)
    assert durations["B"] == pytest.approx(18.1 + 9.3)
    assert (rounded.num_ranks, rounded.num_microbatches, rounded.memory_budget) == (8, 32, 16)


@pytest.mark.parametrize(
    "costs",
    [
        Costs.of({"F": 1, "I": 1, "W": 1}),  # already whole ticks: nothing coarser
        Costs.of({"F": 18.513, "I": 18.086, "W": 9.331}, stage_scale=(1.0, 1.2, 1.0, 1.0)),  # per-stage scales
        Costs.of({"F": 18.513, "I": 18.086, "W": 9.331}, hop_comm=(0.5, 0.6, 0.5, 0.6)),  # a time per hop
    ],
)
def test_no_coarse_pass_where_it_would_not_be_coarser_or_the_costs_vary_by_stage(costs):
    assert coarse_problem(SearchProblem(4, 8, costs, 8, time_limit_s=5)) is None


def test_the_coarse_order_is_kept_only_when_the_true_costs_make_it_better():
    row = TABLE_5[0]  # 1.5B, p = 8, m = 24
    problem = SearchProblem(8, 24, row.costs, 16, objective="period", time_limit_s=10)
    start = greedy(problem, Variant("fill", "fit-then-eager"))
    clock = time.perf_counter
    began = clock()
    found: list = []
    result = _coarse_pass(problem, start, began + 3, clock, began, 2, found)
    assert result.score <= start.score
    if result is not start:  # timed with the true costs, and recorded for an interrupt
        assert result.source.startswith("CP-SAT on the costs × 10 rounded") and found[-1][0] == result.ranks
    else:
        assert found == []
