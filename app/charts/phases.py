"""What a lesson marks on the Gantt: the warm-up, steady state and cool-down, the bubble's term, and the part a
question was about (the rest dimmed)."""

from __future__ import annotations

from app.charts.gantt import KINDS, OVERLAPPED
from app.charts.lanes import time_format
from engine import Timeline

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
