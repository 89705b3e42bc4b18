"""The Plan page's pictures: each pipeline rank's memory per GPU as a stacked bar against the GPU's capacity,
where each stage's time goes as a stacked bar, and the DP reduction drawn on the pipeline's Gantt."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.style import STREAMLIT_LOOK, projected, sizes
from engine.scale import Plan
from engine.scale.operations import CATEGORIES

PARTS = (
    ("weights", "#4A6FA5", ""),
    ("gradients", "#C98B2B", "."),
    ("optimizer", "#6C8E4E", "/"),
    ("activations", "#9C5A8E", "x"),
)
"""Colour and pattern per part of a GPU's memory (the pattern keeps them apart in greyscale)."""
GB = 1e9
OVER = "#C62828"


def memory_figure(result: Plan, *, projector: bool = False) -> go.Figure:
    """One stacked bar per pipeline rank — weights, gradients, optimizer states, activations, in GB — with the
    GPU's capacity as a line; a rank that does not fit is outlined in red and says so in its hover."""
    size = sizes(projector)
    ranks = [memory.rank for memory in result.memory]
    traces = []
    for name, colour, pattern in PARTS:
        values = np.array([getattr(memory, name) for memory in result.memory]) / GB
        traces.append(
            dict(
                type="bar",
                name=name,
                x=ranks,
                y=values,
                marker=dict(
                    color=colour,
                    pattern=dict(shape=pattern, fgcolor="#FFFFFF", fillmode="overlay", solidity=0.25),
                    line=dict(
                        color=[OVER if not memory.fits else "rgba(0,0,0,0)" for memory in result.memory], width=2
                    ),
                ),
                customdata=[memory.reason for memory in result.memory],
                hovertemplate=f"{name}: %{{y:.1f}} GB<br>%{{customdata}}<extra></extra>",
            )
        )
    capacity = result.gpu.memory_gb
    figure = go.Figure(data=traces, _validate=False)
    figure.add_hline(
        y=capacity, line=dict(color=OVER, dash="dash", width=2), annotation_text=f"{result.gpu.title}: {capacity:g} GB"
    )
    figure.update_layout(
        template=STREAMLIT_LOOK,  # the figure carries its look: drawn by the lab's chart element (live_chart)
        barmode="stack",
        height=320 if projector else 290,
        margin=dict(l=4, r=6, t=20, b=40),
        font=dict(size=size.font),
        legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom"),
        xaxis=dict(title="pipeline rank", tickmode="array", tickvals=ranks, tickfont=dict(size=size.font)),
        yaxis=dict(title="GB per GPU", rangemode="tozero", tickfont=dict(size=size.font)),
    )
    return projected(figure, projector)


TIME_PARTS = dict(
    zip(
        CATEGORIES,
        (("#3B6EA8", ""), ("#D08C2E", "/"), ("#5F8F4E", "."), ("#8E4F8B", "x"), ("#7A7A7A", "+"), ("#B5524A", "-")),
        strict=True,
    )
)
"""Colour and pattern per category of a stage's time (the pattern keeps them apart in greyscale)."""


def time_figure(result: Plan, *, projector: bool = False) -> go.Figure:
    """One stacked bar per stage: F + I + W of one micro-batch by category (GEMMs, attention, memory-bound work,
    TP and CP communication), milliseconds — the roofline's answer to "where does the time go"."""
    size = sizes(projector)
    stages = [row.stage for row in result.stage_costs]
    traces = []
    for category, (colour, pattern) in TIME_PARTS.items():
        values = np.array([row.breakdown[category] for row in result.stage_costs]) * 1e3
        if not values.any():
            continue
        traces.append(
            dict(
                type="bar",
                name=category,
                x=stages,
                y=values,
                marker=dict(color=colour, pattern=dict(shape=pattern, fgcolor="#FFFFFF", fillmode="overlay",
                                                       solidity=0.25)),
                hovertemplate=f"stage %{{x}} · {category}: %{{y:.2f}} ms<extra></extra>",
            )
        )  # fmt: skip
    figure = go.Figure(data=traces, _validate=False)
    figure.update_layout(
        template=STREAMLIT_LOOK,
        barmode="stack",
        bargap=0.1 if len(stages) > 32 else 0.3,
        height=320 if projector else 290,
        margin=dict(l=4, r=6, t=20, b=40),
        font=dict(size=size.font),
        legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom"),
        xaxis=dict(title="stage (F + I + W of one micro-batch)", tickfont=dict(size=size.font)),
        yaxis=dict(title="ms on one GPU", rangemode="tozero", tickfont=dict(size=size.font)),
    )
    return projected(figure, projector)


def allreduce_traces(result: Plan) -> list[dict]:
    """Each rank's DP gradient reduction as a thin strip under its Gantt row, from when its first chunk's reduction
    starts to when its last one ends: with ``dp_overlap`` it runs beside the backwards still to come, which stay
    visible above it."""
    if not result.allreduce:
        return []
    rows = result.allreduce
    return [
        dict(
            type="bar",
            orientation="h",
            name="DP gradient all-reduce",
            legendgroup="allreduce",
            y=[row.rank for row in rows],
            base=[row.start for row in rows],
            x=[row.end - row.start for row in rows],
            width=0.14,
            offset=0.35,
            marker=dict(color="#3F3F3F"),
            customdata=[[row.gradient_bytes / GB, row.end - row.start] for row in rows],
            hovertemplate="rank %{y} · DP all-reduce of %{customdata[0]:.2f} GB · %{customdata[1]:.3f} s"
            "<extra></extra>",
        )
    ]
