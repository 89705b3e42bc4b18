"""The Real run page through AppTest: one run per press, refusals, settings kept across pages."""

import pytest
from apptest_support import errors, go_to, metrics, open_app, values
from drawn import drawn_figures

from engine import build_schedule

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


def small_real_run(at):
    at.selectbox(key="rr_family").set_value("zb-h1")
    at.slider(key="rr_num_ranks").set_value(2)
    at.select_slider(key="rr_num_microbatches").set_value(4)
    at.slider(key="rr_layers").set_value(4)
    at.select_slider(key="rr_hidden").set_value(32)
    at.slider(key="rr_repeats").set_value(2)
    at.run()


def test_real_run_runs_once_on_run_and_not_on_a_later_change():
    at = open_app(page="views/real_run/page.py")
    assert any("press Run" in i.value for i in at.info)
    small_real_run(at)
    assert "rr_result" not in at.session_state  # changing widgets ran nothing
    at.button(key="rr_run").click()
    at.run(timeout=180)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["rr_runs"] == 1
    shown = metrics(at)
    assert float(shown["Gradient check"]) < 1e-5 and shown["Makespan, measured"].endswith(" ms")
    assert any("CPU time of the thread" in c.value for c in at.caption)  # the clock, named in the note
    agreement = [c.value for c in at.caption if "one cost per stage describes" in c.value]  # what it shows
    assert agreement and "Each rank's own end is off by" in agreement[0]
    charts = drawn_figures(at)
    names = {t["name"] for chart in charts for t in chart["data"]}
    assert {"predicted (outline)", "spread over the repeats (min–max)"} <= names
    assert any(name.endswith("modelled") for name in names)
    assert {"schedule", "imbalance"} <= names  # the idle time split by cause, one bar per rank
    assert any("Why the measured step is longer" in h.value for h in at.subheader)
    result = at.session_state["rr_result"][1]
    costs = at.table[0].value  # each stage's cost under the run's estimator, then the median beside it
    assert result.estimator == "min" and "F (ms, fastest repeat)" in costs and "F (ms, median repeat)" in costs
    assert (costs["F (ms, fastest repeat)"] <= costs["F (ms, median repeat)"]).all()
    shown_notes = [n.value for n in at.caption] + [n.value for n in at.warning]
    assert result.interference.sentence.replace("--repeats", "Measured steps") in shown_notes
    at.slider(key="rr_layers").set_value(2)
    at.run()
    assert at.session_state["rr_runs"] == 1  # still the one run
    assert any("press Run to measure the new configuration" in c.value for c in at.caption)
    other = open_app(page="views/real_run/page.py")  # another visitor
    assert "rr_result" not in other.session_state and any("press Run" in i.value for i in other.info)


def test_real_run_speaks_the_pages_words_and_resets_the_width_for_the_gpt():
    at = open_app(page="views/real_run/page.py")
    at.slider(key="rr_layers").set_value(2)
    at.run()
    assert any("2 blocks cannot fill 4 stages" in e for e in errors(at))
    assert not any("--" in e for e in errors(at))
    at.radio(key="rr_model").set_value("gpt")
    at.run()
    assert at.select_slider(key="rr_hidden").value == 128  # the GPT's default, not the MLP's 512


def test_real_run_refuses_what_this_machine_cannot_hold(monkeypatch):
    import engine.runtime.budget as budget

    monkeypatch.setattr(budget, "available_bytes", lambda: 300 * 2**20)  # a machine with 300 MiB free
    at = open_app(page="views/real_run/page.py")
    assert any("This run would need about" in e and "more than the" in e for e in errors(at))
    assert at.button(key="rr_run").disabled


def test_the_editor_hands_its_schedule_to_the_real_run_page():
    at = open_app(page="views/editor/page.py")
    at.text_area(key="ed_csv").set_value(build_schedule("zb-h1", 2, 4).to_csv())
    at.run()
    at.button(key="ed_run").click()
    at.run()
    assert not at.exception
    assert any("sent from the editor" in i.value for i in at.info)


def test_real_run_settings_survive_a_visit_to_another_page():
    at = open_app(page="views/real_run/page.py")
    at.slider(key="rr_layers").set_value(12)
    at.run()
    go_to(at, "views/playground/page.py")
    go_to(at, "views/real_run/page.py")
    assert not at.exception and at.slider(key="rr_layers").value == 12


def test_before_a_run_the_page_draws_the_schedule_each_stage_costing_its_share_of_the_blocks():
    """Nothing run yet, and a chart is there: GPipe on 2 ranks, 2 micro-batches, 3 blocks split 2 + 1. A stage's
    forward costs its blocks over the average 1.5 (4/3 and 2/3), a backward twice that. By hand: rank 0's forwards
    end at 8/3, rank 1's at 10/3; rank 1's backwards take 4/3 each, to 6; rank 0's take 8/3 each, to 10 = the
    step."""
    at = open_app(page="views/real_run/page.py")
    at.selectbox(key="rr_family").set_value("gpipe")
    at.slider(key="rr_num_ranks").set_value(2)
    at.select_slider(key="rr_num_microbatches").set_value(2)
    at.slider(key="rr_layers").set_value(3)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "rr_result" not in at.session_state  # nothing ran
    (chart,) = drawn_figures(at)
    assert chart["layout"]["title"]["text"].startswith("Before the run")
    ends = [b + w for t in chart["data"] if t.get("type") == "bar" and t.get("base") is not None
            for b, w in zip(values(t["base"]), values(t["x"]), strict=True)]  # fmt: skip
    assert max(ends) == pytest.approx(10.0)
    assert any("here 2, 1" in c.value or "here 1, 2" in c.value for c in at.caption), [c.value for c in at.caption]
