"""Your run: a real job's per-rank profiler traces (or an example run the lab ships) as the lab's measured
timeline — its Gantt with waits and hand-offs, the bubble, each rank's idle time by cause, the simulator's
prediction from the measured costs, and every family simulated with those costs (``engine.traces``); one rank's
overlapped chunks (DeepSeek's profile of DualPipe) as what they are (``app.views.your_run.chunks``)."""

import json
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.charts import timeline_figure
from app.charts.lanes import ARROWS
from app.charts.player import player
from app.charts.run_figure import prediction_outlines
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.cards import card_places
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain, shown
from app.frame.sidebar import page_heading, read_back, seed_from_link, warn_about
from app.frame.timeline_panels import chart_summary, idle_causes
from app.frame.widgets import draw
from app.server.admission import READING, SEARCHES, Refused, give_memory_back
from app.server.uploads import MAX_UPLOAD_FILES, StoredUpload, check_limits, max_upload_bytes
from app.views.navigation import link_to
from app.views.search.settings import SearchSettings
from app.views.your_run.chunks import show_chunks
from app.views.your_run.settings import YOUR_RUN_KEYS, YourRunSettings
from engine import FAMILIES, simulate
from engine.chrome_trace import chrome_trace
from engine.scale.request import PlanRequest
from engine.traces import ImportedRun, ImportOptions, TraceError, import_traces
from engine.traces.chunks import OverlappedChunks
from engine.traces.compare import family_table
from engine.traces.examples import PROFILE_CODE, example_files, example_runs
from engine.traces.isolated import PAGE_TIME_LIMIT_S, read_traces_isolated

PAGE = YourRunSettings.PREFIX


STORED = f"{PAGE}_stored"  # the session's uploaded traces on disk (app.server.uploads.StoredUpload), or absent
ROUND = f"{PAGE}_upload_round"  # part of the uploader's key: a new round empties the uploader


def bind():
    link = state.opened_link(PAGE, YOUR_RUN_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    problems, defaults = seed_from_link(YourRunSettings, link)
    uploads = st.sidebar.file_uploader(
        "Your traces: one per rank (.json or .json.gz)",
        type=["json", "gz"],
        accept_multiple_files=True,
        key=f"{PAGE}_uploads_{st.session_state.get(ROUND, 0)}",
        help=f"Up to {MAX_UPLOAD_FILES} files, {max_upload_bytes() // 2**20} MiB in all; `python -m engine trace` "
        "reads larger ones.",
    )
    if uploads:
        store(uploads)
    stored = st.session_state.get(STORED)
    if stored is not None and st.sidebar.button(
        f"Forget the {len(stored.names)} uploaded file(s)", key=f"{PAGE}_forget", icon=":material/delete:"
    ):
        stored.remove()
        del st.session_state[STORED]
        stored = None
    for name, _ in YourRunSettings.options():
        draw(YourRunSettings, name)
    settings, typed = read_back(YourRunSettings, defaults)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems + typed)
    return settings, stored, projector


def store(uploads) -> None:
    """The uploaded files to the session's own folder (the previous ones deleted), and the uploader emptied,
    so the server's memory does not keep them (``app.server.uploads``), whether they were stored or refused;
    then the page runs again to read them, or to say why not."""
    st.session_state[ROUND] = st.session_state.get(ROUND, 0) + 1
    try:
        check_limits(len(uploads), sum(upload.size for upload in uploads))
        stored = StoredUpload([(upload.name, upload) for upload in uploads])
    except TraceError as error:  # refused: the files leave the server's memory all the same
        st.session_state[f"{PAGE}_refused"] = str(error)
    else:
        previous = st.session_state.get(STORED)
        if previous is not None:
            previous.remove()
        st.session_state[STORED] = stored
    finally:
        release(uploads)
        give_memory_back()
    st.rerun()


def release(uploads) -> None:
    """Drop the uploads from Streamlit's store of uploaded files, which keeps them in the server's memory until
    the browser deletes them or the session ends (its widget's new key alone does not)."""
    context = get_script_run_ctx()
    remove = getattr(context.uploaded_file_mgr, "remove_file", None) if context is not None else None
    if context is None or remove is None:  # not under a server, or a store that cannot drop one file
        return
    for upload in uploads:
        remove(context.session_id, upload.file_id)


@st.cache_resource(show_spinner=False, max_entries=8)
def imported_example(name: str, options: ImportOptions) -> ImportedRun:
    return import_traces(example_files(name), options)


@st.cache_resource(show_spinner=False, max_entries=4)
def imported_upload(
    digest: str, _paths: tuple, _names: tuple, options: ImportOptions
) -> ImportedRun | OverlappedChunks:
    """Uploaded traces, once per content and names (``digest``), read in a child process with limits
    (``engine.traces.isolated``); every message names a file by its upload name, never the server's folder. One
    file of one rank's overlapped chunks comes back as such (``engine.traces.chunks``)."""
    del digest
    bar = st.progress(0.0, text="Reading the traces…")

    def progress(file: str, done: int, total: int) -> None:
        megabytes = f"{done / 2**20:,.1f} of {total / 2**20:,.1f} MiB"
        bar.progress(min(done / max(total, 1), 1.0), text=f"Reading {file}: {megabytes}")

    def waiting(text: str) -> None:
        bar.progress(0.0, text=text)

    try:  # in the searches' queue, behind them: a reading takes the cores as a search does
        with SEARCHES.admitted(f"reading {len(_paths)} trace(s)", tell=waiting, priority=READING, kind="reading"):
            return read_traces_isolated(
                _paths, options, names=_names, progress=progress, time_limit_s=PAGE_TIME_LIMIT_S, server=True
            )
    except Refused as refused:
        raise TraceError(f"this server is busy: {refused}") from None
    finally:
        bar.empty()


def run_engine(settings: YourRunSettings, stored: StoredUpload | None) -> ImportedRun | OverlappedChunks:
    """The uploaded traces, else the example run."""
    options = settings.import_options()
    refused = st.session_state.pop(f"{PAGE}_refused", None)
    if refused is not None:
        raise TraceError(refused)
    if stored is None:
        return imported_example(settings.example, options)
    return imported_upload(stored.digest, stored.paths, stored.names, options)


def cards(run: ImportedRun, predicted, *, stacked: bool = False) -> None:
    """Measured and predicted step side by side (as on Real run), then the bubble, the idle time and the hand-off:
    the predicted card and the chart's outlines are one simulation (``predicted``)."""
    summary = run.timeline.summary()
    values = [
        ("Step (measured)", f"{summary['makespan']:.3g} ms", "from the first action's start to the last one's end"),
        ("Step (predicted)", f"{predicted.makespan:.3g} ms", "the simulator with this run's measured per-stage costs "
         "and the median hand-off (the chart's outlines)"),
        ("Bubble fraction", f"{summary['bubble_fraction']:.1%}", "idle / (ranks × step), the lab's convention"),
        ("Idle, all ranks", f"{sum(summary['idle']):.3g} ms", "split by cause below"),
        ("Hand-off (median)", f"{run.transfer_ms:.3g} ms", "a receive's arrival − its producer's end"),
    ]  # fmt: skip
    places = card_places(len(values), stacked=stacked)
    for place, (label, value, words) in zip(places, values, strict=True):
        place.metric(label, value, help=words)


def gantt(run: ImportedRun, predicted, projector: bool) -> None:
    schedule = run.schedule
    title = (f"{len(run.files)} ranks, {schedule.num_microbatches} micro-batches, {schedule.num_chunks} chunk(s) each"
             + (f", ProfilerStep#{run.step}" if run.step is not None else ""))  # fmt: skip
    left, right = st.columns(2)
    outlines = left.toggle(
        "Show the prediction's outlines", value=False, key=f"{PAGE}_outlines",
        help="The simulator's timeline with this run's measured costs, drawn as outlines over the measured bars",
    )  # fmt: skip
    arrows = right.toggle(
        "Show the hand-off arrows", value=True, key=f"{PAGE}_arrows",
        help="An arrow from each producer's send to its consumer's receive; the send and receive bars stay",
    )  # fmt: skip
    figure = timeline_figure(
        run.timeline, title=title, time_unit="ms", memory=False, projector=projector,
        extra=[prediction_outlines(predicted)] if outlines else None,
        end=max(run.timeline.makespan, predicted.makespan) if outlines else run.timeline.makespan,
    )  # fmt: skip
    if not arrows:
        figure.data = tuple(trace for trace in figure.data if trace.meta != ARROWS)
    zoom(figure, run)
    player(f"{PAGE}_gantt", figure, name=title, summary=chart_summary(run.timeline, title, memory=False))
    live_chart(figure, key=f"{PAGE}_gantt")  # redrawn in place on a change (charts/live_chart.py)
    st.caption(
        f"Bars: what the traces measured (the wait for an input drawn on the rank's communication lane). The "
        f"prediction ({predicted.makespan:.3g} ms against {run.timeline.makespan:.3g} ms measured) is the lab's "
        "simulator with this run's measured per-stage costs and the median hand-off; where the two part, something "
        "the costs alone do not explain — waiting for the other ranks' transfers, the host, the framework."
    )


def zoom(figure, run: ImportedRun) -> None:
    """A time window and one rank, chosen below the toggles, set the chart's axes: bars wide enough for their
    labels show them (Plotly hides a label only where it does not fit)."""
    step = float(run.timeline.makespan)
    which = f"{PAGE}_{len(run.files)}_{run.step}_{step:.6g}"  # a new run: fresh controls, never a stale window
    left, right = st.columns([3, 1])
    window = left.slider(
        "Time window, ms", 0.0, step, (0.0, step), step=step / 200 if step > 0 else 1.0, key=f"{which}_window",
        help="Zoom into part of the step: the bars widen and show their labels",
    )  # fmt: skip
    ranks = ["all ranks", *(f"rank {rank}" for rank in range(run.schedule.num_ranks))]
    focus = right.selectbox("Ranks", ranks, key=f"{which}_rank", help="One rank's row across the whole chart")
    if window != (0.0, step):
        figure.update_layout(xaxis=dict(range=list(window), autorange=False))
    if focus != ranks[0]:
        rank = ranks.index(focus) - 1
        figure.update_layout(yaxis=dict(range=[rank + 0.55, rank - 0.55], autorange=False))


def families(run: ImportedRun) -> None:
    own, rows = family_table(run)
    st.caption(
        f"Every family simulated with this run's measured costs (one rank's share; I = W = B/2 where the run did not "
        f"split the backward), compared with this schedule simulated the same way ({own:.3g} ms)."
    )
    st.table(
        [
            {
                "schedule": row.title,
                "step (ms)": "—" if row.step_ms is None else f"{row.step_ms:.3g}",
                "vs this schedule": "—" if row.step_change is None else f"{row.step_change:+.0%}",
                "peak memory": "—" if row.peak_memory_ratio is None else f"×{row.peak_memory_ratio:.2f}",
                "note": row.note,
            }
            for row in rows
        ]
    )
    schedule = run.schedule
    if schedule.num_chunks == 1 or schedule.placement == "v":
        search = SearchSettings.from_measured(
            schedule.num_ranks, schedule.num_microbatches, schedule.placement, run.stage_costs
        )
        link_to(
            "sr", search.to_query(), "Search a schedule with these measured costs ↗", icon=":material/manage_search:"
        )
    if schedule.name in FAMILIES:
        request = PlanRequest.from_measured_run(
            schedule.name, schedule.num_ranks, schedule.num_microbatches, schedule.num_chunks, run.stage_costs
        )
        link_to(
            "pl",
            request.to_query(),
            "Check the planner's roofline against these measured costs ↗",
            icon=":material/dns:",
        )


def how_to_profile() -> None:
    with st.expander("How to profile your own job"):
        st.code(PROFILE_CODE, language="python")
        st.caption("Then upload every rank's file here, or run `python -m engine trace rank*.json.gz`.")


def source_of(run: ImportedRun | OverlappedChunks, settings, stored) -> str:
    """What was read, said when it was read (kept with the run): the uploaded files' names, or the example's."""
    if stored is None:
        return f"{example_runs()[settings.example]} (the example run)"
    files = [run.file] if isinstance(run, OverlappedChunks) else run.files
    return ", ".join(shown(Path(f).name) for f in files)


def what_was_read(run: ImportedRun, settings, source: str) -> None:
    """The files (or the example), which step, the reader's notes, and whether the order read is the expected one."""
    st.markdown(f"**Read:** {source}")
    st.caption(run.describe_steps())
    for note in run.notes:
        st.caption(note)
    if run.order_check is not None and not run.order_checkable:
        st.warning(plain(run.order_check))
    elif run.order_check is not None:
        st.error(f"The order read differs from {settings.expect}:")
        st.code(run.order_check, language=None)
    elif settings.expect != "none":
        st.success(f"The order read equals {settings.expect}'s generator on every rank.")


def your_run() -> None:
    page_heading(
        "Your run",
        "Open the per-rank profiler traces of a real pipeline-parallel job (torch.profiler / Kineto, one file per "
        "rank) and see one step as the lab sees its own runs. No traces yet? An example run of PyTorch's own "
        "schedules, profiled on this machine, stands in.",
    )
    settings, stored, projector = bind()
    if not projector:  # a projector shows the step first; how to profile comes after it
        how_to_profile()
    try:
        run = run_engine(settings, stored)
        source = source_of(run, settings, stored)
        state.keep_last_good(PAGE, (run, source))
    except (TraceError, ValueError) as error:
        st.error(f"These traces cannot be read: {plain(error)}")
        good = state.last_good(PAGE)
        if good is None:
            st.stop()
        run, source = good  # named as it was read: the example is never shown under the refused files' names
        st.caption(f"Below: the last traces that were read — {source} — not the ones refused above.")
    if isinstance(run, OverlappedChunks):  # one rank, no pipeline: its overlap, not a Gantt or a bubble
        show_chunks(run, projector)
        if projector:
            how_to_profile()
        return
    predicted = simulate(run.schedule, run.costs, check=False)  # one simulation: the card and the outlines
    if projector:  # the chart first, what was read and the cards beside it
        chart_area, side = st.columns([5, 2], gap="medium")
    else:  # on a phone the chart comes first (style.PAGE_CSS)
        stage = st.container(key="stage_yr")
        side, chart_area = stage.container(), stage.container(key="phone_first_yr")
    with side:
        what_was_read(run, settings, source)
        cards(run, predicted, stacked=projector)
    with chart_area:
        gantt(run, predicted, projector)
    if projector:
        how_to_profile()
    with st.expander("Where the idle time comes from", expanded=True):
        idle_causes(run.idle_attribution(), key=f"{PAGE}_causes", time_unit="ms", projector=projector)
    with st.expander("What another schedule would give, with these measured costs", expanded=True):
        families(run)
    st.download_button(
        "Download the timeline (Perfetto)", lambda: json.dumps(chrome_trace(run.timeline)),
        "your-run.trace.json", "application/json", key=f"{PAGE}_trace",
    )  # fmt: skip


your_run()
