"""Whole figures: one timeline (Gantt over memory, one time axis, one cursor), several timelines stacked on
one time axis (Compare), and the bubble-versus-memory trade-off."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine import Timeline

from ..style import sizes
from .gantt import add_gantt, time_format
from .playback import add_playback, slot_rows

MEMORY_LINES = 8
"""Up to this many ranks every rank gets a memory line; beyond, rank 0, the last rank and the busiest."""
MEMORY_POINTS = 600


def _rank_axis(num_ranks: int) -> dict:
    every = max(1, int(np.ceil(num_ranks / 16)))
    ticks = list(range(0, num_ranks, every))
    return dict(autorange="reversed", tickmode="array", tickvals=ticks, ticktext=[f"rank {r}" for r in ticks],
                range=None, zeroline=False, showgrid=False)


def _memory_traces(figure: go.Figure, timeline: Timeline, row: int) -> None:
    frame = timeline.frame.sort_values(["rank", "end", "step"])
    peaks = timeline.peak_memory_per_rank()
    ranks = list(range(timeline.num_ranks))
    if len(ranks) > MEMORY_LINES:
        ranks = sorted({0, len(ranks) - 1, int(np.argmax(peaks))})
    for rank in ranks:
        rows = frame[frame["rank"] == rank]
        x, y = np.r_[0.0, rows["end"].to_numpy()], np.r_[0.0, rows["memory_after"].to_numpy()]
        if len(x) > MEMORY_POINTS:  # keep each stretch's highest value: the peaks are what matters
            edges = np.linspace(x[0], x[-1], MEMORY_POINTS + 1)
            which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, MEMORY_POINTS - 1)
            highest = np.full(MEMORY_POINTS, np.nan)
            np.fmax.at(highest, which, y)
            keep = ~np.isnan(highest)
            x, y = edges[:-1][keep], highest[keep]
        figure.add_trace(go.Scatter(name=f"memory, rank {rank}", legendgroup="memory", x=x.astype(np.float32),
                                    y=y.astype(np.float32), mode="lines",
                                    line=dict(shape="hv", width=1.5),
                                    hovertemplate=f"rank {rank} · t %{{x:.4g}} · %{{y:.3g}}<extra></extra>"),
                         row=row, col=1)


def timeline_figure(timeline: Timeline, *, title: str = "", time_unit: str = "time units",
                    memory_unit: str = "micro-batches of activations", projector: bool = False,
                    memory: bool = True, animate: bool = True, cursor_at: float | None = None) -> go.Figure:
    """The Gantt of ``timeline`` (one row per rank) over its memory curve, sharing the time axis and the
    playback cursor."""
    size = sizes(projector)
    gantt_height = size.gantt_height(timeline.num_ranks)
    rows = 2 if memory else 1
    heights = [gantt_height, size.memory] if memory else [gantt_height]
    figure = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.09 if memory else 0.02,
                           row_heights=heights,
                           subplot_titles=(None, f"activation memory ({memory_unit})") if memory else None)
    drawn = add_gantt(figure, timeline, row=1, show_legend=True)
    if memory:
        _memory_traces(figure, timeline, row=2)
        figure.update_yaxes(title_text=None, rangemode="tozero", row=2, col=1)
    figure.update_yaxes(_rank_axis(timeline.num_ranks), row=1, col=1)
    end = float(timeline.frame["end"].max()) if len(timeline.frame) else 0.0
    figure.update_xaxes(range=[0, end * 1.01 or 1])
    figure.update_xaxes(title_text=time_unit, row=rows, col=1)
    _layout(figure, title, size, sum(heights))
    if animate:
        add_playback(figure, end, [slot_rows(timeline.frame, "y")] if drawn == "bars" else [],
                     total_rows=timeline.num_ranks, time_format=time_format(timeline), cursor_at=cursor_at,
                     font_size=size.font)
    return figure


def compare_figure(timelines: dict[str, Timeline], *, time_unit: str = "time units",
                   projector: bool = False) -> go.Figure:
    """One Gantt per schedule, stacked on one shared time axis (the longer makespan is visibly longer), played
    by one set of controls."""
    size = sizes(projector)
    names = list(timelines)
    heights = [size.gantt_height(t.num_ranks) - 40 for t in timelines.values()]
    figure = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.12 / len(names),
                           row_heights=heights, subplot_titles=names)
    rows, drawn_bars = [], True
    for index, (name, timeline) in enumerate(timelines.items(), start=1):
        drawn = add_gantt(figure, timeline, row=index, show_legend=index == 1)
        drawn_bars = drawn_bars and drawn == "bars"
        figure.update_yaxes(_rank_axis(timeline.num_ranks), row=index, col=1)
        rows.append(slot_rows(timeline.frame, "y" if index == 1 else f"y{index}"))
    end = max(float(t.frame["end"].max()) for t in timelines.values())
    figure.update_xaxes(range=[0, end * 1.01 or 1])
    figure.update_xaxes(title_text=time_unit, row=len(names), col=1)
    _layout(figure, "", size, sum(heights))
    first = next(iter(timelines.values()))
    add_playback(figure, end, rows if drawn_bars else [], total_rows=sum(t.num_ranks for t in timelines.values()),
                 time_format=time_format(first), font_size=size.font)
    return figure


def tradeoff_figure(rows: list[dict], *, projector: bool = False) -> go.Figure:
    """Bubble fraction against peak memory, one point per schedule: which trade memory for time."""
    size = sizes(projector)
    figure = go.Figure(go.Scatter(
        x=[row["peak_memory"] for row in rows], y=[row["bubble_fraction"] for row in rows],
        text=[row["schedule"] for row in rows], mode="markers+text", textposition="top center",
        marker=dict(size=14 if projector else 11), textfont=dict(size=size.font),
        hovertemplate="%{text}: peak memory %{x:.3g}, bubble %{y:.1%}<extra></extra>",
    ))
    figure.update_layout(
        height=320 if projector else 280, margin=dict(l=10, r=10, t=30, b=10), font=dict(size=size.font),
        xaxis=dict(title="peak memory, busiest rank (micro-batches of a rank's share)", rangemode="tozero"),
        yaxis=dict(title="bubble fraction", tickformat=".0%", rangemode="tozero"),
    )
    return figure


def _layout(figure: go.Figure, title: str, size, plot_height: int) -> None:
    figure.update_layout(
        title=dict(text=title, x=0, xanchor="left", y=1, yanchor="top", pad=dict(t=8),
                   font=dict(size=size.title)) if title else None,
        barmode="overlay", bargap=0.1, font=dict(size=size.font),
        uniformtext=dict(minsize=max(8, size.font - 4), mode="hide"),
        legend=dict(orientation="v", x=1.01, xanchor="left", y=1, yanchor="top", font=dict(size=size.font - 1),
                    groupclick="toggleitem"),
        height=plot_height + 190, margin=dict(l=10, r=10, t=50 if title else 30, b=150),
        hoverlabel=dict(font=dict(size=size.font)),
    )
    # Streamlit's chart theme sets its own axis fonts: name the sizes on every axis and subplot title
    figure.update_xaxes(tickfont=dict(size=size.font), title_font=dict(size=size.font))
    figure.update_yaxes(tickfont=dict(size=size.font), title_font=dict(size=size.font))
    figure.update_annotations(font_size=size.font)
