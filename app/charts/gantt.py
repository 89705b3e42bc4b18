"""The Gantt rows of one timeline, as Plotly trace dicts for one subplot: bars per (kind, chunk), the idle
time as hatched blocks, recomputation and transfers — or, past ``BAR_LIMIT`` actions, a binned picture.

Traces are plain dicts, not ``go.Bar`` objects: plotly's validation of a few thousand bars costs more than
everything else on the page, and these dicts are checked once, by a test that validates a whole figure.

Bars use ``base``/``x`` (start/duration) with ``barmode="overlay"`` so they stay on their row (FIELD-NOTES: the
default "group" shifts them; ``px.timeline`` reads numbers as dates). Past a few thousand bars a browser
spends seconds drawing marks nobody can tell apart, so large timelines are drawn as one heatmap: each
column a slice of time, coloured by the kind that ran most in it (FIELD-NOTES: bin time per pixel column).
"""

from __future__ import annotations

import numpy as np

from app.charts.bins import add_bins
from app.charts.lanes import ONE_LANE, Lanes, add_expert_comm, add_transfers, add_waits, lanes_for, time_format
from app.charts.style import (
    IDLE_FILL,
    IDLE_HATCH,
    RECOMPUTE_HATCH,
    chunk_shade,
    kind_pattern,
    text_colour,
)
from engine import Timeline
from engine.ir import KIND_NAMES, Kind

BAR_LIMIT = 2500
"""Above this many actions the Gantt is binned (one heatmap) instead of one bar per action."""
LABEL_LIMIT = 1200
"""Above this many bars, micro-batch labels are dropped (they would not fit)."""
OUTLINE_LIMIT = 400
"""Thin white outlines separate bars only while there are few; many outlines wash a chart out."""
KINDS = tuple("FBIW")
OVERLAPPED = "overlapped"
"""The ``meta`` of the traces that draw the halves of overlapped F&B pairs (``emphasise`` finds them by it)."""


def gantt_traces(timeline: Timeline, *, axes: dict, show_legend: bool) -> tuple[list[dict], str]:
    """The traces that draw ``timeline`` on the subplot whose axes are ``axes`` ({"xaxis": "x", "yaxis": "y"}),
    and what was drawn: "bars" or "bins"."""
    traces: list[dict] = []
    if len(timeline.frame) > BAR_LIMIT:
        add_bins(traces, timeline, show_legend)
        drawn = "bins"
    else:
        lanes = lanes_for(timeline)
        for add in (_add_bars, _add_idle, _add_recompute, add_transfers, add_expert_comm, add_waits):
            add(traces, timeline, show_legend, lanes)
        drawn = "bars"
    for trace in traces:
        trace.update(axes)
    return traces, drawn


def _add_bars(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    frame = timeline.frame
    fmt = time_format(timeline)
    num_chunks = int(frame["chunk"].max()) + 1 if len(frame) else 1
    outline = dict(width=0.5, color="white") if len(frame) <= OUTLINE_LIMIT else dict(width=0)
    for kind in Kind:
        letter = kind.name
        for chunk in range(num_chunks):
            for overlapped in (False, True):
                rows = frame[
                    (frame["kind"] == letter) & (frame["chunk"] == chunk) & (frame["overlapped"] == overlapped)
                ]
                if not rows.empty:
                    traces.append(
                        _bar_trace(
                            rows,
                            kind,
                            chunk,
                            num_chunks,
                            overlapped,
                            fmt,
                            show_legend=show_legend and not overlapped,
                            label=len(frame) <= LABEL_LIMIT,
                            outline=outline,
                            lanes=lanes,
                        )
                    )


def _bar_trace(
    rows,
    kind: Kind,
    chunk: int,
    num_chunks: int,
    overlapped: bool,
    fmt: str,
    *,
    show_legend: bool,
    label: bool,
    outline: dict,
    lanes: Lanes = ONE_LANE,
) -> dict:
    """One trace: the actions of one kind, chunk and overlap. Hover text comes from a template over compact
    numbers (stage, micro-batch, start, end), not one string per bar, to keep the figure small."""
    letter = kind.name
    fill = chunk_shade(letter, chunk, num_chunks)
    # an overlapped F&B pair shares its slot: F in the upper half of the row, the backward in the lower
    # (the y axis is reversed so rank 0 is on top: "upper" is the negative side)
    upper, lower = lanes.halves()
    offset, width = (upper if letter == "F" else lower) if overlapped else lanes.compute
    numbers = np.column_stack([rows["stage"], rows["microbatch"], rows["start"], rows["end"], rows["rank"]]).astype(
        np.float32
    )
    # the rank comes from the data, not %{y}: Plotly writes %{y} with the axis's tick text ("rank 0")
    template = (
        f"rank %{{customdata[4]}} · %{{customdata[0]}}{letter}%{{customdata[1]}} (stage %{{customdata[0]}}, "
        f"{KIND_NAMES[kind]}, micro-batch %{{customdata[1]}}{', overlapped' if overlapped else ''}) · "
        f"%{{customdata[2]:{fmt}}} → %{{customdata[3]:{fmt}}}<extra></extra>"
    )
    name = f"{letter} {KIND_NAMES[kind]}" if num_chunks == 1 else f"{letter} chunk {chunk}"
    ink = text_colour(fill)
    trace = dict(
        type="bar",
        name=name,
        legendgroup=letter,
        showlegend=show_legend,
        orientation="h",
        y=rows["rank"].to_numpy(np.int16),
        base=rows["start"].to_numpy(np.float32),
        x=(rows["end"] - rows["start"]).to_numpy(np.float32),
        width=width,
        offset=offset,
        # colour is never the only code: each kind has its own fill pattern, and its letter in the label
        marker=dict(color=fill, line=outline, pattern=kind_pattern(letter, fill, ink)),
        meta=OVERLAPPED if overlapped else None,
        customdata=numbers,
        hovertemplate=template,
        textposition="inside",
        insidetextanchor="middle",
        textangle=0,
        textfont=dict(color=ink),
    )
    if label:
        trace["text"] = equal_width_labels(letter, rows["microbatch"].to_numpy())
    if num_chunks > 1 and show_legend:
        trace["legendgrouptitle"] = dict(text=f"{letter} {KIND_NAMES[kind]}")
    return trace


FIGURE_SPACE = "\u2007"
"""As wide as a digit: labels of one trace padded with it are all the same width, so Plotly's "hide what does
not fit" shows every label of a kind or none (never "F9" but not "F10" on bars of the same length)."""


def equal_width_labels(letter: str, microbatches: np.ndarray) -> list[str]:
    """ "F3", "F12"… as labels of one width: the kind's letter (colour is never the only code) and the
    micro-batch, the shorter numbers padded with figure spaces."""
    digits = len(str(int(microbatches.max()))) if len(microbatches) else 1
    return [f"{letter}{str(int(mb)).rjust(digits, FIGURE_SPACE)}" for mb in microbatches]


def _add_idle(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    idle = timeline.idle_intervals()
    if idle.empty:
        return
    fmt = time_format(timeline)
    traces.append(
        dict(
            type="bar",
            name="idle (the bubble)",
            legendgroup="idle",
            showlegend=show_legend,
            orientation="h",
            y=idle["rank"].to_numpy(np.int16),
            base=idle["start"].to_numpy(np.float32),
            x=(idle["end"] - idle["start"]).to_numpy(np.float32),
            width=lanes.compute[1],
            offset=lanes.compute[0],
            marker=dict(
                color=IDLE_FILL,
                line=dict(width=0),
                pattern=dict(shape="/", fgcolor=IDLE_HATCH, bgcolor=IDLE_FILL, size=7, solidity=0.25),
            ),
            hovertext=[
                f"rank {r} · idle · {a:{fmt}} → {b:{fmt}} ({b - a:{fmt}})"
                for r, a, b in zip(idle["rank"], idle["start"], idle["end"], strict=True)
            ],
            hoverinfo="text",
        )
    )


def _add_recompute(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    frame = timeline.frame
    rows = frame[frame["recompute"] > 0]
    if rows.empty:
        return
    traces.append(
        dict(
            type="bar",
            name="re-run forward (recomputation)",
            legendgroup="recompute",
            showlegend=show_legend,
            orientation="h",
            y=rows["rank"].to_numpy(np.int16),
            base=rows["start"].to_numpy(np.float32),
            x=rows["recompute"].to_numpy(np.float32),
            width=np.where(rows["overlapped"], lanes.halves()[1][1], lanes.compute[1]),
            offset=np.where(rows["overlapped"], lanes.halves()[1][0], lanes.compute[0]),
            marker=dict(
                color="rgba(0,0,0,0)",
                line=dict(width=0),
                pattern=dict(shape="x", fgcolor=RECOMPUTE_HATCH, bgcolor="rgba(255,255,255,0.3)", size=6, solidity=0.4),
            ),
            hovertext=[
                f"rank {r} · {s}{k}{mb} first re-runs its forward: {d:.3g}"
                for r, s, k, mb, d in zip(
                    rows["rank"], rows["stage"], rows["kind"], rows["microbatch"], rows["recompute"], strict=True
                )
            ],
            hoverinfo="text",
        )
    )
