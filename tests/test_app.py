"""The Streamlit app through AppTest: the Playground runs, shows the engine's numbers, and reports bad input."""

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from engine import Costs, build_schedule, simulate

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")


def _figure(at, index=0):
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def values(array) -> list:
    """Plotly sends numeric arrays as {"dtype": "i8", "bdata": base64}; lists stay lists."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


@pytest.fixture
def app():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def test_playground_shows_the_simulated_gantt_and_bubble(app):
    expected = simulate(build_schedule("1f1b", 4, 8), Costs(forward=1, backward=2))
    figure = _figure(app)
    kinds = {trace["name"][0] for trace in figure["data"]}
    assert kinds == {"F", "B"}
    assert sum(len(values(trace["y"])) for trace in figure["data"]) == len(expected.frame)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Bubble fraction"] == f"{expected.bubble_fraction:.1%}"
    assert metrics["Makespan"] == f"{expected.makespan:.4g}"


def test_changing_schedule_and_sizes_recomputes(app):
    app.selectbox(key="pg_schedule").set_value("zb-h1")
    app.slider(key="pg_ranks").set_value(6)
    app.slider(key="pg_microbatches").set_value(12)
    app.run()
    assert not app.exception
    expected = simulate(build_schedule("zb-h1", 6, 12), Costs(forward=1, backward_input=1, backward_weight=1))
    assert {m.label: m.value for m in app.metric}["Bubble fraction"] == f"{expected.bubble_fraction:.1%}"
    kinds = {trace["name"][0] for trace in _figure(app)["data"]}
    assert kinds == {"F", "I", "W"}


def test_chunks_slider_appears_for_interleaved(app):
    app.selectbox(key="pg_schedule").set_value("interleaved-1f1b")
    app.run()
    app.slider(key="pg_microbatches").set_value(8)
    app.slider(key="pg_chunks").set_value(4)
    app.run()
    assert not app.error and not app.exception
    figure = _figure(app)
    assert sum(len(values(trace["y"])) for trace in figure["data"]) == 4 * 4 * 8 * 2


def test_dualpipev_draws_overlapped_pairs_as_half_bars(app):
    app.selectbox(key="pg_schedule").set_value("dualpipev")
    app.run()
    assert not app.exception
    widths = [w for trace in _figure(app)["data"] for w in values(trace["width"])]
    assert 0.4 in widths and 0.8 in widths


def test_real_run_page_measures_and_predicts(app):
    app.switch_page("views/measure.py")
    app.run()
    assert not app.exception
    assert any("press Run" in i.value for i in app.info)
    app.selectbox(key="rr_schedule").set_value("zb-h1")
    app.slider(key="rr_ranks").set_value(2)
    app.select_slider(key="rr_microbatches").set_value(4)
    app.slider(key="rr_layers").set_value(4)
    app.select_slider(key="rr_hidden").set_value(32)
    app.button(key="rr_run").click()
    app.run()
    assert not app.exception and not app.error
    metrics = {m.label: m for m in app.metric}
    assert float(metrics["Gradient check"].value) < 1e-5
    assert metrics["Makespan, measured"].value.endswith(" ms")
    charts = app.get("plotly_chart")
    measured_kinds = {trace["name"][0] for trace in json.loads(charts[0].proto.spec)["data"]}
    assert measured_kinds == {"F", "I", "W"}
    assert sum(len(values(t["y"])) for t in json.loads(charts[1].proto.spec)["data"]) == 2 * 4 * 3


def test_real_run_page_reports_bad_sizes(app):
    app.switch_page("views/measure.py")
    app.run()
    app.slider(key="rr_layers").set_value(2)
    app.run()
    assert not app.exception
    assert any("2 layers cannot fill 4 stages" in e.value for e in app.error)
