"""Each rank's idle time split by cause (``engine.attribution``), as one stacked bar per rank: the textbook
bubble first, then what imbalance, cost ratios, transfers and overhead add (a negative part — a cost ratio
that suits the schedule — is drawn to the left of zero)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.style import STREAMLIT_LOOK, projected, sizes
from engine.attribution import DEFINITIONS, IdleAttribution

CAUSE_STYLE = {
    "schedule": ("#9A9A9A", "/"),
    "imbalance": ("#B5651D", "."),
    "cost ratios": ("#5B8DB8", "x"),
    "transfers": ("#2E7D5B", "-"),
    "overhead": ("#7B3F8C", "|"),
}
"""Colour and pattern per cause: the pattern keeps them apart in greyscale; the hover and legend name them."""


def attribution_figure(split: IdleAttribution, *, time_unit: str, projector: bool = False) -> go.Figure:
    size = sizes(projector)
    ranks = np.arange(len(split.idle))
    traces = []
    for index, cause in enumerate(split.causes):
        values = split.per_rank[:, index]
        if not np.any(np.abs(values) > 1e-9 * max(split.makespan, 1.0)):
            continue
        colour, pattern = CAUSE_STYLE[cause]
        traces.append(
            dict(
                type="bar",
                orientation="h",
                name=cause,
                y=ranks,
                x=values,
                marker=dict(
                    color=colour, pattern=dict(shape=pattern, fgcolor="#FFFFFF", fillmode="overlay", solidity=0.2)
                ),
                customdata=np.column_stack([ranks, split.idle]),
                hovertemplate=f"rank %{{customdata[0]}} · {cause}: %{{x:.4g}} {time_unit} of "
                f"%{{customdata[1]:.4g}} idle<extra>{DEFINITIONS[cause]}</extra>",
            )
        )
    figure = go.Figure(data=traces, _validate=False)
    figure.update_layout(
        template=STREAMLIT_LOOK,  # the figure carries its look: drawn by the lab's chart element (live_chart)
        barmode="relative",
        height=max(180, 60 + 28 * len(ranks)) + 60,
        margin=dict(l=4, r=6, t=10, b=40),
        font=dict(size=size.font),
        legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom", font=dict(size=size.font - 1)),
        xaxis=dict(title=dict(text=f"idle time ({time_unit})", font=dict(size=size.font)), zeroline=True),
        yaxis=dict(
            autorange="reversed",
            tickmode="array",
            tickvals=list(ranks),
            ticktext=[f"rank {r}" for r in ranks],
            tickfont=dict(size=size.font),
        ),
    )
    return projected(figure, projector)
