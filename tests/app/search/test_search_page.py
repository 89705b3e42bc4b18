"""The Search page through AppTest: a schedule found within the budget, refusals with the arithmetic."""

import pytest
from apptest_support import errors, figure, metrics, open_app

from app.views.search.settings import SearchSettings
from engine import FAMILIES, build_schedule, simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


def test_the_search_page_finds_a_schedule_no_worse_than_zb_h1_within_the_budget():
    """A shared link shows its result at once, as the sender saw it (no press needed)."""
    at = open_app({"ranks": "4", "microbatches": "8", "costs": "F=1,I=1,W=1", "memory": "4"}, "views/search/page.py")
    assert not at.exception, at.exception
    assert not any("press Search" in i.value for i in at.info)
    shown = metrics(at)
    assert float(shown["Makespan"]) <= 27 and float(shown["Peak memory"]) <= 4
    table = at.table[0].value
    assert "searched" in list(table.iloc[:, 0]) or "searched" in list(table.index)
    assert at.query_params["memory"] == "4" and at.query_params["costs"] == "F=1,I=1,W=1"


def test_changing_p_keeps_the_budget_and_a_budget_above_2p_is_taken():
    """A widget change never overwrites another: p from 4 to 5 leaves the budget at 3 (a slider whose maximum
    followed p reset it to 0.5); a link's budget of 10 on 4 ranks constrains nothing and is kept."""
    at = open_app({"ranks": "4", "microbatches": "4", "memory": "3", "time": "2"}, "views/search/page.py")
    at.slider(key="sr_num_ranks").set_value(5).run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    assert at.number_input(key="sr_memory_budget").value == 3 and at.query_params["memory"] == "3"
    at = open_app({"ranks": "4", "microbatches": "4", "memory": "10", "time": "2"}, "views/search/page.py")
    assert not at.exception and not at.warning, (at.exception, [w.value for w in at.warning])
    assert at.query_params["memory"] == "10" and float(metrics(at)["Peak memory"]) <= 4


def test_a_budget_below_what_any_schedule_needs_is_refused_with_the_arithmetic():
    at = open_app({"ranks": "4", "microbatches": "8", "memory": "0.5"}, "views/search/page.py")
    assert any("0.5" in e and "micro-batch" in e for e in errors(at)), errors(at)


def test_before_a_search_the_page_draws_the_families_it_must_beat():
    """Opened without a link, nothing is searched, yet the chart is there: the hand-made families within the budget
    on one time axis, each the engine's own, and the caption's best makespan is the smallest of them."""
    at = open_app(None, "views/search/page.py")
    assert not at.exception, at.exception
    assert any("press Search" in i.value for i in at.info) and not at.table  # no search ran
    settings = SearchSettings()
    within = {}
    for name, family in FAMILIES.items():
        try:
            timeline = simulate(build_schedule(name, settings.num_ranks, settings.num_microbatches),
                                settings.engine_costs())  # fmt: skip
        except ValueError:  # sizes the family does not take
            continue
        within[family.title] = timeline
    within = {title: t for title, t in within.items() if max(t.peak_memory_per_rank()) <= settings.memory_budget}
    names = [a["text"] for a in figure(at)["layout"]["annotations"] if a.get("yref") == "paper"]
    assert sorted(names) == sorted(within) and names, (names, sorted(within))
    best = min(t.makespan for t in within.values())
    caption = next(c.value for c in at.caption if "must beat" in c.value)
    assert f"makespan of {best:.4g}" in caption, caption
