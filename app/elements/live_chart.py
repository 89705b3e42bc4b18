"""A Plotly chart that stays on the page while its figure changes: every chart of the lab (the Gantts,
Compare's and Search's points, the Plan page's bars, the idle time by cause). Each figure carries its own look
(``style.STREAMLIT_LOOK``) and draws only cartesian traces.

Why not ``st.plotly_chart``: its element's id includes the figure, so every change of setting removes the chart
and draws a new one (a purge and a full draw, about 135 ms for 4 × 8 in Chromium), and a stretched chart is
then drawn a second time once its height is measured (about 60 ms). This element keeps its ``<div>`` and hands
each new figure to ``Plotly.react``, which redraws in place (30–55 ms); ``benchmarks/app_speed.py`` measures a
change on the Playground and on Compare (docs/deploy.md has the figures).

It draws with Plotly's cartesian bundle (bar, scatter, heatmap: all the Gantt uses), which ``app/serve.py``
serves (``server_middleware.ChartLibrary``): a cold browser evaluates it in about 0.45 s where Streamlit's chart
script, every trace type in 4.6 MB, took 1.0 s of a first visit; with no ``st.plotly_chart`` left, no page loads
that script. The bundle is evaluated once per page (it sets ``window.Plotly``, as every Plotly script does) and is
put on the chart's ``<div>`` as ``pplabPlotly`` for the player and lecture mode. Where it cannot be fetched (the app
run as ``streamlit run app/streamlit_app.py``), the element falls back to Streamlit's chart script.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st
from streamlit import config

from app.server.middleware import chart_library_url

_JS = (Path(__file__).with_name("live_chart.js")).read_text(encoding="utf-8")
"""The element's script: Plotly.react into one kept <div>, and the bars' labels (``live_chart.js``)."""
CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
"""As Streamlit configures its charts (no logo, no selection tools), and following the page's width."""

COMPONENT = "pplab_live_chart"
_component = st.components.v2.component(COMPONENT, js=_JS, isolate_styles=False)


@functools.cache
def _chart_script_name() -> str:
    """The file's name carries a hash of this Streamlit's build (found once: listing the folder took 3 ms a run)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    return next(path.name for path in sorted(folder.iterdir()) if path.name.startswith("PlotlyChart."))


def chart_script_url() -> str:
    """Where the page finds Streamlit's chart script (the fallback where the lab's own bundle is not served)."""
    base = config.get_option("server.baseUrlPath").strip("/")
    return f"/{base}/static/js/{_chart_script_name()}" if base else f"/static/js/{_chart_script_name()}"


def live_chart(figure, *, key: str, as_json: dict | None = None) -> None:
    """Draw ``figure`` under ``key`` (the element's ``st-key-…`` class, by which the player and lecture mode
    find it); a later run with the same key redraws it in place. ``as_json``: the figure already serialised
    (``simulation.playground_gantt`` keeps it)."""
    shown = json.loads(figure.to_json()) if as_json is None else as_json
    library = chart_library_url(config.get_option("server.baseUrlPath"))
    _component(data={"figure": shown, "library": library, "plotly": chart_script_url(), "config": CONFIG}, key=key)
