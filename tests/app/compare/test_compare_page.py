"""Compare through AppTest: every schedule on one axis with the engine's numbers."""

import pytest
from apptest_support import errors, figure, open_app

from app.views.compare.settings import CompareSettings
from engine import FAMILIES, Costs, build_schedule, simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


COMPARE = {"schedules": "gpipe,1f1b,zb-h1", "ranks": "4", "microbatches": "8"}
COMPARE_COSTS = Costs.of({"F": 1, "I": 1, "W": 1})  # the page's defaults; B = I + W


def test_compare_shows_every_schedule_on_one_axis_with_the_engines_numbers():
    at = open_app(COMPARE, "views/compare/page.py")
    table = at.table[0].value.T  # drawn one column per schedule
    assert list(table.index) == ["gpipe", "1f1b", "zb-h1"]
    for name in table.index:
        expected = simulate(build_schedule(name, 4, 8), COMPARE_COSTS)
        assert table.loc[name, "makespan"] == f"{expected.makespan:.4g}"
        assert table.loc[name, "bubble fraction"] == f"{expected.bubble_fraction:.1%}"
        assert table.loc[name, "transfers"] == f"{expected.num_transfers:,}"
    drawn = figure(at)
    titles = [a["text"] for a in drawn["layout"]["annotations"]]
    assert titles == [FAMILIES[n].title for n in ("gpipe", "1f1b", "zb-h1")]
    layout = drawn["layout"]
    assert layout["xaxis"]["matches"] == layout["xaxis2"]["matches"] == "x3"  # one time axis for all three
    assert len(drawn["frames"]) > 20
    assert CompareSettings.from_query(at.query_params)[0].schedules == ("gpipe", "1f1b", "zb-h1")


def test_compare_refuses_a_single_schedule():
    at = open_app(COMPARE, "views/compare/page.py")
    at.multiselect(key="cp_schedules").set_value(["gpipe"])
    at.run()
    assert not at.exception and any("choose 2 to 4 schedules" in e for e in errors(at))


def test_deepseeks_comparison_shows_what_each_schedule_hides_of_the_all_to_all_and_its_weights():
    """The page's own link to DeepSeek-V3's comparison (1F1B, ZB-1P, DualPipe, DualPipeV with an all-to-all): each
    column's hidden share and weights per rank equal the engine's for the same costs."""
    from app.views.compare.settings import TABLE_2_LAB

    preset = CompareSettings(("1f1b", "zb-h1", "dualpipe", "dualpipev"), TABLE_2_LAB)
    at = open_app(preset.to_query(), "views/compare/page.py")
    assert not at.exception and not errors(at)
    table = at.table[0].value.T
    assert list(table.index) == ["1f1b", "zb-h1", "dualpipe", "dualpipev"]
    for name in table.index:
        one = preset.settings_for(name)
        schedule = build_schedule(name, 8, 20)
        expected = simulate(schedule, one.costs()).expert_comm
        assert table.loc[name, "all-to-all hidden"] == f"{expected['hidden_fraction']:.0%} ({expected['hidden']:g})"
        assert table.loc[name, "all-to-all waited for"] == f"{expected['exposed']:g}"
        assert table.loc[name, "weights per rank (× a rank's share)"] == f"{max(schedule.weights_per_rank()):g}×"
    assert table.loc["dualpipe", "weights per rank (× a rank's share)"] == "2×"
    assert table.loc["1f1b", "all-to-all hidden"].startswith("0%")
