"""Plotly figure builders: Timeline in, Figure out. Pure functions, tested without Streamlit."""

from __future__ import annotations

import plotly.graph_objects as go

from engine import Timeline

KIND_STYLE = {
    # kind: (legend name, colour)
    "F": ("F forward", "#4C78A8"),
    "B": ("B full backward", "#F58518"),
    "I": ("I input-gradient backward", "#54A24B"),
    "W": ("W weight-gradient backward", "#B279A2"),
}
LABEL_LIMIT = 4000  # above this many bars, micro-batch labels are dropped (they would not fit anyway)


def gantt(timeline: Timeline, *, title: str = "", time_unit: str = "time units") -> go.Figure:
    """One row per rank, one bar per action coloured by kind and labelled with its micro-batch.

    A rank's later chunks (interleaved, V placement) are drawn lighter. The two halves of an overlapped F&B pair share the slot: F drawn in the upper half of the row, the
    backward in the lower half. Bars use ``base``/``x`` (start/duration) with ``barmode="overlay"`` so they
    stay on their row (FIELD-NOTES: the default "group" shifts them; px.timeline reads numbers as dates).
    """
    frame = timeline.frame
    label = len(frame) <= LABEL_LIMIT
    figure = go.Figure()
    for kind, (name, colour) in KIND_STYLE.items():
        rows = frame[frame["kind"] == kind]
        if rows.empty:
            continue
        overlapped = rows["overlapped"].to_numpy()
        width = [0.4 if o else 0.8 for o in overlapped]
        # overlay offsets: normal bars span [-0.4, 0.4]; overlapped F the upper half, B/I the lower half
        # (the y axis is reversed so rank 0 is on top: "upper" is the negative side)
        offset = [(-0.4 if kind == "F" else 0.0) if o else -0.4 for o in overlapped]
        figure.add_trace(go.Bar(
            name=name,
            orientation="h",
            y=rows["rank"],
            base=rows["start"],
            x=rows["end"] - rows["start"],
            width=width,
            offset=offset,
            # later chunks of a rank (interleaved, V placement) in a lighter shade of the same colour
            marker=dict(color=colour, opacity=(1.0 - 0.4 * (rows["chunk"] > 0)).tolist(),
                        line=dict(width=0.5, color="white")),
            text=rows["microbatch"].astype(str) if label else None,
            textposition="inside",
            insidetextanchor="middle",
            textangle=0,
            customdata=list(zip(rows["stage"], rows["microbatch"], rows["start"], rows["end"],
                                rows["memory_after"].round(3))),
            hovertemplate=(f"{kind} stage %{{customdata[0]}} micro-batch %{{customdata[1]}}<br>"
                           "start %{customdata[2]:.3g}, end %{customdata[3]:.3g}<br>"
                           "memory after %{customdata[4]}<extra>rank %{y}</extra>"),
        ))
    waits = timeline.waits
    if waits is not None and len(waits):
        figure.add_trace(go.Bar(
            name="waiting for a receive", orientation="h", y=waits["rank"], base=waits["start"],
            x=waits["end"] - waits["start"], width=0.3, offset=-0.15,
            marker=dict(color="rgba(120,120,120,0.55)"),
            customdata=list(zip(waits["waiting_for"], waits["action"])),
            hovertemplate="%{customdata[1]} waits for %{customdata[0]}<br>%{x:.3g} " + time_unit
                          + "<extra>rank %{y}</extra>",
        ))
    figure.update_layout(
        title=title or None,
        barmode="overlay",
        bargap=0.1,
        uniformtext=dict(minsize=8, mode="hide"),
        xaxis=dict(title=time_unit, rangemode="tozero"),
        yaxis=dict(title="rank", autorange="reversed", tickmode="array",
                   tickvals=list(range(timeline.num_ranks)),
                   ticktext=[f"rank {r}" for r in range(timeline.num_ranks)]),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        height=max(220, 60 + 34 * timeline.num_ranks),
        margin=dict(l=10, r=10, t=50 if title else 30, b=40),
    )
    return figure


def memory_chart(timeline: Timeline, *, time_unit: str = "time units",
                 memory_unit: str = "micro-batches of activations") -> go.Figure:
    """Activation memory of each rank over time (a step line through the value after each action)."""
    figure = go.Figure()
    frame = timeline.frame.sort_values(["rank", "end", "step"])
    for rank, rows in frame.groupby("rank"):
        figure.add_trace(go.Scatter(
            name=f"rank {rank}", x=[0.0, *rows["end"]], y=[0.0, *rows["memory_after"]],
            mode="lines", line=dict(shape="hv"),
        ))
    figure.update_layout(
        xaxis=dict(title=time_unit, rangemode="tozero"),
        yaxis=dict(title=memory_unit, rangemode="tozero"),
        height=300, margin=dict(l=10, r=10, t=30, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    return figure
