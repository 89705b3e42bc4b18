"""Past ``gantt.BAR_LIMIT`` actions the Gantt is one heatmap: each column a slice of time (FIELD-NOTES: bin time per
pixel column) and each rank's row split into one lane per kind of action, so that forwards and backwards both stay
visible at any scale (a lane is coloured where its kind ran for at least ``LANE_SHARE`` of the column; coloured by
the kind that ran most, 256 micro-batches of 1F1B were one orange block). Every action travels packed for the
browser's zoom script, which re-bins the same way and draws the bars again once few are visible."""

from __future__ import annotations

import base64

import numpy as np

from app.charts.style import (
    IDLE_FILL,
    KIND_COLOURS,
    kind_pattern,
    text_colour,
)
from engine import Timeline
from engine.ir import KIND_NAMES, Kind

BINS = 480
BIN_COLOURS = [KIND_COLOURS[k] for k in "FBIW"] + [IDLE_FILL, "rgba(0,0,0,0)"]
IDLE_CODE, GAP_CODE = len(Kind), len(Kind) + 1
"""A lane's column where its kind ran too little; the empty row between two ranks."""
LANE_SHARE = 0.25
"""A kind's lane is coloured in a column where that kind ran for at least this share of the column's time."""
LANE_BAND = 0.7
"""The height of a rank's lanes together, in rank rows (the rest is the gap between ranks)."""


def lane_kinds(timeline: Timeline) -> list[int]:
    """The kinds the timeline runs, in the legend's order (F, B, I, W): one lane each."""
    present = set(timeline.frame["kind"].unique())
    return [int(kind) for kind in Kind if kind.name in present]


def lane_rows(num_ranks: int, num_lanes: int) -> np.ndarray:
    """The heatmap's row positions: for each rank a gap row at rank − 0.5, then its lanes spread over
    ``LANE_BAND`` around the rank; a last gap row. Gap rows are left empty, so the ranks stay apart."""
    offsets = -LANE_BAND / 2 + (np.arange(num_lanes) + 0.5) * LANE_BAND / num_lanes
    rows = [[rank - 0.5, *(rank + offsets)] for rank in range(num_ranks)]
    return np.array([*np.concatenate(rows), num_ranks - 0.5], dtype=np.float32)


def lane_codes(busy: np.ndarray, kinds: list[int], width: float) -> np.ndarray:
    """The heatmap's z for ``busy`` (ranks, kinds, bins): per rank a gap row, then one row per lane, its kind's
    code where the kind ran for ``LANE_SHARE`` of the column or more, idle elsewhere; a last gap row."""
    num_ranks, _, num_bins = busy.shape
    gap = np.full((1, num_bins), GAP_CODE, dtype=np.int8)
    rows = []
    for rank in range(num_ranks):
        lanes = [np.where(busy[rank, kind] >= LANE_SHARE * width, kind, IDLE_CODE) for kind in kinds]
        rows += [gap, np.array(lanes, dtype=np.int8)]
    return np.vstack([*rows, gap])


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
    kinds = lane_kinds(timeline)
    code = lane_codes(busy, kinds, width)
    rows = lane_rows(timeline.num_ranks, len(kinds))
    # the hover's rank and lane's busy share of its column (packed small: the chart travels to the browser)
    small = np.uint8 if timeline.num_ranks < 256 else np.int16
    share = np.zeros(code.shape, dtype=small)
    for rank in range(timeline.num_ranks):
        for lane, kind in enumerate(kinds):
            share[rank * (len(kinds) + 1) + 1 + lane] = np.round(100 * np.clip(busy[rank, kind] / width, 0, 1))
    rank_of_row = np.floor(rows + 0.5).astype(small).clip(0, timeline.num_ranks - 1)
    scale = []
    for index, colour in enumerate(BIN_COLOURS):  # discrete colour scale: one band per code
        low, high = index / len(BIN_COLOURS), (index + 1) / len(BIN_COLOURS)
        scale += [[low, colour], [high, colour]]
    zoom = zoom_payload(timeline) | dict(lanes=kinds, rows=rows.tolist(), share=LANE_SHARE)
    traces.append(
        dict(
            type="heatmap",
            z=code,
            x=((edges[:-1] + edges[1:]) / 2).astype(np.float32),
            y=rows,
            zmin=-0.5,
            zmax=len(BIN_COLOURS) - 0.5,
            colorscale=scale,
            showscale=False,
            name="binned",
            customdata=np.stack([share, np.repeat(rank_of_row[:, None], BINS, 1)], -1),
            hovertemplate="rank %{customdata[1]} · t ≈ %{x:.4g} · this lane's kind ran %{customdata[0]}% of the "
            "column<extra></extra>",
            meta=dict(pplab_zoom=zoom),
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
