"""Whole figures: one timeline (Gantt over memory, one time axis, one cursor), several timelines stacked on
one time axis (Compare), and the bubble-versus-memory trade-off (a real run's figure: ``run_figure.py``).

Figures are assembled from plain dicts and wrapped without plotly's validation (``_validate=False``): for
the Playground's 8×32 that takes the figure from ~300 ms to ~30 ms. ``tests/app/charts/test_charts.py`` validates
every figure kind once, so a misspelt property still fails a test.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.gantt import gantt_traces
from app.charts.lanes import time_format
from app.charts.memory import memory_traces, peak_labels
from app.charts.phases import bubble_annotation, emphasise, phase_labels, phase_traces
from app.charts.playback import playback, slot_rows
from app.charts.style import POINT_COLOUR, STREAMLIT_LOOK, projected, sizes
from engine import Timeline

LABEL_LINE = 0.9
"""Rank labels are at least this many times their font size apart: "rank 12" has no descender, and its glyphs
stand about 0.75 of the font size tall, so labels this far apart leave a gap between them."""
GAP_PX = 46
"""Space between stacked subplots (room for a subplot title)."""
AXIS_PX = 52
"""Below the plots: the time axis and its title."""
LEGEND_ROW_PX = 24
LEGEND_ABOVE_PX = 34
LEGEND_ABOVE_ENTRIES = 4
"""A projector's legend with up to this many entries fits one row above the plots."""
LEGEND_PER_ROW = 4
"""The legend sits below the chart, in rows (on a phone it would take the chart's width at its side); its
height is estimated from the entries, and Plotly's automargin grows it if a narrow screen wraps more."""


def rank_axis(num_ranks: int, *, height_px: float | None = None, font_px: float | None = None) -> dict:
    """The rank rows' axis: at most 16 labels, and where the rows are ``height_px`` tall in all, no closer than a
    line of ``font_px`` text (Search stacked seven schedules of four ranks in a projector's 330 px: 28 labels of 20 px
    on a 12 px pitch ran into each other)."""
    every = max(1, int(np.ceil(num_ranks / 16)))
    if height_px and font_px:
        every = max(every, int(np.ceil(LABEL_LINE * font_px * num_ranks / height_px)))
    ticks = list(range(0, num_ranks, every))
    return dict(
        autorange="reversed",
        tickmode="array",
        tickvals=ticks,
        ticktext=[f"rank {r}" for r in ticks],
        zeroline=False,
        showgrid=False,
    )


PHASE_LABEL_PX = 20
"""Room above the Gantt for the phases' names."""
TITLE_PX = 44
"""Per line of the chart's title."""
TITLE_CHARACTERS = 46
"""A title longer than this breaks onto a second line (a phone's chart is about 46 characters wide)."""


def wrapped(title: str, width: int = TITLE_CHARACTERS) -> str:
    """``title`` broken into lines of at most ``width`` characters at spaces, joined by Plotly's <br>."""
    lines: list[str] = []
    for word in title.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def placed_legend(size, entries: int) -> tuple[dict, int, bool]:
    """The legend's layout, the height it adds under the plots, and whether it sits in a row above them: on a
    projector a short legend in one row above the plots, a long one (groups with titles) at their right; else
    under the plots, in rows (a phone's chart is narrow)."""
    common = dict(font=dict(size=size.font), groupclick="toggleitem")
    if size.legend_above and entries <= LEGEND_ABOVE_ENTRIES:
        return dict(orientation="h", x=0, xanchor="left", y=1, yanchor="bottom") | common, 0, True
    if size.legend_above:
        return dict(orientation="v", x=1.01, xanchor="left", y=1, yanchor="top") | common, 0, False
    below = dict(orientation="h", x=0, xanchor="left", y=0, yref="container", yanchor="bottom")
    below |= dict(font=dict(size=size.font - 1), groupclick="toggleitem")
    return below, LEGEND_ROW_PX * int(np.ceil(entries / LEGEND_PER_ROW)) + 8, False


def stacked_layout(rows: list[dict], *, title: str, time_unit: str, end: float, size, legend_entries: int = 8) -> dict:
    """A layout of subplots stacked top to bottom on one time axis. Each row: {"height": px, "title": text,
    "yaxis": extra y-axis settings}. Axes are named x, x2, … and y, y2, … from the top."""
    total = sum(row["height"] for row in rows) + GAP_PX * (len(rows) - 1)
    legend, legend_px, above = placed_legend(size, legend_entries)
    title = wrapped(title, size.title_characters)
    title_lines = title.count("<br>") + 1
    # no title: room for the first subplot's name; a projector's legend row under the title
    head_px = TITLE_PX * title_lines if title else (30 if size.legend_above else 45)
    head_px += LEGEND_ABOVE_PX if above else 0
    layout: dict = dict(annotations=[])
    top = 1.0
    bottom_axis = "x" if len(rows) == 1 else f"x{len(rows)}"
    for index, row in enumerate(rows, start=1):
        suffix = "" if index == 1 else str(index)
        low = max(0.0, top - row["height"] / total)
        is_bottom = index == len(rows)
        layout[f"yaxis{suffix}"] = dict(
            domain=[low, top], anchor=f"x{suffix}", tickfont=dict(size=size.font), **row.get("yaxis", {})
        )
        layout[f"xaxis{suffix}"] = dict(
            anchor=f"y{suffix}",
            range=[0, end * 1.01 or 1],
            showticklabels=is_bottom,
            tickfont=dict(size=size.font),
            **({} if is_bottom else {"matches": bottom_axis}),
            **(dict(title=dict(text=time_unit, font=dict(size=size.font))) if is_bottom else {}),
        )
        if row.get("title"):
            layout["annotations"].append(
                dict(
                    text=row["title"],
                    x=0.5,
                    xref="paper",
                    xanchor="center",
                    y=top,
                    yref="paper",
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=size.font, color=CHART_INK),
                )
            )
        top = low - GAP_PX / total
    layout.update(
        # Plotly places a multi-line title by its last line: the lines above it need their height as padding
        title=dict(
            text=title,
            x=0,
            xanchor="left",
            y=1,
            yanchor="top",
            pad=dict(t=8 + round(1.3 * size.title) * (title_lines - 1)),
            font=dict(size=size.title),
        )
        if title
        else None,
        barmode="overlay",
        bargap=0.1,
        font=dict(size=size.font),
        uniformtext=dict(minsize=size.smallest_text, mode="hide"),
        legend=legend,
        height=total + AXIS_PX + legend_px + head_px,
        margin=dict(l=4, r=6, t=head_px, b=AXIS_PX + legend_px),
        hoverlabel=dict(font=dict(size=size.font)),
        template=STREAMLIT_LOOK,
    )
    return layout


def assembled(traces: list[dict], layout: dict, frames: list[dict]) -> go.Figure:
    figure = go.Figure(data=traces, layout=layout, _validate=False)
    figure._frame_objs = tuple(go.Frame(frame, _validate=False) for frame in frames)
    return figure


def timeline_figure(
    timeline: Timeline,
    *,
    title: str = "",
    time_unit: str = "time units",
    memory_unit: str = "micro-batches of activations",
    projector: bool = False,
    memory: bool = True,
    animate: bool = True,
    cursor_at: float | None = None,
    extra: list[dict] | None = None,
    end: float | None = None,
    phases: bool = False,
    highlight: str | None = None,
    bubble_label: tuple[str, float] | None = None,
) -> go.Figure:
    """The Gantt of ``timeline`` (one row per rank) over its memory curve, sharing the time axis and the
    playback cursor; ``extra`` traces are drawn on the Gantt (the Plan page's all-reduce), which may run to
    ``end``.

    What a lesson may ask for on top (drawn only when the actions are drawn one by one): ``phases`` tints each
    rank's warm-up, steady state and cool-down (``phases.phase_intervals``) and names them above rank 0;
    ``highlight`` ("idle" or a kind's letter) outlines that part and dims the rest; ``bubble_label`` (term,
    value) points at the longest idle block with "idle per rank: term = value"."""
    size = sizes(projector)
    last = float(timeline.frame["end"].max()) if len(timeline.frame) else 0.0
    end = max(last, end or 0.0)
    traces, drawn = gantt_traces(timeline, axes=dict(xaxis="x", yaxis="y"), show_legend=True)
    marked = drawn == "bars"
    if marked and highlight:
        emphasise(traces, highlight)
    if marked and phases:
        traces = phase_traces(timeline, axes=dict(xaxis="x", yaxis="y"), show_legend=True) + traces
    traces += [trace | dict(xaxis="x", yaxis="y") for trace in extra or []]
    gantt_px = size.gantt_height(timeline.num_ranks)
    rows = [dict(height=gantt_px, yaxis=rank_axis(timeline.num_ranks, height_px=gantt_px, font_px=size.font))]
    if memory:
        traces += memory_traces(timeline, dict(xaxis="x2", yaxis="y2"), in_legend=not size.legend_above)
        labels = peak_labels(timeline, xref="x2", yref="y2", font_size=size.label)
        rows.append(
            dict(height=size.memory, title=f"activation memory ({memory_unit})", yaxis=dict(rangemode="tozero"))
        )
    entries = sum(1 for trace in traces if trace.get("showlegend", True) and trace.get("name"))
    layout = stacked_layout(rows, title=title, time_unit=time_unit, end=end, size=size, legend_entries=entries)
    if memory:
        layout["annotations"] += labels
    if marked and phases:
        layout["annotations"] += phase_labels(timeline, font_size=size.font - 1)
        layout["margin"]["t"] += PHASE_LABEL_PX  # the names sit above rank 0's row
        layout["height"] += PHASE_LABEL_PX
    if marked and bubble_label is not None:
        note = bubble_annotation(timeline, *bubble_label, font_size=size.font - 1)
        if note is not None:
            layout["annotations"].append(note)
    frames = []
    if animate:
        frames = playback(
            layout,
            end,
            [slot_rows(timeline.frame, "y")] if drawn == "bars" else [],
            total_rows=timeline.num_ranks,
            time_format=time_format(timeline),
            cursor_at=cursor_at,
        )
    return assembled(traces, layout, frames)


CHART_INK = "#3d4049"
"""Text a chart writes itself (subplot titles): 10:1 on white, where Streamlit's theme grey is about 3.7:1."""
PROJECTOR_COMPARE_PX = 330
"""In projector mode the stacked schedules share this many pixels, so that three of them and their time axis fit
a 1280 × 720 screen under the page's title (the browser test measures it)."""


def compare_figure(
    timelines: dict[str, Timeline], *, time_unit: str = "time units", projector: bool = False
) -> go.Figure:
    """One Gantt per schedule, stacked on one shared time axis (the longer makespan is visibly longer), played
    by one set of controls."""
    size = sizes(projector)
    share = PROJECTOR_COMPARE_PX // len(timelines) if projector else None
    traces, rows, slots, all_bars, seen = [], [], [], True, set()
    for index, (name, timeline) in enumerate(timelines.items(), start=1):
        suffix = "" if index == 1 else str(index)
        mine, drawn = gantt_traces(timeline, axes=dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}"), show_legend=True)
        for trace in mine:  # several rows draw the same kinds: one legend entry each
            entry = (trace.get("legendgroup"), trace.get("name"))
            if entry in seen:
                trace["showlegend"] = False
                trace.pop("legendgrouptitle", None)
            seen.add(entry)
        traces += mine
        all_bars = all_bars and drawn == "bars"
        height = min(size.gantt_height(timeline.num_ranks) - 40, share or 10**6)
        yaxis = rank_axis(timeline.num_ranks, height_px=height, font_px=size.font)
        rows.append(dict(height=height, title=name, yaxis=yaxis))
        slots.append(slot_rows(timeline.frame, f"y{suffix}"))
    end = max(float(t.frame["end"].max()) for t in timelines.values())
    entries = sum(1 for trace in traces if trace.get("showlegend", True) and trace.get("name"))
    layout = stacked_layout(rows, title="", time_unit=time_unit, end=end, size=size, legend_entries=entries)
    first = next(iter(timelines.values()))
    frames = playback(
        layout,
        end,
        slots if all_bars else [],
        total_rows=sum(t.num_ranks for t in timelines.values()),
        time_format=time_format(first),
    )
    return assembled(traces, layout, frames)


def tradeoff_figure(rows: list[dict], *, projector: bool = False) -> go.Figure:
    """Bubble fraction against peak memory, one point per schedule: which trade memory for time."""
    size = sizes(projector)
    figure = go.Figure(
        go.Scatter(
            x=[row["peak_memory"] for row in rows],
            y=[row["bubble_fraction"] for row in rows],
            text=[row["schedule"] for row in rows],
            mode="markers+text",
            textposition="top center",
            marker=dict(size=14 if projector else 11, color=POINT_COLOUR),
            textfont=dict(size=size.font),
            hovertemplate="%{text}: peak memory %{x:.3g}, bubble %{y:.1%}<extra></extra>",
        )
    )
    figure.update_layout(
        template=STREAMLIT_LOOK,  # the figure carries its look: drawn by the lab's chart element (live_chart)
        height=340 if projector else 300,
        margin=dict(l=10, r=10, t=30, b=10),
        font=dict(size=size.font),
        xaxis=dict(
            title="peak memory, busiest rank<br>(micro-batches of a rank's share)",  # two lines: a phone keeps it
            range=[0, 1.15 * max(row["peak_memory"] for row in rows) or 1],
            tickfont=dict(size=size.font),
        ),
        yaxis=dict(
            title="bubble fraction",
            tickformat=".0%",
            tickfont=dict(size=size.font),
            range=[0, 1.25 * max(row["bubble_fraction"] for row in rows) or 0.1],
        ),
    )
    return projected(figure, projector)
