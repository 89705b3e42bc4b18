"""The Search page's frontier: the best step found for each memory budget, as a staircase, with every
hand-made family as a labelled point in the same (peak memory, objective) plane — the families of the searched
placement as one series, those of the other placement as another (the line does not bound them)."""

from __future__ import annotations

import plotly.graph_objects as go

from app.charts.style import STREAMLIT_LOOK, projected, sizes
from engine.search import OPTIMAL, Frontier

LABEL_POSITIONS = ("top center", "bottom center", "middle right", "middle left")
"""Where a family's name goes; points at one peak memory take these in turn, so their names do not collide."""


def label_positions(xs: list[float]) -> list[str]:
    """A text position per point: the first at each x on top, the next below, then right and left."""
    seen: dict[float, int] = {}
    positions = []
    for x in xs:
        key = round(x, 1)
        positions.append(LABEL_POSITIONS[seen.get(key, 0) % len(LABEL_POSITIONS)])
        seen[key] = seen.get(key, 0) + 1
    return positions


def frontier_figure(found: Frontier, *, projector: bool = False) -> go.Figure:
    size = sizes(projector)
    problem = found.points[0].result.problem if found.points else None
    objective = problem.objective if problem is not None else "makespan"
    placement = problem.placement if problem is not None else "loop"
    budgets = [point.memory_budget for point in found.points]
    values = [point.result.objective_value for point in found.points]
    proven = ["optimal" if point.result.status == OPTIMAL else f"gap {point.result.gap:.1%}" for point in found.points]
    traces = [
        dict(
            type="scatter",
            name=f"searched, {placement} placement (best for each budget)",
            x=budgets,
            y=values,
            mode="lines+markers",
            line=dict(shape="hv", width=2, color="#1A5FB4"),
            marker=dict(size=8, symbol="circle"),
            customdata=proven,
            hovertemplate=f"budget %{{x:g}}: {objective} %{{y:.4g}} (%{{customdata}})<extra></extra>",
        )
    ]
    for same, name, symbol, colour in (
        (True, f"hand-made, {placement} placement", "diamond", "#B5651D"),
        (False, "hand-made, the other placement (not bounded by the line)", "square-open", "#6B6B6B"),
    ):
        families = sorted(
            (family for family in found.families if (family.placement == placement) == same),
            key=lambda family: (family.peak_memory, family.makespan),
        )
        if not families:
            continue
        xs = [family.peak_memory for family in families]
        traces.append(
            dict(
                type="scatter",
                name=name,
                x=xs,
                y=[_family_value(family, objective) for family in families],
                text=[family.name for family in families],
                mode="markers+text",
                textposition=label_positions(xs),
                marker=dict(size=10, symbol=symbol, color=colour),
                hovertemplate=f"%{{text}}: peak %{{x:.3g}}, {objective} %{{y:.4g}}<extra></extra>",
            )
        )
    figure = go.Figure(data=traces, _validate=False)
    figure.update_layout(
        template=STREAMLIT_LOOK,  # the figure carries its look: drawn by the lab's chart element (live_chart)
        height=360 if projector else 320,
        margin=dict(l=4, r=6, t=20, b=40),
        font=dict(size=size.font),
        legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom"),
        xaxis=dict(title="peak memory, busiest rank<br>(micro-batches of its share)", rangemode="tozero"),
        yaxis=dict(title=objective, rangemode="tozero"),
    )
    return projected(figure, projector)


def _family_value(family, objective: str) -> float:
    """A family's point on the chosen objective (its period when the search minimises the period)."""
    if objective == "period" and family.timeline is not None:
        return family.timeline.period
    return family.makespan
