"""Your run through AppTest: an example run's step as the engine reads it, predictions, zoom."""

import io

import pytest
from apptest_support import figure, open_app
from drawn import drawn_figures

from engine import simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


def test_your_run_shows_the_example_runs_step_as_the_engine_reads_it():
    from engine.traces import import_traces
    from engine.traces.examples import DEFAULT_EXAMPLE, example_files

    at = open_app({"expect": "interleaved-1f1b"}, page="views/your_run/page.py")
    expected = import_traces(example_files(DEFAULT_EXAMPLE)).timeline.summary()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Step (measured)"] == f"{expected['makespan']:.3g} ms"
    assert shown["Bubble fraction"] == f"{expected['bubble_fraction']:.1%}"
    assert any("equals interleaved-1f1b" in s.value for s in at.success)
    assert drawn_figures(at) and any("ZB-V" in str(t.value) or "zb-v" in str(t.value) for t in at.table)


def test_your_run_marks_where_the_order_differs_and_warns_about_a_bad_link():
    at = open_app({"expect": "looped-bfs", "step": "x"}, page="views/your_run/page.py")
    assert any("differs from looped-bfs" in e.value for e in at.error)
    assert any("<-- here" in c.value for c in at.code)
    assert any("step=`x`: expected a whole number" in w.value for w in at.warning)


def test_your_run_shows_the_prediction_as_a_card_and_its_outlines_and_the_arrows_only_when_asked():
    """Measured and predicted step side by side (one simulation for the card and the outlines); the
    outlines off and the arrows on by default, each behind its toggle; the time axis ends at the step."""
    from engine.traces import import_traces
    from engine.traces.examples import DEFAULT_EXAMPLE, example_files

    run = import_traces(example_files(DEFAULT_EXAMPLE))
    predicted = simulate(run.schedule, run.costs, check=False).makespan
    at = open_app({}, page="views/your_run/page.py")
    shown = {m.label: m.value for m in at.metric}
    assert shown["Step (predicted)"] == f"{predicted:.3g} ms"

    def drawn(app) -> tuple[set, list]:
        figure = drawn_figures(app)[0]
        return {trace.get("meta") or trace.get("name") for trace in figure["data"]}, figure["layout"]["xaxis"]["range"]

    names, axis = drawn(at)
    assert "pplab-arrows" in names and "predicted (outline)" not in names
    assert axis[1] == pytest.approx(run.timeline.makespan, rel=0.05)  # the step's end, a margin at most
    toggles = {t.label: t for t in at.toggle}
    toggles["Show the prediction's outlines"].set_value(True)
    toggles["Show the hand-off arrows"].set_value(False)
    names, _ = drawn(at.run())
    assert "pplab-arrows" not in names and "predicted (outline)" in names


def test_your_run_zooms_to_a_time_window_and_a_rank():
    at = open_app({}, page="views/your_run/page.py")
    window = next(s for s in at.slider if s.label == "Time window, ms")
    low, high = window.value
    window.set_value((high / 4, high / 2))
    next(s for s in at.selectbox if s.label == "Ranks").set_value("rank 1")
    at.run()
    assert not at.exception
    layout = figure(at)["layout"]
    assert layout["xaxis"]["range"] == pytest.approx([high / 4, high / 2], rel=0.02)
    assert layout["yaxis"]["range"] == pytest.approx([1.55, 0.45])


def test_after_a_refused_reading_the_example_below_is_named_as_the_example_not_as_the_upload():
    """Files stored but refused when read: the last good run shown below is the example, and says so (it was
    shown under the upload's file names, as if it were the visitor's)."""
    from apptest_support import APP
    from streamlit.testing.v1 import AppTest

    from app.server.uploads import StoredUpload

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/your_run/page.py")
    at.run()  # the example, read and kept as the last good run
    at.session_state["yr_stored"] = StoredUpload([("mine-rank0.json", io.BytesIO(b'{"traceEvents": []}'))])
    at.run()
    assert not at.exception, at.exception
    assert any("These traces cannot be read" in e.value for e in at.error)
    said = [m.value for m in at.markdown if m.value.startswith("**Read:**")]
    assert said and said[0].endswith("(the example run)") and "mine-rank0" not in said[0]
    assert any("the example run" in c.value and "not the ones refused" in c.value for c in at.caption)
