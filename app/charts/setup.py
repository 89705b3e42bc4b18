"""The question's own picture: what a lesson step sets up before its question is answered — p ranks, each an
empty row, and m micro-batches waiting to go in — and nothing of what happens (no bars, no time axis: the step's
length, its bubble and its memory are what the questions ask). A projected step whose chart waits for the answer
draws this in the chart's place, so the first screen is a slide with a picture and its question ([Note: predict,
then reveal] in ``app/views/lessons/course.py``); the reveal redraws the same chart element with the answer."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from app.charts.figures import rank_axis, wrapped
from app.charts.style import IDLE_FILL, KIND_COLOURS, STREAMLIT_LOOK, sizes

BOX = 0.8
"""A waiting micro-batch's box, in row units (a rank's row is 1 tall); boxes are 1 apart."""
GAP = 1.5
"""Between the waiting micro-batches and the ranks' rows, in the same units."""
LANE_LENGTH = 12.0
"""The ranks' rows' length: no time scale (the time is what is asked)."""


def waiting_places(num_ranks: int, num_microbatches: int) -> list[tuple[float, float]]:
    """Where each waiting micro-batch's box stands (x, y of its centre): in columns as tall as the ranks, the first
    nearest the ranks, at rank 0's height, filling each column downwards and then the next column to the left."""
    return [(-GAP - 0.5 - index // num_ranks, float(index % num_ranks)) for index in range(num_microbatches)]


def setup_figure(num_ranks: int, num_microbatches: int, *, title: str, projector: bool = False) -> go.Figure:
    """``num_ranks`` empty rows and ``num_microbatches`` numbered boxes waiting at their left."""
    size = sizes(projector)
    columns = math.ceil(num_microbatches / num_ranks)
    places = waiting_places(num_ranks, num_microbatches)
    fill = KIND_COLOURS["F"]
    boxes = dict(
        type="bar",
        orientation="h",
        base=[x - BOX / 2 for x, _ in places],
        x=[BOX] * len(places),
        y=[y for _, y in places],
        width=BOX,
        marker=dict(color=fill, line=dict(width=0)),
        # unnumbered: a micro-batch's number on the screen would read as an answer ("4" beside "how many?")
        name=f"{num_microbatches} micro-batches, waiting",
        hovertemplate="a micro-batch, waiting<extra></extra>",
    )
    rows = dict(
        type="bar",
        orientation="h",
        base=[0.0] * num_ranks,
        x=[LANE_LENGTH] * num_ranks,
        y=list(range(num_ranks)),
        width=BOX,
        marker=dict(color=IDLE_FILL, line=dict(width=0)),
        name="the ranks' time: what happens here is the question",
        hovertemplate="rank %{y}: what happens here is the question<extra></extra>",
    )
    head_px = 40 + round(1.3 * size.title) * (wrapped(title, size.title_characters).count("<br>") + 1)
    layout = dict(
        title=dict(text=wrapped(title, size.title_characters), x=0, xanchor="left", font=dict(size=size.title)),
        barmode="overlay",
        showlegend=True,
        legend=dict(orientation="h", x=0, xanchor="left", y=1, yanchor="bottom", font=dict(size=size.font)),
        xaxis=dict(range=[-GAP - columns - 0.2, LANE_LENGTH + 0.2], visible=False, fixedrange=True),
        yaxis=rank_axis(num_ranks, height_px=size.gantt_height(num_ranks), font_px=size.font)
        | dict(range=[num_ranks - 0.5, -0.5], autorange=False, tickfont=dict(size=size.font), fixedrange=True),
        annotations=[
            dict(
                x=LANE_LENGTH / 2,
                y=(num_ranks - 1) / 2,
                text="?",
                showarrow=False,
                font=dict(size=3 * size.title, color="#3d4049"),
            )
        ],
        height=size.gantt_height(num_ranks) + head_px,
        margin=dict(l=4, r=6, t=head_px, b=8),
        font=dict(size=size.font),
        template=STREAMLIT_LOOK,
    )
    return go.Figure(data=[rows, boxes], layout=layout, _validate=False)
