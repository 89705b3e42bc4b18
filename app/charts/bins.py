"""Past ``gantt.BAR_LIMIT`` actions the Gantt is one heatmap: each column a slice of time, coloured by the kind that
ran most in it (FIELD-NOTES: bin time per pixel column), with every action packed for the browser's zoom
script, which draws the bars again once few are visible."""

from __future__ import annotations

import base64

import numpy as np

from engine import Timeline
from engine.ir import KIND_NAMES, Kind

from ..style import (
    IDLE_FILL,
    KIND_COLOURS,
    kind_pattern,
    text_colour,
)

BINS = 480
CODES = ("F", "B", "I", "W", "-")
BIN_COLOURS = [KIND_COLOURS[k] for k in "FBIW"] + [IDLE_FILL]


def busy_by_bin(timeline: Timeline, edges: np.ndarray) -> np.ndarray:
    """Time each rank spent on each kind inside each bin: array (ranks, kinds, bins)."""
    frame = timeline.frame.drop_duplicates(["rank", "step", "kind"])
    busy = np.zeros((timeline.num_ranks, len(Kind), len(edges) - 1))
    for (rank, letter), rows in frame.groupby(["rank", "kind"]):
        starts = rows["start"].to_numpy()
        ends = rows["end"].to_numpy()
        order = np.argsort(ends)
        starts, ends = starts[order], ends[order]
        done = np.r_[0.0, np.cumsum(ends - starts)]
        # busy time up to each edge: the actions ended before it, plus the part of the one running across it
        k = np.searchsorted(ends, edges, side="right")
        running = np.minimum(k, len(ends) - 1)
        partial = np.where(k < len(ends), np.clip(edges - starts[running], 0.0, None), 0.0)
        covered = done[k] + np.minimum(partial, (ends - starts)[running])
        busy[int(rank), Kind[letter]] = np.diff(covered)
    return busy


ZOOM_BARS = 600
"""Zoomed in on a binned chart, the browser draws the actions one by one once at most this many are visible
(and re-bins the visible range into ``BINS`` columns until then) — ``player.py``'s zoom script."""


def zoom_payload(timeline: Timeline) -> dict:
    """Every action of a binned chart, packed for the browser's zoom script: little-endian start and end
    (float32), rank and micro-batch (int16), kind (int8), in that order, base64 — 13 bytes an action (49,152
    actions: about 0.85 MB of text, against 67 MB had every frame resent the bars)."""
    frame = timeline.frame
    blob = b"".join(
        frame[column].to_numpy().astype(dtype).tobytes()
        for column, dtype in (("start", "<f4"), ("end", "<f4"), ("rank", "<i2"), ("microbatch", "<i2"))
    )
    blob += frame["kind"].map({kind.name: int(kind) for kind in Kind}).to_numpy().astype("<i1").tobytes()
    return dict(
        count=len(frame),
        data=base64.b64encode(blob).decode("ascii"),
        kinds=[kind.name for kind in Kind],
        colours=[KIND_COLOURS[kind.name] for kind in Kind],
        patterns=[
            kind_pattern(kind.name, KIND_COLOURS[kind.name], text_colour(KIND_COLOURS[kind.name])) for kind in Kind
        ],
        inks=[text_colour(KIND_COLOURS[kind.name]) for kind in Kind],
        idle=IDLE_FILL,
        bins=BINS,
        bars=ZOOM_BARS,
    )


def add_bins(traces: list, timeline: Timeline, show_legend: bool) -> None:
    start, end = float(timeline.frame["start"].min()), float(timeline.frame["end"].max())
    edges = np.linspace(start, end, BINS + 1)
    width = edges[1] - edges[0]
    busy = busy_by_bin(timeline, edges)
    total = busy.sum(axis=1)
    code = np.where(total >= 0.5 * width, busy.argmax(axis=1), len(Kind))  # idle when under half busy
    scale = []
    for index, colour in enumerate(BIN_COLOURS):  # discrete colour scale: one band per code
        low, high = index / len(BIN_COLOURS), (index + 1) / len(BIN_COLOURS)
        scale += [[low, colour], [high, colour]]
    traces.append(
        dict(
            type="heatmap",
            z=code.astype(np.int8),
            x=((edges[:-1] + edges[1:]) / 2).astype(np.float32),
            y=np.arange(timeline.num_ranks, dtype=np.int16),
            zmin=-0.5,
            zmax=len(BIN_COLOURS) - 0.5,
            colorscale=scale,
            showscale=False,
            name="binned",
            text=np.array(CODES)[code],
            customdata=np.round(100 * np.clip(total / width, 0, 1)).astype(np.uint8),
            hovertemplate="rank %{y} · t ≈ %{x:.4g} · mostly %{text} · busy %{customdata}%<extra></extra>",
            meta=dict(pplab_zoom=zoom_payload(timeline)),
        )
    )
    for letter in "FBIW":  # the heatmap has no legend of its own: one entry per colour
        if (timeline.frame["kind"] == letter).any():
            traces.append(
                dict(
                    type="bar",
                    name=f"{letter} {KIND_NAMES[Kind[letter]]}",
                    x=[None],
                    y=[None],
                    marker=dict(color=KIND_COLOURS[letter]),
                    showlegend=show_legend,
                    legendgroup=letter,
                )
            )
    traces.append(
        dict(
            type="bar",
            name="idle (the bubble)",
            x=[None],
            y=[None],
            marker=dict(color=IDLE_FILL),
            showlegend=show_legend,
            legendgroup="idle",
        )
    )
