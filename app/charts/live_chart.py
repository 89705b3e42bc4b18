"""A Plotly chart that stays on the page while its figure changes (issue 38): the Playground's Gantt.

Why not ``st.plotly_chart``: its element's id includes the figure, so every change of setting removes the chart
and draws a new one (a purge and a full draw, about 135 ms for 4 × 8 in Chromium), and a stretched chart is
then drawn a second time once its height is measured (about 60 ms). This element keeps its ``<div>`` and hands
each new figure to ``Plotly.react``, which redraws in place (30–55 ms): a change at 4 × 8 went from 0.30 to
0.21 s in a page holding nothing else (``benchmarks/app_speed.py`` measures the Playground).

It uses the Plotly that Streamlit's own chart script carries (the one ``st.plotly_chart`` loads, which puts it
on ``window``), loaded on first use, so the page gains no library. The figure carries its own look
(``style.STREAMLIT_LOOK``), as charts drawn with ``theme=None`` do.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st
from streamlit import config

_JS = """
export default async function({ parentElement, data }) {
  if (!window.Plotly) await import(new URL(data.plotly, window.location.origin).href);
  let gd = parentElement.querySelector('.pplab-live-chart');
  if (!gd) {
    gd = document.createElement('div');
    gd.className = 'pplab-live-chart';
    parentElement.appendChild(gd);
  }
  const figure = data.figure;
  await window.Plotly.react(gd, {data: figure.data, layout: figure.layout, frames: figure.frames || [],
                                 config: data.config});
}
"""
CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
"""As Streamlit configures its charts (no logo, no selection tools), and following the page's width."""

_component = st.components.v2.component("pplab_live_chart", js=_JS, isolate_styles=False)


def chart_script_url() -> str:
    """Where the page finds Streamlit's chart script (its name carries a hash of this Streamlit's build)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    name = next(path.name for path in sorted(folder.iterdir()) if path.name.startswith("PlotlyChart."))
    base = config.get_option("server.baseUrlPath").strip("/")
    return f"/{base}/static/js/{name}" if base else f"/static/js/{name}"


def live_chart(figure, *, key: str, as_json: dict | None = None) -> None:
    """Draw ``figure`` under ``key`` (the element's ``st-key-…`` class, by which the player and lecture mode
    find it); a later run with the same key redraws it in place. ``as_json``: the figure already serialised
    (``simulation.playground_gantt`` keeps it)."""
    shown = json.loads(figure.to_json()) if as_json is None else as_json
    _component(data={"figure": shown, "plotly": chart_script_url(), "config": CONFIG}, key=key)
