"""A real run's figure: the measured Gantt with the simulator's prediction as outlines on the same axis, the
spread over the measured steps as whiskers, and measured against modelled memory, in readable byte units."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.figures import assembled, rank_axis, stacked_layout
from app.charts.gantt import gantt_traces
from app.charts.playback import playback, slot_rows
from app.charts.style import RANK_COLOURS, Sizes, sizes


def memory_unit(values) -> tuple[str, float]:
    """The readable unit for byte counts up to ``max(values)``: (name, divisor)."""
    top = max(values, default=0)
    for name, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if top >= size:
            return name, float(size)
    return "bytes", 1.0


CROWDED_ACTIONS = 64
"""Past p × m = this, the prediction's outlines and the whiskers start switched off: they would cover the bars."""


def run_figure(result, *, projector: bool = False, outlines: bool = True, whiskers: bool = True) -> go.Figure:
    """A real run: the measured Gantt with, when asked, the simulator's prediction drawn as outlines on the
    same rows and time axis and each action's spread over the repeats as a whisker; below, measured memory
    (solid) against the memory model in the same bytes (dashed)."""
    size = sizes(projector)
    measured, predicted = result.measured, result.predicted
    end = max(float(measured.frame["end"].max()), float(predicted.frame["end"].max()))
    traces, drawn = gantt_traces(measured, axes=dict(xaxis="x", yaxis="y"), show_legend=True)
    if drawn == "bars" and outlines:
        traces.append(prediction_outlines(predicted))
    if drawn == "bars" and whiskers:
        traces += spread_whiskers(measured)
    unit, memory_traces = memory_against_model(result)
    traces += memory_traces
    layout = run_layout(traces, measured.num_ranks, unit=unit, end=end, size=size)
    frames = playback(
        layout,
        end,
        [slot_rows(measured.frame, "y")] if drawn == "bars" else [],
        total_rows=measured.num_ranks,
        time_format=".3f",
    )
    return assembled(traces, layout, frames)


def prediction_outlines(predicted) -> dict:
    """The simulator's prediction as empty bars with a dark outline, on the measured bars' rows."""
    frame = predicted.frame.drop_duplicates(["rank", "step"])
    return dict(
        type="bar",
        name="predicted (outline)",
        legendgroup="predicted",
        orientation="h",
        y=frame["rank"].to_numpy(np.int16),
        base=frame["start"].to_numpy(np.float32),
        x=(frame["end"] - frame["start"]).to_numpy(np.float32),
        width=0.92,
        offset=-0.46,
        marker=dict(color="rgba(0,0,0,0)", line=dict(color="#222222", width=1.5)),
        hovertemplate="predicted: rank %{customdata[1]} · %{base:.3f} → %{customdata[0]:.3f} ms<extra></extra>",
        customdata=np.column_stack([frame["end"], frame["rank"]]).astype(np.float32),
        xaxis="x",
        yaxis="y",
    )


def spread_whiskers(measured) -> list[dict]:
    """Each action's fastest and slowest duration over the measured steps, as a whisker just under its bar;
    none when every repeat took the same time."""
    actions = measured.frame
    spread = actions["duration_max"] - actions["duration_min"]
    if not (spread > 1e-9).any():
        return []
    count = len(actions)
    gap = np.full(count, np.nan)  # one NaN after each whisker breaks the line between them
    x = np.column_stack(
        [actions["start"] + actions["duration_min"], actions["start"] + actions["duration_max"], gap]
    ).ravel()
    y = np.column_stack([actions["rank"], actions["rank"], gap]).ravel() + 0.25
    return [
        dict(
            type="scatter",
            name="spread over the repeats (min–max)",
            legendgroup="spread",
            x=x.astype(np.float32),
            y=y.astype(np.float32),
            mode="lines+markers",
            line=dict(color="#111111", width=1.2),
            marker=dict(
                symbol="line-ns",
                size=np.tile(np.array([7, 7, 0], np.int8), count),
                line=dict(width=1.2, color="#111111"),
            ),
            hoverinfo="skip",
            xaxis="x",
            yaxis="y",
        )
    ]


def memory_against_model(result) -> tuple[str, list[dict]]:
    """Each rank's measured memory (solid) and the memory model's (dashed) in one readable byte unit: (unit,
    traces on the lower axes)."""
    measured = result.measured
    unit, divisor = memory_unit(measured.peak_memory_per_rank())
    traces = []
    for rank in range(measured.num_ranks):
        colour = RANK_COLOURS[rank % len(RANK_COLOURS)]
        for label, (x, values), dash in (
            ("measured", measured.memory_curve(rank), "solid"),  # the same series the peak table reads
            ("modelled", result.modelled_memory_curve(rank), "dash"),
        ):
            traces.append(
                dict(
                    type="scatter",
                    name=f"rank {rank}, {label}",
                    legendgroup=f"memory {label}",
                    x=np.asarray(x, np.float32),
                    y=(np.asarray(values) / divisor).astype(np.float32),
                    mode="lines",
                    line=dict(shape="hv", width=1.5, color=colour, dash=dash),
                    hovertemplate=f"rank {rank} {label} · %{{x:.3f}} ms · %{{y:.3g}} {unit}<extra></extra>",
                    xaxis="x2",
                    yaxis="y2",
                )
            )
    return unit, traces


def run_layout(traces: list[dict], num_ranks: int, *, unit: str, end: float, size: Sizes) -> dict:
    """The Gantt above the memory chart, on one time axis in ms, with room for the legend's entries."""
    rows = [
        dict(
            height=size.gantt_height(num_ranks),
            yaxis=rank_axis(num_ranks, height_px=size.gantt_height(num_ranks), font_px=size.font),
        ),
        dict(
            height=size.memory + 40,
            title=f"activation memory ({unit}): measured solid, modelled dashed",
            yaxis=dict(rangemode="tozero"),
        ),
    ]
    entries = sum(1 for trace in traces if trace.get("showlegend", True) and trace.get("name"))
    return stacked_layout(
        rows, title="Measured, with the prediction outlined", time_unit="ms", end=end, size=size, legend_entries=entries
    )
