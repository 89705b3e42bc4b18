"""The memory subplot under a Gantt: one line per rank (all of them up to ``MEMORY_LINES``, else rank 0, the last
and the busiest), each at most ``MEMORY_POINTS`` steps keeping its peaks, and each line's name at its peak."""

from __future__ import annotations

import numpy as np

from app.charts.style import RANK_COLOURS, RANK_DASHES
from engine import Timeline

MEMORY_LINES = 8
"""Up to this many ranks every rank gets a memory line; beyond, rank 0, the last rank and the busiest."""
MEMORY_POINTS = 600
PEAK_NAME = "pplab-peak"
"""Marks a memory line's name at its peak: the chart element moves such names apart where they would overlap
(``app/elements/live_chart.js``, ``separateNames``)."""


def _downsampled(x: np.ndarray, y: np.ndarray, points: int = MEMORY_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``points`` steps, each stretch keeping its highest level: the peaks are what matters."""
    if len(x) <= points:
        return x, y
    edges = np.linspace(x[0], x[-1], points + 1)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, points - 1)
    highest = np.full(points, np.nan)
    np.fmax.at(highest, which, y)
    keep = ~np.isnan(highest)
    return edges[:-1][keep], highest[keep]


def memory_ranks(timeline: Timeline) -> list[int]:
    """The ranks that get a memory line: all up to ``MEMORY_LINES``, else rank 0, the last and the busiest."""
    ranks = list(range(timeline.num_ranks))
    if len(ranks) > MEMORY_LINES:
        ranks = sorted({0, len(ranks) - 1, int(np.argmax(timeline.peak_memory_per_rank()))})
    return ranks


def memory_traces(timeline: Timeline, axes: dict, in_legend: bool = True) -> list[dict]:
    """The engine's memory series of each rank (``Timeline.memory_curve``: the peak card is its maximum);
    ``in_legend`` False: named only at their peaks (``peak_labels``)."""
    traces = []
    for rank in memory_ranks(timeline):
        x, y = _downsampled(*timeline.memory_curve(rank))
        traces.append(
            dict(
                type="scatter",
                name=f"memory, rank {rank}",
                legendgroup="memory",
                showlegend=in_legend,
                x=x.astype(np.float32),
                y=y.astype(np.float32),
                mode="lines",
                line=dict(
                    shape="hv",
                    width=1.5,
                    color=RANK_COLOURS[rank % len(RANK_COLOURS)],
                    dash=RANK_DASHES[rank % len(RANK_DASHES)],
                ),
                hovertemplate=f"rank {rank} · t %{{x:.4g}} · %{{y:.3g}}<extra></extra>",
                **axes,
            )
        )
    return traces


def _longest_stretch_at_peak(x: np.ndarray, y: np.ndarray) -> float:
    """The middle of the longest stretch the curve (steps: "hv", each level held until the next point) spends at
    its highest level: there the name has room, and ranks that peak at the same moment are named apart."""
    ends = np.append(x[1:], x[-1])
    at_peak = y >= np.max(y)
    best, best_length, start = float(x[int(np.argmax(y))]), -1.0, None
    for i in range(len(x) + 1):
        if i < len(x) and at_peak[i]:
            start = i if start is None else start
            continue
        if start is not None:
            length = float(ends[i - 1] - x[start])
            if length > best_length:
                best, best_length = (float(x[start]) + float(ends[i - 1])) / 2, length
            start = None
    return best


def peak_labels(timeline: Timeline, *, xref: str, yref: str, font_size: int) -> list[dict]:
    """Each memory line named at its peak ("r0"), so the lines part without colour: an annotation on a white
    ground above the peak, drawn over the lines, so no line crosses the name."""
    labels = []
    for rank in memory_ranks(timeline):
        x, y = timeline.memory_curve(rank)
        if not len(x) or float(np.max(y)) <= 0:
            continue
        x_mid = _longest_stretch_at_peak(x, y)
        labels.append(
            dict(
                name=PEAK_NAME,
                text=f"r{rank}",
                x=x_mid,
                y=float(np.max(y)),
                xref=xref,
                yref=yref,
                yanchor="bottom",
                showarrow=False,
                bgcolor="rgba(255,255,255,0.9)",
                borderpad=1,
                font=dict(size=font_size, color=RANK_COLOURS[rank % len(RANK_COLOURS)]),
            )
        )
    return labels
