"""Playground: pick a schedule and sizes, play the simulated timeline, see its bubble and memory and why."""

import json

import streamlit as st

from app import state
from app.charts import timeline_figure
from app.explain import lecture_controls, legend_notes, metric_cards, rank_table, why_panel
from app.settings import URL_KEYS, settings_from_query
from app.simulation import simulated
from app.widgets import lab_sidebar, projector_toggle, widget_values

PAGE = "pg"

st.title("Playground")
st.caption(
    "Choose a schedule and the sizes; the exact simulator times every action. Costs are per micro-batch "
    "through one rank's share of the model."
)

link = state.new_link(PAGE, URL_KEYS)
problems: list[str] = []
if link is not None:  # someone opened or edited a link: it wins over what this visitor had
    linked, problems = settings_from_query(link)
    state.seed(widget_values(PAGE, linked))
projector = projector_toggle()
settings = lab_sidebar(PAGE)
state.write_link(PAGE, {**settings.to_query(), **({"projector": "1"} if projector else {})})
for problem in problems:
    st.warning(f"The link's {problem}.")

try:
    settings.check()
    costs = settings.costs()
    schedule, timeline = simulated(settings.schedule, settings.ranks, settings.microbatches, settings.num_chunks, costs)
    state.keep_last_good(PAGE, (settings, costs, schedule, timeline))
except ValueError as error:  # the engine's message carries the arithmetic
    st.error(f"This configuration cannot run: {error}")
    good = state.last_good(PAGE)
    if good is None:
        st.stop()
    settings, costs, schedule, timeline = good
    st.caption(f"Showing the last configuration that worked: {settings.title()}.")

for note in settings.family.size_notes(settings.ranks, settings.microbatches):
    st.info(note)
metric_cards(timeline, projector=projector)
cursor = lecture_controls(PAGE, schedule, timeline, costs.comm, (settings, projector))
st.plotly_chart(
    timeline_figure(timeline, title=settings.title(), projector=projector, cursor_at=cursor),
    width="stretch",
    key="pg_gantt",
)
legend_notes(timeline, costs, schedule.num_chunks)

with st.expander("Why these numbers", expanded=True):
    why_panel(settings.family, schedule, costs, timeline)

st.subheader("Per rank")
rank_table(timeline)
st.caption(
    "'Idle inside span' leaves out the wait before a rank's first action and after its last — the count "
    "the Zero Bubble papers use, since the next step's warm-up can fill it."
)

with st.expander("Schedule as text (rank × step grid, PyTorch CSV)"):
    st.code(schedule.grid(max_rows=200), language=None)
    download = st.columns(2)
    download[0].download_button(
        "Download CSV (PyTorch format)", lambda: schedule.to_csv(), f"{settings.schedule}.csv", "text/csv", key="pg_csv"
    )
    download[1].download_button(
        "Download Perfetto trace",
        lambda: json.dumps(timeline.to_chrome_trace()),
        f"{settings.schedule}.trace.json",
        "application/json",
        key="pg_trace",
    )
