"""The period objective (engine.search, the Zero Bubble paper's measure): the period and its bubble rate by hand,
the search at memory p equal to ZB-H1 on the period and near zero bubble at 2p, as the paper reports."""

import pytest

from engine import Costs, build_schedule, simulate
from engine.cli import main
from engine.search import SearchProblem, search


def test_period_and_its_bubble_rate_by_hand():
    """1F1B, p = 4, m = 8, F = 1, B = 2: rank 0 runs from 0 to the makespan (m + p − 1)(F + B) = 33; every rank's
    work is m(F + B) = 24, so the repeated step's bubble rate is 9/33."""
    timeline = simulate(build_schedule("1f1b", 4, 8), Costs.of({"F": 1, "B": 2}))
    assert timeline.makespan == 33 and timeline.period == 33
    assert timeline.period_bubble_rate == pytest.approx(9 / 33)
    # ZB-H1 with F = I = W = 1: (p − 1)(F + I − W) left on the longest span (Qi et al. 2024, §3.2): 24 + 3
    zb_h1 = simulate(build_schedule("zb-h1", 4, 8), Costs.of({"F": 1, "I": 1, "W": 1}))
    assert zb_h1.period == 27 and zb_h1.period_bubble_rate == pytest.approx(3 / 27)
    assert simulate(build_schedule("zb-h2", 4, 8), Costs.of({"F": 1, "I": 1, "W": 1})).period == 24  # zero


@pytest.mark.parametrize("method", ["exact", "heuristic"])
def test_at_memory_p_the_period_is_zb_h1s_and_at_2p_zero(method):
    costs = Costs.of({"F": 1, "I": 1, "W": 1})
    at_p = search(SearchProblem(4, 8, costs, 4, objective="period", time_limit_s=10), method)
    assert at_p.period == 27 and max(at_p.peak_memory) <= 4
    at_2p = search(SearchProblem(4, 8, costs, 8, objective="period", time_limit_s=10), method)
    assert at_2p.period == 24 and at_2p.period_bubble_rate == 0 and at_2p.status == "optimal"
    assert at_2p.lower_bounds["busiest rank's work"] == 24


def test_the_period_objective_never_does_worse_than_the_makespan_search_on_the_period():
    costs = Costs.of({"F": 1.0, "I": 1.5, "W": 0.7})
    for budget in (4, 6, 8):
        for placement in ("loop", "v"):
            problem = SearchProblem(4, 8, costs, budget, placement, time_limit_s=5)
            by_period = search(SearchProblem(4, 8, costs, budget, placement, 5, "period"), "heuristic")
            assert by_period.period <= search(problem, "heuristic").period + 1e-9


def test_auto_runs_the_exact_model_on_the_period_up_to_its_size_limit():
    """On the period the greedy is weaker, so ``auto`` hands every instance CP-SAT can take to it."""
    from engine.search.solve import AUTO_EXACT_PAIRS, MAX_EXACT_PAIRS

    costs = Costs.of({"F": 1, "I": 1.5, "W": 0.5}, comm=0.25)
    problem = SearchProblem(4, 24, costs, 8, objective="period", time_limit_s=2)
    assert AUTO_EXACT_PAIRS < problem.num_pairs <= MAX_EXACT_PAIRS
    result = search(problem)
    # CP-SAT ran: it answered, or (on a host too busy for 2 s to be enough) said it found nothing better in time
    assert result.method == "exact" or "CP-SAT found nothing better in time" in result.detail, result.detail
    makespan = SearchProblem(4, 24, costs, 8, time_limit_s=2)
    assert search(makespan).method == "heuristic"


def test_the_command_line_takes_the_objective(capsys):
    code = main(["search", "--ranks", "4", "--microbatches", "8", "--costs", "F=1,I=1,W=1", "--memory", "8",
                 "--objective", "period", "--method", "heuristic"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "minimising the period" in out and "period          24" in out


def test_a_v_placement_is_searched_on_the_period_from_the_v_families():
    """ZB-V is a starting point: the search on a V never does worse than it on the period, at its memory."""
    costs = Costs.of({"F": 1, "I": 1.2, "W": 0.8}, comm=0.1)
    zb_v = simulate(build_schedule("zb-v", 4, 8), costs)
    budget = max(zb_v.peak_memory_per_rank())
    found = search(SearchProblem(4, 8, costs, budget, "v", 2, "period"))
    assert found.schedule.placement == "v" and found.period <= zb_v.period + 1e-9
    assert max(found.peak_memory) <= budget


def test_the_frontier_follows_the_objective_and_draws_the_other_placement_apart():
    from app.charts.search import frontier_figure, label_positions
    from engine.search import frontier

    found = frontier(4, 8, Costs.of({"F": 1, "I": 1, "W": 1}), "loop", (4.0, 6.0, 8.0),
                     time_limit_per_budget_s=1, method="heuristic", objective="period")  # fmt: skip
    periods = [point.result.period for point in found.points]
    assert periods == sorted(periods, reverse=True) and periods[0] == 27 and periods[-1] == 24
    figure = frontier_figure(found)
    names = [trace["name"] for trace in figure.data]
    assert names[0].startswith("searched, loop placement") and any("other placement" in n for n in names)
    assert figure.layout.yaxis.title.text == "period"
    assert label_positions([4, 4, 8, 4.02]) == ["top center", "bottom center", "top center", "middle right"]
