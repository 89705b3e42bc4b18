"""Schedule editor: paste, upload or start from a family; edit; validate; simulate; download; run for real."""

import json

import streamlit as st

from app.charts import timeline_figure
from app.charts.player import player
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.engine_calls import simulated_csv
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain, shown
from app.frame.sidebar import LabInputs, bind_lab, page_heading
from app.frame.timeline_panels import chart_summary, legend_notes, metric_cards, rank_table
from app.views.real_run.settings import RealRunSettings
from engine import ScheduleError, build_schedule
from engine.chrome_trace import chrome_trace

PAGE = "ed"
TEXT = f"{PAGE}_csv"
# the most the editor takes, pasted or uploaded (a 32-rank × 256-micro-batch ZB schedule is ~130 KiB)
EDITOR_MAX_BYTES = 256 * 1024
REAL_RUN = "views/real_run/page.py"


def load_family(start) -> None:
    """The sidebar's "Load it into the editor": the chosen family's CSV replaces the text."""
    try:
        start.check()
        schedule = build_schedule(start.family, start.num_ranks, start.num_microbatches, start.requested_chunks)
        state.seed({TEXT: schedule.to_csv()})
    except ValueError as error:
        st.sidebar.error(str(error))


def read_upload(upload) -> None:
    """An uploaded CSV replaces the text once (a rerun keeps the visitor's edits)."""
    if upload is None or st.session_state.get(f"{PAGE}_uploaded") == upload.file_id:
        return
    st.session_state[f"{PAGE}_uploaded"] = upload.file_id
    data = upload.getvalue()
    if len(data) > EDITOR_MAX_BYTES:
        st.error(f"{shown(upload.name)} has {len(data):,} bytes; the editor takes up to {EDITOR_MAX_BYTES:,}.")
        return
    try:
        state.seed({TEXT: data.decode("utf-8-sig")})
    except UnicodeDecodeError as error:
        st.error(f"{shown(upload.name)} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}).")


def bind_start():
    """The sidebar: the projector switch, the family to start from (its costs are the simulation's), the load
    button and the upload. Returns (projector, the sidebar's family and costs)."""
    link = state.opened_link(PAGE, (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    st.sidebar.markdown("**Start from a family**")
    start, problems = bind_lab(PAGE, None, inputs=LabInputs(split_costs=True, overlapped=True))
    state.write_url(PAGE, projector_query(projector))
    for problem in problems:
        st.sidebar.warning(problem)
    if st.sidebar.button("Load it into the editor", key=f"{PAGE}_load", type="primary"):
        load_family(start)
    read_upload(
        st.sidebar.file_uploader(
            f"…or upload a CSV (the editor reads up to {EDITOR_MAX_BYTES // 1024} KiB)",
            type=["csv", "txt"],
            key=f"{PAGE}_upload",
        )
    )
    return projector, start


def schedule_text() -> str:
    """The text box, kept across pages (1F1B on 4 ranks × 8 micro-batches until the visitor writes another)."""
    state.restore({TEXT: build_schedule("1f1b", 4, 8).to_csv()})
    text = st.text_area("Schedule (PyTorch CSV)", key=TEXT, height=220, max_chars=EDITOR_MAX_BYTES)
    state.remember([TEXT])
    return text


def simulate_text(text: str, costs):
    """The text read, validated and simulated, or why it cannot be — then the last version that ran, for
    reference (the page stops when none has). Returns (reading, timeline, whether the text itself is valid)."""
    try:
        reading, timeline = simulated_csv(text, costs)
        state.keep_last_good(PAGE, (reading, timeline))
    except ScheduleError as error:
        problem, _, grid = str(error).partition("\n")
        st.error(f"This schedule cannot run: {plain(problem)}")
        st.code(grid, language=None)
        reading = None
    except ValueError as error:
        st.error(f"This schedule cannot be read: {plain(error)}")
        reading = None
    if reading is not None:
        st.success(f"Valid: {plain(reading.describe())}. Simulated with the sidebar's costs (B = I + W).")
        return reading, timeline, True
    good = state.last_good(PAGE)
    if good is None:
        st.stop()
    reading, timeline = good
    st.caption(f"Below, for reference: the last version that ran ({plain(reading.describe())}).")
    return reading, timeline, False


def show_timeline(schedule, timeline, costs, projector: bool, *, cards: bool = True) -> None:
    """The cards (unless drawn elsewhere), the played Gantt, its legend notes and the per-rank table."""
    with st.container(key="stage_ed_chart"):  # a phone: the chart, then the cards (style.PAGE_CSS)
        if cards:
            metric_cards(timeline)
        title = f"Edited schedule: {schedule.num_ranks} ranks, {schedule.num_microbatches} micro-batches"
        figure = timeline_figure(timeline, title=title, projector=projector)
        player("ed_gantt", figure, name=title, summary=chart_summary(timeline, title))
        live_chart(figure, key="ed_gantt")  # redrawn in place on a change (charts/live_chart.py)
    legend_notes(timeline, costs, schedule, key="ed_gantt")
    rank_table(timeline)


def downloads_and_run(schedule, timeline, valid: bool) -> None:
    """Download the CSV or the Perfetto trace, or send the schedule to the Real run page (only a valid text)."""
    if not valid:
        st.caption("Download and Run act on the schedule in the text box, which does not run: fix it first.")
    columns = st.columns(3)
    columns[0].download_button(
        "Download CSV", schedule.to_csv, "schedule.csv", "text/csv", key="ed_csv_out", disabled=not valid
    )
    columns[1].download_button(
        "Download Perfetto trace",
        lambda: json.dumps(chrome_trace(timeline)),
        "schedule.trace.json",
        "application/json",
        key="ed_trace",
        disabled=not valid,
    )
    if columns[2].button(
        "Run it for real ⚙️",
        key=f"{PAGE}_run",
        help="Open the Real run page with this schedule.",
        disabled=not valid,
    ):
        RealRunSettings.send_schedule(st.session_state, schedule.to_csv())
        st.switch_page(REAL_RUN, query_params=state.page_query("rr", RealRunSettings().to_query()))


def editor() -> None:
    page_heading(
        "Schedule editor",
        "A schedule in PyTorch's CSV format: one line per rank, actions such as 0F0, 1B3, 2I5, 2W5 or "
        "(0F7;7B3)OVERLAP_F_B, run left to right. Lowered files with SEND/RECV actions are read too.",
    )
    projector, start = bind_start()
    if projector:  # the chart first, the text that makes it and the cards beside it
        chart_area, side = st.columns([5, 2], gap="medium")
    else:  # on a phone the chart comes first, the text that makes it after (style.PAGE_CSS)
        stage = st.container(key="stage_ed")
        side, chart_area = stage.container(), stage.container(key="phone_first_ed")
    with side:
        text = schedule_text()
        costs = start.split_costs()
        reading, timeline, valid = simulate_text(text, costs)
        if projector:
            metric_cards(timeline, stacked=True)
    with chart_area:
        show_timeline(reading.schedule, timeline, costs, projector, cards=not projector)
    downloads_and_run(reading.schedule, timeline, valid)


editor()
