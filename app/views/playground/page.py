"""Playground: pick a schedule and the sizes, play the simulated timeline, see its bubble and memory and why."""

import html
import json
from dataclasses import replace

import streamlit as st

from app.charts import timeline_figure
from app.charts.player import player
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.engine_calls import idle_attribution, playground_gantt, simulated
from app.frame.lab_settings import LAB_KEYS, LabSettings
from app.frame.projector import PROJECTOR, projector_query, projector_toggle
from app.frame.safe_text import plain
from app.frame.sidebar import bind_lab, page_heading, warn_about
from app.frame.timeline_panels import (
    chart_summary,
    idle_causes,
    legend_notes,
    metric_cards,
    rank_table,
    shared_links_effect,
    why_panel,
)
from app.lecture.controls import chart_with_lecture, lecture_controls
from app.views.navigation import link_to
from app.views.playground.generator_code import show_generator_code
from app.views.search.settings import SearchSettings
from engine import Costs, Schedule, Timeline
from engine.chrome_trace import chrome_trace
from engine.costs import PER_STAGE_SEPARATOR

PAGE = "pg"
WELCOME_DISMISSED = f"{PAGE}_welcome_dismissed"


def dismiss_welcome() -> None:
    st.session_state[WELCOME_DISMISSED] = True


def welcome() -> None:
    """A first visit opens here, on the simulator: point to Lesson 1, until the visitor dismisses the line
    (remembered for the session); not on a projector, where a teacher shows the chart."""
    if st.session_state.get(WELCOME_DISMISSED) or st.session_state.get(PROJECTOR):
        return
    with st.container(border=True, key=f"{PAGE}_welcome"):
        text, go, dismiss = st.columns([5, 2, 1], vertical_alignment="center")
        text.markdown("**New here?** Start with Lesson 1: one batch, four GPUs, and why three of them wait.")
        with go:
            link_to("ls", {"lesson": "1", "step": "1"}, "Start with Lesson 1", icon=":material/school:")
        dismiss.button("Dismiss", key=f"{PAGE}_welcome_dismiss", on_click=dismiss_welcome, help="Hide this line")


def bind() -> tuple[LabSettings, bool]:
    """The address bar (when the visitor opened a link) and the sidebar → one settings object."""
    link = state.opened_link(PAGE, LAB_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    settings, problems = bind_lab(PAGE, link)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems)
    return settings, projector


def run_engine(settings: LabSettings) -> tuple[LabSettings, Costs, Schedule, Timeline]:
    """The simulation, or the last configuration that worked (with the engine's message, which carries the
    arithmetic)."""
    try:
        settings.check()
        schedule, timeline = simulated(settings)
        state.keep_last_good(PAGE, (settings, schedule, timeline))
    except ValueError as error:
        st.error(f"This configuration cannot run: {plain(error)}")
        good = state.last_good(PAGE)
        if good is None:
            st.stop()
        settings, schedule, timeline = good
        st.caption(f"Showing the last configuration that worked: {settings.title()}.")
    return settings, settings.costs(), schedule, timeline


def render_step(settings: LabSettings, costs: Costs, schedule: Schedule, timeline: Timeline, projector: bool) -> None:
    """The cards, the chart (with the lecture's cursor and the generator's code), and what changes the step."""
    for note in settings.family_spec.size_notes(settings.num_ranks, settings.num_microbatches):
        st.info(note)

    def lecture(narrow: bool):
        return lecture_controls(
            PAGE, schedule, timeline, costs.comm, (settings, projector), chart_key="pg_gantt", narrow=narrow
        )

    def chart(lectured) -> None:
        if lectured is None:  # the usual view: built once per server (a lecture's cursor moves every step)
            figure, as_json = playground_gantt(settings, projector)
        else:
            figure = timeline_figure(timeline, title=settings.title(), projector=projector, cursor_at=lectured.time)
            as_json = None
        player("pg_gantt", figure, name=settings.title(), summary=chart_summary(timeline, settings.title()))
        live_chart(figure, key="pg_gantt", as_json=as_json)  # redrawn in place on a change (charts/live_chart.py)

    @st.fragment
    def lectured_step() -> None:
        """A partial rerun: a lecture step (its switch, its buttons) redraws this block only, not the page."""
        chart_with_lecture(
            lecture,
            chart,
            lambda stacked=False: metric_cards(timeline, stacked=stacked),
            stage=PAGE,
            projector=projector,
        )

    lectured_step()
    show_generator_code(settings.family_spec, key=f"{PAGE}_show_code")
    legend_notes(timeline, costs, schedule, key=PAGE)
    if costs.shared_links and costs.comm > 0:  # where occupying the links changes the step, against pure delays
        _, delayed = simulated(replace(settings, shared_links=False))
        st.caption(shared_links_effect(timeline, delayed))
    if schedule.num_chunks == 1 or schedule.placement == "v":
        per_share = settings.costs_text(split=True, overlapped=False)
        search = SearchSettings(
            num_ranks=settings.num_ranks,
            num_microbatches=settings.num_microbatches,
            placement=schedule.placement,
            chunks="auto" if PER_STAGE_SEPARATOR not in per_share else str(schedule.num_chunks),  # per stage: one
            costs=per_share,
            comm=settings.comm,
            memory_budget=float(settings.num_ranks),
        )
        link_to("sr", search.to_query(), "Find a better schedule for these costs ↗", icon=":material/manage_search:")


def render_explanations(settings: LabSettings, costs: Costs, schedule: Schedule, timeline: Timeline, projector: bool):
    """Why the numbers are what they are, where the idle time comes from, per rank, and the schedule as text."""
    with st.expander("Why these numbers", expanded=True):
        why_panel(settings.family_spec, schedule, costs, timeline)
    # the two closed expanders are filled only once opened (a click reruns the page): filled while closed, every
    # change of setting mounted a chart and a grid nobody saw, about 35 ms of the browser's time
    causes = st.expander("Where the idle time comes from", key=f"{PAGE}_causes_open", on_change="rerun")
    if causes.open:
        with causes:
            split = idle_attribution(schedule, costs, timeline, key=settings)
            idle_causes(split, key="pg_causes", time_unit="time units", projector=projector)
    st.subheader("Per rank")
    rank_table(timeline)
    st.caption(
        "'Idle inside span' leaves out the wait before a rank's first action and after its last — the count "
        "the Zero Bubble papers use, since the next step's warm-up can fill it."
    )
    as_text = st.expander(
        "Schedule as text (rank × step grid, PyTorch CSV)", key=f"{PAGE}_text_open", on_change="rerun"
    )
    if not as_text.open:
        return
    with as_text:
        # preformatted, not st.code: the syntax highlighter's 1.5 MB of script would load with the page
        st.html(f'<pre class="pplab-grid">{html.escape(schedule.grid(max_rows=200))}</pre>')
        download = st.columns(2)
        download[0].download_button(
            "Download CSV (PyTorch format)", schedule.to_csv, f"{settings.family}.csv", "text/csv", key="pg_csv"
        )
        download[1].download_button(
            "Download Perfetto trace",
            lambda: json.dumps(chrome_trace(timeline)),
            f"{settings.family}.trace.json",
            "application/json",
            key="pg_trace",
        )


def playground() -> None:
    """bind → engine → render."""
    header = st.container()  # filled once the settings are bound: projector mode leaves out the welcome
    settings, projector = bind()
    with header:
        page_heading(
            "Playground",
            "Choose a schedule and the sizes; the exact simulator times every action. Costs are per micro-batch "
            "through one rank's share of the model.",
        )
        welcome()
    settings, costs, schedule, timeline = run_engine(settings)
    render_step(settings, costs, schedule, timeline, projector)
    render_explanations(settings, costs, schedule, timeline, projector)


playground()
