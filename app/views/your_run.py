"""Your run: a real job's per-rank profiler traces (or an example run the lab ships) as the lab's measured
timeline — its Gantt with waits and hand-offs, the bubble, each rank's idle time by cause, the simulator's
prediction from the measured costs, and every family simulated with those costs (``engine.traces``)."""

import hashlib
import json
import tempfile
from pathlib import Path

import streamlit as st

from app import state
from app.charts import timeline_figure
from app.charts.player import player
from app.charts.run_figure import prediction_outlines
from app.codec import plain, shown
from app.controls import projector_query, projector_toggle, read_back, seed_from_link, warn_about
from app.explain import chart_summary, idle_causes
from app.navigation import link_to
from app.search_settings import SearchSettings
from app.widgets import draw
from app.your_run_settings import MAX_UPLOAD_BYTES, MAX_UPLOAD_FILES, YOUR_RUN_KEYS, YourRunSettings
from engine import FAMILIES, simulate
from engine.scale.request import PlanRequest
from engine.traces import ImportedRun, ImportOptions, TraceError, import_traces
from engine.traces.compare import family_table
from engine.traces.examples import PROFILE_CODE, example_files, example_runs
from engine.traces.isolated import PAGE_TIME_LIMIT_S, import_traces_isolated

PAGE = YourRunSettings.PREFIX


def bind():
    link = state.opened_link(PAGE, YOUR_RUN_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    problems, defaults = seed_from_link(YourRunSettings, link)
    uploads = st.sidebar.file_uploader(
        "Your traces: one per rank (.json or .json.gz)",
        type=["json", "gz"],
        accept_multiple_files=True,
        key=f"{PAGE}_uploads",
        help=f"Up to {MAX_UPLOAD_FILES} files, {MAX_UPLOAD_BYTES // 2**20} MiB in all; `python -m engine trace` "
        "reads larger ones.",
    )
    for name, _ in YourRunSettings.options():
        draw(YourRunSettings, name)
    settings, typed = read_back(YourRunSettings, defaults)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems + typed)
    return settings, uploads or [], projector


@st.cache_resource(show_spinner=False, max_entries=8)
def imported_example(name: str, options: ImportOptions) -> ImportedRun:
    return import_traces(example_files(name), options)


@st.cache_resource(show_spinner=False, max_entries=4)
def imported_upload(digest: str, _files: tuple, options: ImportOptions) -> ImportedRun:
    """Uploaded traces, once per content (``digest``): written to a private folder and read in a child process
    with limits (``engine.traces.isolated``); every message names a file by its upload name, never the folder."""
    del digest
    with tempfile.TemporaryDirectory(prefix="pplab-traces-") as folder:
        paths, names = [], []
        for index, (name, data) in enumerate(_files):  # an index keeps two files of one name apart
            path = Path(folder) / f"{index:03d}.trace"
            path.write_bytes(data)
            paths.append(str(path))
            names.append(Path(name).name)
        bar = st.progress(0.0, text="Reading the traces…")

        def progress(file: str, done: int, total: int) -> None:
            megabytes = f"{done / 2**20:,.1f} of {total / 2**20:,.1f} MiB"
            bar.progress(min(done / max(total, 1), 1.0), text=f"Reading {file}: {megabytes}")

        try:
            return import_traces_isolated(
                paths, options, names=names, progress=progress, time_limit_s=PAGE_TIME_LIMIT_S, server=True
            )
        finally:
            bar.empty()


def run_engine(settings: YourRunSettings, uploads) -> ImportedRun:
    """The uploaded traces (bounded), else the example run."""
    options = settings.import_options()
    if not uploads:
        return imported_example(settings.example, options)
    total = sum(upload.size for upload in uploads)
    if len(uploads) > MAX_UPLOAD_FILES or total > MAX_UPLOAD_BYTES:
        raise TraceError(
            f"{len(uploads)} files of {total / 2**20:,.1f} MiB in all; this page reads up to {MAX_UPLOAD_FILES} files "
            f"and {MAX_UPLOAD_BYTES // 2**20} MiB (python -m engine trace reads up to 2 GiB a file)"
        )
    files = tuple((upload.name, upload.getvalue()) for upload in uploads)
    digest = hashlib.sha256(b"".join(name.encode() + hashlib.sha256(data).digest() for name, data in files))
    return imported_upload(digest.hexdigest(), files, options)


def cards(run: ImportedRun) -> None:
    summary = run.timeline.summary()
    values = [
        ("Step (measured)", f"{summary['makespan']:.3g} ms", "from the first action's start to the last one's end"),
        ("Bubble fraction", f"{summary['bubble_fraction']:.1%}", "idle / (ranks × step), the lab's convention"),
        ("Idle, all ranks", f"{sum(summary['idle']):.3g} ms", "split by cause below"),
        ("Hand-off (median)", f"{run.transfer_ms:.3g} ms", "a receive's arrival − its producer's end"),
    ]
    for column, (label, value, words) in zip(st.columns(4), values, strict=True):
        column.metric(label, value, help=words)


def gantt(run: ImportedRun, projector: bool) -> None:
    schedule = run.schedule
    predicted = simulate(schedule, run.costs, check=False)
    title = (f"{len(run.files)} ranks, {schedule.num_microbatches} micro-batches, {schedule.num_chunks} chunk(s) each"
             + (f", ProfilerStep#{run.step}" if run.step is not None else ""))  # fmt: skip
    figure = timeline_figure(
        run.timeline, title=title, time_unit="ms", memory=False, projector=projector,
        extra=[prediction_outlines(predicted)], end=max(run.timeline.makespan, predicted.makespan),
    )  # fmt: skip
    player(f"{PAGE}_gantt", figure, name=title, summary=chart_summary(run.timeline, title))
    st.plotly_chart(figure, width="stretch", key=f"{PAGE}_gantt")
    st.caption(
        f"Bars: what the traces measured (the wait for an input drawn on the rank's communication lane). Outlines: "
        f"the lab's simulator with this run's measured per-stage costs and the median hand-off "
        f"({predicted.makespan:.3g} ms against {run.timeline.makespan:.3g} ms measured): where they part, something "
        "the costs alone do not explain — waiting for the other ranks' transfers, the host, the framework."
    )


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


def your_run() -> None:
    st.title("Your run")
    st.caption(
        "Open the per-rank profiler traces of a real pipeline-parallel job (torch.profiler / Kineto, one file per "
        "rank) and see one step as the lab sees its own runs. No traces yet? An example run of PyTorch's own "
        "schedules, profiled on this machine, stands in."
    )
    settings, uploads, projector = bind()
    with st.expander("How to profile your own job"):
        st.code(PROFILE_CODE, language="python")
        st.caption("Then upload every rank's file here, or run `python -m engine trace rank*.json.gz`.")
    try:
        run = run_engine(settings, uploads)
        state.keep_last_good(PAGE, run)
    except (TraceError, ValueError) as error:
        st.error(f"These traces cannot be read: {plain(error)}")
        run = state.last_good(PAGE)
        if run is None:
            st.stop()
        st.caption("Below: the last traces that were read.")
    source = ", ".join(shown(Path(f).name) for f in run.files) if uploads else example_runs()[settings.example]
    st.markdown(f"**Read:** {source}")
    for note in run.notes:
        st.caption(note)
    if run.order_check is not None and not run.order_checkable:
        st.warning(plain(run.order_check))
    elif run.order_check is not None:
        st.error(f"The order read differs from {settings.expect}:")
        st.code(run.order_check, language=None)
    elif settings.expect != "none":
        st.success(f"The order read equals {settings.expect}'s generator on every rank.")
    cards(run)
    gantt(run, projector)
    with st.expander("Where the idle time comes from", expanded=True):
        idle_causes(run.idle_attribution(), key=f"{PAGE}_causes", time_unit="ms", projector=projector)
    with st.expander("What another schedule would give, with these measured costs", expanded=True):
        families(run)
    st.download_button(
        "Download the timeline (Perfetto)", lambda: json.dumps(run.timeline.to_chrome_trace()),
        "your-run.trace.json", "application/json", key=f"{PAGE}_trace",
    )  # fmt: skip


your_run()
