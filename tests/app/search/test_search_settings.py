"""The Search page's settings (app/views/search/settings.py): what a link may ask for, the budgets the frontier
searches, and measured costs written so the exact method can take them."""

import pytest

from app.frame import limits
from app.views.search.settings import SearchSettings
from engine.search.exact import MAX_SCALE, model_scales
from engine.search.frontier import default_budgets


def test_a_link_budget_up_to_2p_at_the_most_ranks_is_taken_and_beyond_is_refused_with_the_range():
    taken, problems = SearchSettings.from_query({"ranks": "4", "memory": "10"})
    assert (taken.memory_budget, problems) == (10.0, [])  # above 2p: constrains nothing, and is kept as sent
    refused, problems = SearchSettings.from_query({"ranks": "4", "memory": "65"})
    assert refused.memory_budget == 4.0 and problems == ["memory=`65`: expected a number from 0 to 64; using 4"]
    assert limits.MAX_MEMORY_BUDGET == 2 * limits.MAX_RANKS == 64


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_small_sizes_search_every_whole_budget(ranks):
    settings = SearchSettings(num_ranks=ranks, num_microbatches=8)
    assert settings.frontier_budgets() == default_budgets(settings.to_problem())


@pytest.mark.parametrize("ranks", [5, 8, 32])
def test_large_sizes_search_a_few_budgets_with_the_ends_and_the_families_peaks(ranks):
    settings = SearchSettings(num_ranks=ranks, num_microbatches=16)
    budgets = settings.frontier_budgets()
    every = default_budgets(settings.to_problem())
    assert len(budgets) <= min(len(every), limits.MAX_FRONTIER_BUDGETS + 2)  # + p and 2p − 1
    assert set(budgets) <= set(every) and (ranks < 32 or len(budgets) < len(every) / 6)
    assert budgets == tuple(sorted(set(budgets))) and budgets[0] == every[0] and budgets[-1] == 2 * ranks
    assert {float(ranks), 2.0 * ranks - 1} <= set(budgets)  # 1F1B's and ZB-H2's peaks


def test_measured_costs_are_written_so_the_exact_method_applies():
    """Milliseconds as a run measures them (no two alike, many digits): on a grid of a thousandth of the
    largest, every cost within half a grid step of what was measured, and a scale of at most 1000 exists."""
    table = [(0.5678, 1.2345, 0.0, 0.0), (0.6123, 0, 0.7071, 0.5431), (0.4999, 1.0101, 0.0, 0.0), (0.55, 1.3, 0, 0)]
    settings = SearchSettings.from_measured(4, 8, "loop", [dict(zip("FBIW", row, strict=True)) for row in table])
    assert model_scales(settings.to_problem()) is not None
    # the largest cost is I on stage 1, 0.7071 ms: three significant digits put the grid at 0.001 ms
    step = 0.001
    written = {part[0]: [float(v) for v in part[2:].split(":")] for part in settings.costs.split(",")}
    measured = {
        "F": [row[0] for row in table],
        "I": [row[2] or row[1] / 2 for row in table],
        "W": [row[3] or row[1] / 2 for row in table],
    }
    for name, values in measured.items():
        assert all(abs(w - m) <= step / 2 + 1e-12 for w, m in zip(written[name], values, strict=True)), name
    assert all(round(v / step, 9).is_integer() for vs in written.values() for v in vs) and MAX_SCALE >= 1 / step
