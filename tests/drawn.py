"""The figures an AppTest page draws, in one place for every test that reads them."""

import json

from app.elements.live_chart import COMPONENT


def drawn_figures(at) -> list[dict]:
    """The page's figures: those of the lab's own chart element (app/elements/live_chart.py: the Gantts and the
    charts that carry their own look) first, then those drawn with st.plotly_chart."""
    live = [json.loads(e.proto.json)["figure"] for e in at.get("bidi_component") if e.proto.component_name == COMPONENT]
    return live + [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
