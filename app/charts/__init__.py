"""Plotly figure builders: Timeline in, Figure out. Pure functions, tested without Streamlit."""

from app.charts.figures import compare_figure, timeline_figure, tradeoff_figure
from app.charts.gantt import BAR_LIMIT
from app.charts.run_figure import memory_unit, run_figure

__all__ = ["BAR_LIMIT", "compare_figure", "memory_unit", "run_figure", "timeline_figure", "tradeoff_figure"]
