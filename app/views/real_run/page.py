"""Real run: execute a schedule on a toy model, and put the measurement next to the simulator's prediction.

Nothing here imports PyTorch: the run happens in a child process (``app/server/real_run_jobs.py``), and this machine's
GPUs are counted without it (``engine.runtime.host``)."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from app.charts import memory_unit, run_figure, timeline_figure
from app.charts.player import player
from app.charts.run_figure import CROWDED_ACTIONS
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.limits import REAL_RUN_MAX_RANKS
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain
from app.frame.sidebar import page_heading, warn_about
from app.frame.timeline_panels import chart_summary, idle_causes, per_rank_frame
from app.server.real_run_jobs import memory_check, run_one
from app.views.navigation import link_to
from app.views.real_run.settings import ESTIMATOR_TITLES, RUN_KEYS, RealRunSettings
from app.views.real_run.sidebar import bind_real_run
from app.views.search.settings import SearchSettings
from engine import FAMILIES, Costs, simulate
from engine.ir import Kind
from engine.runtime import GRADIENT_TOLERANCE
from engine.runtime.budget import available_bytes, human_bytes
from engine.runtime.host import cpu_count, visible_gpus
from engine.runtime.result import measured_stage_costs
from engine.scale.request import PlanRequest

PAGE = "rr"
RESULT, RUNS = f"{PAGE}_result", f"{PAGE}_runs"


def bind():
    """The address bar (when the visitor opened a link), the editor's hand-off and the sidebar → the run."""
    link = state.opened_link(PAGE, RUN_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    edited = RealRunSettings.received_schedule(st.session_state) is not None
    if edited:
        st.sidebar.info("Running the schedule sent from the editor.")
        if st.sidebar.button("Use a schedule family instead", key=f"{PAGE}_forget_edited"):
            RealRunSettings.forget_schedule(st.session_state)
            st.rerun()
    settings, problems = bind_real_run(link, edited=edited)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems)
    return settings, projector


def run_now(config, kept):
    """Run ``config`` with a progress bar; return (config, result) or ``kept`` when it fails."""
    bar = st.progress(0.0, text="Starting the run (a fresh process imports PyTorch: a few seconds)…")
    waiting = st.empty()

    def progress(done: int, total: int, note: str) -> None:
        waiting.empty()
        bar.progress(min(done / max(total, 1), 1.0), text=f"{done:,} / {total:,} actions · {note}")

    try:
        kept = (config, run_one(config, progress=progress, waiting=waiting.info))
        st.session_state[RESULT] = kept
        st.session_state[RUNS] = st.session_state.get(RUNS, 0) + 1
    except (ValueError, RuntimeError, TimeoutError) as error:
        st.error(f"The run failed: {plain(error)}")
    bar.empty()
    waiting.empty()
    return kept


def stage_cost_table(result) -> pd.DataFrame:
    """Each stage's measured ms of F, B, I, W (the kinds the schedule runs) under the run's estimator — the
    costs the prediction is built from — then the median over the repeats, and the transfer per hop."""
    frame = result.measured.frame
    ran = [kind for kind in Kind if kind.name in set(frame["kind"])]
    used = ESTIMATOR_TITLES.get(result.estimator, result.estimator)
    columns = {f"{kind.name} (ms, {used})": kind for kind in ran}
    costs = measured_stage_costs(result.schedule, frame["compute_ms"].to_numpy())
    table = pd.DataFrame(
        {"stage": [f"stage {stage} (rank {result.schedule.rank_of(stage)})" for stage in range(len(costs))]}
        | {label: [round(row[kind.name], 3) for row in costs] for label, kind in columns.items()}
    ).set_index("stage")
    if result.estimator != "median" and "duration_median" in frame:
        medians = measured_stage_costs(result.schedule, frame["duration_median"].to_numpy())
        for kind in ran:
            table[f"{kind.name} (ms, median repeat)"] = [round(row[kind.name], 3) for row in medians]
    table["transfer to the next rank (ms)"] = round(result.transfer_ms, 4)
    return table


def show_result(ran, result, config, projector: bool) -> None:
    """A run's notes, cards and gradient check; what it measured per stage; why its step is longer than the
    textbook's; its chart against the prediction; each rank's end and memory against the model."""
    if ran != config:
        st.caption("Below: your last run. The sidebar has changed since — press Run to measure the new configuration.")
    summary = result.summary()
    run_notes(summary)
    result_cards(summary, config)
    agreement_note(summary, config)
    gradient_check(summary)
    st.markdown("**Measured cost of each action, per stage** (the prediction is built from these)")
    st.table(stage_cost_table(result))
    search_with_measured_costs(result)
    st.subheader("Why the measured step is longer than the textbook's")
    idle_causes(result.idle_attribution(), key=f"{PAGE}_causes", time_unit="ms", projector=projector)
    measured_chart(result, projector)
    st.dataframe(per_rank_table(result, summary), hide_index=True)
    memory_model_note(result, summary)


def run_notes(summary: dict) -> None:
    """The run's warnings and notes; the interference sentence in the page's words."""
    interference = summary["interference"]
    for note in summary["notes"]:
        if interference and note == interference["sentence"]:
            continue  # said below, in the page's words
        (st.warning if note.startswith("warning") else st.caption)(note)
    if interference:
        sentence = interference["sentence"].replace("raise --repeats", "raise Measured steps")
        (st.warning if interference["busy"] else st.caption)(sentence)


def result_cards(summary: dict, config) -> None:
    """Measured and predicted makespan, the bubble fraction and the gradient check, as four cards."""
    low, high = summary["makespan_spread"]
    used = ESTIMATOR_TITLES.get(summary["estimator"], summary["estimator"])
    cards = st.columns(4)
    cards[0].metric(
        "Makespan, measured",
        f"{summary['makespan']:.2f} ms",
        help=(
            f"the step of median length among {summary['repeats']} measured, wall clock"
            if config.backend == "distributed"
            else f"each action's {used} of {summary['repeats']} measured step(s), placed on the devices' clocks"
        )
        + f"; the whole steps took {low:.2f}–{high:.2f} ms",
    )
    error = summary["prediction_error"]
    cards[1].metric(
        "Makespan, predicted",
        f"{summary['predicted_makespan']:.2f} ms",
        f"{error:+.1%} ({'over' if error > 0 else 'under'} the measurement)",
        delta_color="off",
        delta_arrow="up" if error > 0 else "down" if error < 0 else "off",
        help="the simulator, fed the per-stage costs this run measured",
    )
    cards[2].metric(
        "Bubble fraction",
        f"{summary['bubble_fraction']:.1%}",
        f"predicted {summary['predicted_bubble_fraction']:.1%}",
        delta_color="off",
        delta_arrow="off",
    )
    matches = summary["gradients_match"]
    cards[3].metric(
        "Gradient check",
        f"{summary['max_grad_error']:.1e}",
        f"matches (< {GRADIENT_TOLERANCE:g})" if matches else f"differs (≥ {GRADIENT_TOLERANCE:g})",
        delta_color="normal" if matches else "inverse",
        delta_arrow="off",
    )


def agreement_note(summary: dict, config) -> None:
    """What the measured-against-predicted agreement shows on this backend, and why ranks differ from the step."""
    errors = summary["prediction_error_per_rank"]
    spread = f"{min(errors):+.1%} to {max(errors):+.1%}" if errors else "—"
    if config.backend == "distributed":
        what = (
            "Measured here is wall-clock time on real processes, so the agreement tests the simulator's rules (each "
            "action at max(rank free, inputs arrived), one transfer time) against real waits, transfers and the "
            "framework's own overhead."
        )
    else:
        what = (
            "On the emulated backend the measured step is each action's measured duration placed on virtual device "
            "clocks by the same dependency rules the simulator uses, and the prediction reuses one cost per stage "
            "from those same measurements: the agreement shows that one cost per stage describes every micro-batch's "
            "action, not that the rules match a real machine (the distributed backend tests that)."
        )
    whole = summary["prediction_error"]
    st.caption(
        f"{what} Each rank's own end is off by {spread}: a rank ends with its own stages' actions, whose spread "
        f"around their stage's cost is not averaged away as it is over the whole step ({whole:+.1%})."
    )


def gradient_check(summary: dict) -> None:
    """Why the pipelined gradients must equal the unsplit model's, and how close they are."""
    st.markdown(
        f"**Gradient check**: every weight's gradient after the pipelined step is compared with the gradient "
        f"of the whole, unsplit model on the whole batch; they must match, because each micro-batch's loss is "
        f"scaled by 1/m and the gradients of the m micro-batches add up before the one update — gradient "
        f"accumulation. Largest relative difference here: {summary['max_grad_error']:.1e}. "
        f"Loss {summary['loss']:.6f}; the unsplit model's {summary['reference_loss']:.6f}."
    )


def search_with_measured_costs(result) -> None:
    """Links to the Search page with this run's measured costs (for the placements the search takes), and to the
    Plan page, which simulates the run's pipeline with them and sets the roofline's beside them."""
    schedule = result.schedule
    if schedule.num_chunks <= 2 and (schedule.num_chunks == 1 or schedule.placement == "v"):
        measured = SearchSettings.from_measured(
            schedule.num_ranks,
            schedule.num_microbatches,
            schedule.placement,
            measured_stage_costs(schedule, result.measured.frame["compute_ms"].to_numpy()),
        )
        link_to("sr", measured.to_query(), "Search for a better schedule with these measured costs ↗")
    if result.config.family in FAMILIES:
        request = PlanRequest.from_measured_run(
            result.config.family,
            schedule.num_ranks,
            schedule.num_microbatches,
            schedule.num_chunks,
            measured_stage_costs(schedule, result.measured.frame["compute_ms"].to_numpy()),
        )
        link_to("pl", request.to_query(), "Check the planner's roofline against these measured costs ↗")


def before_the_run(config, projector: bool) -> None:
    """Before anything is measured: the schedule as the simulator draws it, each stage costing its share of the
    model's blocks — the picture a run then measures (a projected page shows a chart before anyone presses Run)."""
    schedule = config.plan.schedule
    blocks = config.plan.stage_layers
    average = sum(blocks) / len(blocks)
    costs = Costs.of({"F": 1, "B": 2}, stage_scale=tuple(b / average for b in blocks), recompute=config.recompute)
    timeline = simulate(schedule, costs)
    named = FAMILIES[schedule.name].title if schedule.name in FAMILIES else schedule.name
    title = f"Before the run: {named}, {schedule.num_ranks} ranks, {schedule.num_microbatches} micro-batches"
    figure = timeline_figure(timeline, title=title, projector=projector)
    player("rr_chart", figure, name=title, summary=chart_summary(timeline, title))
    live_chart(figure, key="rr_chart")  # the measured chart takes its place after the run
    split = ", ".join(map(str, blocks))
    unit = costs.durations  # the caption's costs are the ones simulated
    st.caption(
        f"Simulated, not measured: a forward costs {unit['F']:g} time unit on a stage with the average {average:g} "
        f"blocks and scales with its blocks (here {split}), a backward {unit['B'] / unit['F']:g} forwards"
        + (
            f" (an I of {unit['I']:g} and a W of {unit['W']:g})"
            if FAMILIES.get(schedule.name) and FAMILIES[schedule.name].splits_backward
            else ""
        )
        + (", plus the forward again (recomputation)" if config.recompute else "")
        + ". An embedding or an output layer is not counted. Press Run to measure it: the measured chart then "
        "outlines the simulator's prediction from the costs the run measured."
    )


def measured_chart(result, projector: bool) -> None:
    """The measured Gantt with the prediction's outlines and the whiskers (each off by default when crowded)."""
    crowded = result.schedule.num_ranks * result.schedule.num_microbatches > CROWDED_ACTIONS
    toggles = st.columns(2)
    outlines = toggles[0].toggle("Prediction outlines", value=not crowded, key=f"{PAGE}_outlines")
    whiskers = toggles[1].toggle("Spread whiskers (min–max)", value=not crowded, key=f"{PAGE}_whiskers")
    figure = run_figure(result, projector=projector, outlines=outlines, whiskers=whiskers)
    name = f"Measured run of {result.schedule.name}"
    player("rr_chart", figure, name=name, summary=chart_summary(result.measured, name))
    live_chart(figure, key="rr_chart")  # redrawn in place on a change (charts/live_chart.py)
    st.caption(
        "Bars: measured (hatched grey: idle, including time blocked in a receive on the distributed "
        "backend). Black outlines: the simulator's prediction from the measured per-stage costs, on the same "
        "time axis. Whiskers: each action's fastest and slowest of the measured steps."
    )


def per_rank_table(result, summary: dict) -> pd.DataFrame:
    """Each rank's measured and predicted end, and its peak memory measured and modelled, in one byte unit."""
    unit, divisor = memory_unit(summary["peak_memory_bytes"])
    return per_rank_frame(
        {
            "measured end (ms)": [float(v) for v in result.measured.frame.groupby("rank")["end"].max()],
            "predicted end (ms)": [float(v) for v in result.predicted.frame.groupby("rank")["end"].max()],
            "error": [f"{e:+.1%}" for e in summary["prediction_error_per_rank"]],
            f"peak memory, measured ({unit})": [float(b / divisor) for b in summary["peak_memory_bytes"]],
            f"peak memory, modelled ({unit})": [float(b / divisor) for b in result.modelled_peak_bytes()],
        }
    )


def memory_model_note(result, summary: dict) -> None:
    """What the memory model assumes between I and W, where the schedule splits the backward."""
    family = FAMILIES.get(result.schedule.name)
    if family is None or family.splits_backward:
        st.caption(
            f"Between I and W a micro-batch keeps {summary['w_memory_fraction']:.0%} of its activation bytes "
            f"(measured here: W needs each layer's input and output gradient); the memory model uses that "
            f"share. Modelled bytes = the model's micro-batch units × the bytes one micro-batch's forward adds "
            f"on that rank, measured."
        )


def real_run() -> None:
    page_heading(
        "Real run",
        "The same schedule executed on a real model: every action runs on real tensors and is timed; the "
        "gradients are checked against the unsplit model; the simulator predicts the timeline from the "
        "costs this run measured.",
    )
    settings, projector = bind()
    first_screen = st.container() if projector else None  # a projected page's chart comes first (filled below)
    cores = cpu_count()
    st.caption(
        f"This machine: {cores} CPU core(s), {visible_gpus() or 'no'} GPU(s), {human_bytes(available_bytes())} "
        f"free. The emulated backend shows up to {REAL_RUN_MAX_RANKS} devices on any number of cores; the "
        f"distributed backend starts one process per rank (more ranks than cores distort its wall clock). "
        f"One real run at a time on this server."
    )
    try:
        config = settings.to_run_config()
        budget_line, refusal = memory_check(config)
    except ValueError as error:  # the engine's message, in the page's words (blocks, hidden width, batch)
        config, budget_line, refusal = None, "", f"This configuration cannot run: {error}"

    kept = st.session_state.get(RESULT)  # (config, result) of this visitor's last run
    if refusal:
        st.error(plain(refusal))
    else:
        st.caption(budget_line)
        if config.backend == "distributed" and config.num_ranks > cores:
            st.warning(
                f"{config.num_ranks} ranks on {cores} CPU core(s): the ranks take turns on the cores, so the "
                f"wall-clock timeline shows the operating system's time slices, not the schedule. The emulated "
                f"backend shows what one device per rank would."
            )
    label = "Run again" if kept is not None and kept[0] == config else "Run"
    clicked = st.button(label, type="primary", key=f"{PAGE}_run", disabled=bool(refusal))
    emulated_view = (
        kept is not None
        and kept[0].backend == "distributed"
        and kept[0].num_ranks > cores
        and st.button("Show the emulated view of this run", key=f"{PAGE}_emulated")
    )
    if clicked:
        kept = run_now(config, kept)
    elif emulated_view and kept is not None:
        kept = run_now(replace(kept[0], backend="emulated"), kept)
    if kept is None:
        st.info("Choose a configuration and press Run.")
        if config is not None and not refusal:
            with first_screen or st.container():
                before_the_run(config, projector)
        return
    ran, result = kept
    show_result(ran, result, config, projector)


real_run()
