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

import base64
from dataclasses import dataclass

import numpy as np

from engine import Timeline
from engine.ir import KIND_NAMES, Kind

from ..style import (
    IDLE_FILL,
    IDLE_HATCH,
    KIND_COLOURS,
    RECEIVE_COLOUR,
    RECOMPUTE_HATCH,
    SEND_COLOUR,
    TRANSFER_COLOUR,
    WAIT_HATCH,
    chunk_shade,
    kind_pattern,
    text_colour,
)

BAR_LIMIT = 2500
"""Above this many actions the Gantt is binned (one heatmap) instead of one bar per action."""
LABEL_LIMIT = 1200
"""Above this many bars, micro-batch labels are dropped (they would not fit)."""
OUTLINE_LIMIT = 400
"""Thin white outlines separate bars only while there are few; many outlines wash a chart out."""
TRANSFER_LIMIT = 3000
BINS = 480
CODES = ("F", "B", "I", "W", "-")
BIN_COLOURS = [KIND_COLOURS[k] for k in "FBIW"] + [IDLE_FILL]
KINDS = tuple("FBIW")
OVERLAPPED = "overlapped"
"""The ``meta`` of the traces that draw the halves of overlapped F&B pairs (``emphasise`` finds them by it)."""


def time_format(timeline: Timeline) -> str:
    """One decimal for simulated time units, three for measured milliseconds."""
    times = np.r_[timeline.frame["start"].to_numpy(), timeline.frame["end"].to_numpy()]
    return ".1f" if np.allclose(times * 10, np.round(times * 10)) else ".3f"


@dataclass(frozen=True)
class Lanes:
    """Where a rank's row puts its bars (row units; the y axis runs downwards, rank 0 on top): the compute lane,
    and — when transfers take time or a run waited for receives — a thin communication lane under it."""

    compute: tuple[float, float]
    """(offset, width) of the compute lane."""
    comm: tuple[float, float] | None = None
    """(offset, width) of the communication lane, or None."""

    def halves(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """An overlapped F&B pair's two halves of the compute lane: F above, the backward below."""
        offset, width = self.compute
        return (offset, width / 2), (offset + width / 2, width / 2)


ONE_LANE = Lanes(compute=(-0.4, 0.8))
TWO_LANES = Lanes(compute=(-0.42, 0.6), comm=(0.22, 0.2))


def lanes_for(timeline: Timeline) -> Lanes:
    moves = timeline.transfers
    timed = moves is not None and len(moves) <= TRANSFER_LIMIT and bool((moves["arrive"] > moves["depart"]).any())
    waited = timeline.waits is not None and len(timeline.waits) > 0
    return TWO_LANES if timed or waited else ONE_LANE


def gantt_traces(timeline: Timeline, *, axes: dict, show_legend: bool) -> tuple[list[dict], str]:
    """The traces that draw ``timeline`` on the subplot whose axes are ``axes`` ({"xaxis": "x", "yaxis": "y"}),
    and what was drawn: "bars" or "bins"."""
    traces: list[dict] = []
    if len(timeline.frame) > BAR_LIMIT:
        _add_bins(traces, timeline, show_legend)
        drawn = "bins"
    else:
        lanes = lanes_for(timeline)
        for add in (_add_bars, _add_idle, _add_recompute, _add_transfers, _add_waits):
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


def _add_transfers(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    """Each hand-off between ranks on the communication lanes — a send bar on the producer's rank, a receive bar
    on the consumer's — with an arrow from one to the other (only when transfers take time, and not too many)."""
    moves = timeline.transfers
    if lanes.comm is None or moves is None or moves.empty or len(moves) > TRANSFER_LIMIT:
        return
    moves = moves[moves["arrive"] > moves["depart"]]
    if moves.empty:
        return
    fmt = time_format(timeline)
    offset, width = lanes.comm
    for side, rank_column, colour in (("send", "from_rank", SEND_COLOUR), ("receive", "to_rank", RECEIVE_COLOUR)):
        traces.append(
            dict(
                type="bar",
                name=f"transfer: {side}",
                legendgroup="transfer",
                showlegend=show_legend,
                orientation="h",
                y=moves[rank_column].to_numpy(np.int16),
                base=moves["depart"].to_numpy(np.float32),
                x=(moves["arrive"] - moves["depart"]).to_numpy(np.float32),
                width=width,
                offset=offset,
                marker=dict(color=colour, line=dict(width=0)),
                hovertext=[
                    f"rank {r} · {side} {what} → {consumer} · {a:{fmt}} → {b:{fmt}}"
                    for r, what, consumer, a, b in zip(
                        moves[rank_column], moves["what"], moves["for"], moves["depart"], moves["arrive"], strict=True
                    )
                ],
                hoverinfo="text",
            )
        )
    queued = moves[moves["depart"] > moves["made"] + 1e-9]
    if not queued.empty:  # shared links: the product was made, its link still busy with an earlier one
        traces.append(
            dict(
                type="bar",
                name="transfer: waiting for the link",
                legendgroup="transfer",
                showlegend=show_legend,
                orientation="h",
                y=queued["from_rank"].to_numpy(np.int16),
                base=queued["made"].to_numpy(np.float32),
                x=(queued["depart"] - queued["made"]).to_numpy(np.float32),
                width=width,
                offset=offset,
                marker=dict(
                    color="rgba(255,255,255,0)",
                    line=dict(width=0.5, color=SEND_COLOUR),
                    pattern=dict(shape=".", fgcolor=SEND_COLOUR, size=4, solidity=0.4),
                ),
                hovertext=[
                    f"rank {r} · {what} → {consumer} waits for the link to rank {t} · {a:{fmt}} → {b:{fmt}}"
                    for r, t, what, consumer, a, b in zip(
                        queued["from_rank"],
                        queued["to_rank"],
                        queued["what"],
                        queued["for"],
                        queued["made"],
                        queued["depart"],
                        strict=True,
                    )  # fmt: skip
                ],
                hoverinfo="text",
            )
        )
    count, middle = len(moves), offset + width / 2
    x = np.column_stack([moves["depart"], moves["arrive"], np.full(count, np.nan)]).ravel()
    y = np.column_stack([moves["from_rank"] + middle, moves["to_rank"] + middle, np.full(count, np.nan)]).ravel()
    traces.append(
        dict(
            type="scatter",
            name="transfer: from producer to consumer",
            legendgroup="transfer",
            showlegend=False,
            x=x.astype(np.float32),
            y=y.astype(np.float32),
            mode="lines+markers",
            line=dict(color=TRANSFER_COLOUR, width=1),
            marker=dict(
                symbol="arrow",
                angleref="previous",
                size=np.tile(np.array([0, 9, 0], np.int8), count),
                color=TRANSFER_COLOUR,
            ),
            hoverinfo="skip",
        )
    )


def _add_waits(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    """Time a rank sat blocked in a receive (the distributed backend), on its communication lane, hatched: a wait,
    not a transfer."""
    waits = timeline.waits
    if waits is None or not len(waits) or lanes.comm is None:
        return
    offset, width = lanes.comm
    traces.append(
        dict(
            type="bar",
            name="waiting for a receive",
            legendgroup="wait",
            showlegend=show_legend,
            orientation="h",
            y=waits["rank"].to_numpy(np.int16),
            base=waits["start"].to_numpy(np.float32),
            x=(waits["end"] - waits["start"]).to_numpy(np.float32),
            width=width,
            offset=offset,
            marker=dict(
                color="rgba(255,255,255,0)",
                line=dict(width=0),
                pattern=dict(shape="/", fgcolor=WAIT_HATCH, size=5, solidity=0.5),
            ),
            hovertext=[
                f"rank {r} · {a} waits for {w} · {e - s:.3f}"
                for r, a, w, s, e in zip(
                    waits["rank"], waits["action"], waits["waiting_for"], waits["start"], waits["end"], strict=True
                )
            ],
            hoverinfo="text",
        )
    )


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


def _add_bins(traces: list, timeline: Timeline, show_legend: bool) -> None:
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


# -- what a lesson marks on the Gantt: phases, the bubble's term, the part a question was about ---------------
PHASES = ("warm-up", "steady state", "cool-down")
PHASE_FILLS = {
    "warm-up": "rgba(66,133,244,0.16)",
    "steady state": "rgba(120,120,120,0.10)",
    "cool-down": "rgba(219,68,55,0.14)",
}
"""Tints behind each rank's row (the actions and idle blocks draw over them); the phases are also named in the
legend, in the hover and above the first rank, so the tint is never the only code."""
EMPHASIS_LINE = dict(color="#111111", width=2.5)
DIMMED = 0.3


def phase_intervals(timeline: Timeline) -> list[tuple[int, str, float, float]]:
    """Each rank's phases of the step as (rank, phase, start, end), empty phases left out.

    [Note: phases] Per rank, from the step's start to its end: **warm-up** until the rank's first backward
    (B, or I when the backward is split) starts — the pipe filling with forwards; **steady state** from there
    until its last forward ends — forwards and backwards taking turns; **cool-down** from then to the step's
    end — the pipe draining. GPipe has no steady state (every forward ends before the first backward);
    1F1B's rank r warms up with p − r forwards. The idle time before a rank's first action belongs to its
    warm-up, the idle time after its last to its cool-down."""
    frame = timeline.frame
    if frame.empty:
        return []
    origin, end = float(frame["start"].min()), float(frame["end"].max())
    rows = []
    for rank in range(timeline.num_ranks):
        mine = frame[frame["rank"] == rank]
        backward = mine[mine["kind"].isin(["B", "I"])]
        forward = mine[mine["kind"] == "F"]
        if backward.empty or forward.empty:
            continue
        first_backward = float(backward["start"].min())
        last_forward = float(forward["end"].max())
        turn = max(first_backward, last_forward)
        for phase, start, stop in (
            ("warm-up", origin, first_backward),
            ("steady state", first_backward, last_forward),
            ("cool-down", turn, end),
        ):
            if stop - start > 1e-9 * max(end - origin, 1.0):
                rows.append((rank, phase, start, stop))
    return rows


def phase_traces(timeline: Timeline, *, axes: dict, show_legend: bool) -> list[dict]:
    """The phases as full-height tints behind each rank's row (draw them before the actions)."""
    rows = phase_intervals(timeline)
    fmt = time_format(timeline)
    traces = []
    for phase in PHASES:
        mine = [row for row in rows if row[1] == phase]
        if not mine:
            continue
        traces.append(
            dict(
                type="bar",
                name=phase,
                legendgroup="phases",
                showlegend=show_legend,
                orientation="h",
                y=[rank for rank, *_ in mine],
                base=[start for _, _, start, _ in mine],
                x=[end - start for _, _, start, end in mine],
                width=1.0,
                offset=-0.5,
                marker=dict(color=PHASE_FILLS[phase], line=dict(width=0)),
                hovertext=[f"rank {rank} · {phase} · {a:{fmt}} → {b:{fmt}}" for rank, _, a, b in mine],
                hoverinfo="text",
                **axes,
            )
        )
    return traces


def phase_labels(timeline: Timeline, *, xref: str = "x", yref: str = "y", font_size: int = 12) -> list[dict]:
    """The phases' names written above the first rank's row, each centred on its stretch of rank 0."""
    labels = []
    for rank, phase, start, end in phase_intervals(timeline):
        if rank == 0:
            labels.append(
                dict(
                    text=phase,
                    x=(start + end) / 2,
                    y=-0.5,
                    xref=xref,
                    yref=yref,
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=font_size),
                )
            )
    return labels


def bubble_annotation(
    timeline: Timeline, label: str, value: float, *, xref: str = "x", yref: str = "y", font_size: int = 12
) -> dict | None:
    """The bubble named by its term: "idle per rank (p − 1)·(F + B) = 9", pointing at the longest idle block."""
    idle = timeline.idle_intervals()
    if idle.empty:
        return None
    longest = idle.loc[(idle["end"] - idle["start"]).idxmax()]
    return dict(
        text=f"idle per rank: {label} = {value:g}",
        x=float(longest["start"] + longest["end"]) / 2,
        y=int(longest["rank"]),
        xref=xref,
        yref=yref,
        showarrow=True,
        arrowhead=2,
        ax=0,
        ay=-28 if int(longest["rank"]) > 0 else 28,
        bgcolor="rgba(255,255,255,0.9)",
        bordercolor="#111111",
        borderwidth=1,
        font=dict(size=font_size, color="#111111"),
    )


def emphasise(traces: list[dict], what: str) -> None:
    """Mark ``what`` — "idle" (the bubble's blocks), a kind's letter, or "overlapped" (the half-height F&B
    pairs) — with a strong outline, and dim the other actions and blocks (a reveal's "this is what the question
    was about")."""
    for trace in traces:
        group = trace.get("legendgroup")
        if trace.get("type") != "bar" or group in (None, "phases", "memory"):
            continue
        overlapped = group in KINDS and trace.get("meta") == OVERLAPPED
        if group == what or (what == "overlapped" and overlapped):
            trace["marker"] = {**trace.get("marker", {}), "line": dict(EMPHASIS_LINE)}
            trace["opacity"] = 1.0
        else:
            trace["opacity"] = DIMMED
