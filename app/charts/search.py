"""The Search page's frontier: the best step found for each memory budget, as a staircase, with every
hand-made family as a labelled point in the same (peak memory, makespan) plane."""

from __future__ import annotations

import plotly.graph_objects as go

from engine.search import OPTIMAL, Frontier

from ..style import sizes


def frontier_figure(found: Frontier, *, projector: bool = False) -> go.Figure:
    size = sizes(projector)
    budgets = [point.memory_budget for point in found.points]
    makespans = [point.result.makespan for point in found.points]
    proven = ["optimal" if point.result.status == OPTIMAL else f"gap {point.result.gap:.1%}" for point in found.points]
    traces = [
        dict(
            type="scatter",
            name="searched (best for each budget)",
            x=budgets,
            y=makespans,
            mode="lines+markers",
            line=dict(shape="hv", width=2, color="#1A5FB4"),
            marker=dict(size=8, symbol="circle"),
            customdata=proven,
            hovertemplate="budget %{x:g}: makespan %{y:.4g} (%{customdata})<extra></extra>",
        ),
        dict(
            type="scatter",
            name="hand-made families",
            x=[family.peak_memory for family in found.families],
            y=[family.makespan for family in found.families],
            text=[family.name for family in found.families],
            mode="markers+text",
            textposition="top center",
            marker=dict(size=10, symbol="diamond", color="#B5651D"),
            hovertemplate="%{text}: peak %{x:.3g}, makespan %{y:.4g}<extra></extra>",
        ),
    ]
    figure = go.Figure(data=traces, _validate=False)
    figure.update_layout(
        height=360 if projector else 320,
        margin=dict(l=4, r=6, t=20, b=40),
        font=dict(size=size.font),
        legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom"),
        xaxis=dict(title="peak memory, busiest rank (micro-batches of its share)", rangemode="tozero"),
        yaxis=dict(title="makespan", rangemode="tozero"),
    )
    return figure
