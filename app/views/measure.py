"""Real run: execute a schedule on a toy model, and put the measurement next to the simulator's prediction."""

import os
from dataclasses import replace

import pandas as pd
import streamlit as st

from app import state
from app.charts import memory_unit, run_figure
from app.real_runs import memory_check, run_one
from app.widgets import projector_toggle, schedule_picker
from engine import FAMILIES
from engine.model_config import MODEL_DEFAULTS, MODEL_TITLES, ModelConfig
from engine.runtime import GRADIENT_TOLERANCE, RunConfig, budget
from engine.runtime.budget import human_bytes
from engine.runtime.devices import gpu_count

PAGE = "rr"
HANDOFF = "rr_schedule_csv"  # set by the schedule editor's "Run it for real"
SAMPLES_PER_MICROBATCH = {"mlp": 16, "gpt": 4}  # a batch that splits evenly for every choice of m
MAX_RANKS = 8
CORES = os.cpu_count() or 1

st.title("Real run")
st.caption(
    "The same schedule executed on a real model: every action runs on real tensors and is timed; the "
    "gradients are checked against the unsplit model; the simulator predicts the timeline from the "
    "costs this run measured."
)
st.caption(
    f"This machine: {CORES} CPU core(s), {gpu_count() or 'no'} GPU(s), {human_bytes(budget.available_bytes())} "
    f"free. The emulated backend shows up to {MAX_RANKS} devices on any number of cores; the distributed "
    f"backend starts one process per rank (more ranks than cores distort its wall clock). "
    f"One real run at a time on this server."
)

projector = projector_toggle()
keys = [
    f"{PAGE}_{name}"
    for name in (
        "schedule",
        "ranks",
        "microbatches",
        "chunks",
        "model",
        "layers",
        "hidden",
        "recompute",
        "backend",
        "repeats",
    )
]
state.restore(
    keys,
    {
        f"{PAGE}_schedule": "zb-h1",
        f"{PAGE}_ranks": 4,
        f"{PAGE}_microbatches": 8,
        f"{PAGE}_chunks": 2,
        f"{PAGE}_model": "mlp",
        f"{PAGE}_layers": 8,
        f"{PAGE}_hidden": MODEL_DEFAULTS["mlp"]["hidden"],
        f"{PAGE}_recompute": False,
        f"{PAGE}_backend": "emulated",
        f"{PAGE}_repeats": 3,
    },
)


def model_changed() -> None:
    """A new model starts from its own default width (the MLP's 512 would make the GPT needlessly big)."""
    st.session_state[f"{PAGE}_hidden"] = MODEL_DEFAULTS[st.session_state[f"{PAGE}_model"]]["hidden"]


edited = st.session_state.get(HANDOFF)
with st.sidebar:
    if edited:
        st.info("Running the schedule sent from the editor.")
        if st.button("Use a schedule family instead", key=f"{PAGE}_forget_edited"):
            del st.session_state[HANDOFF]
            st.rerun()
    else:
        family = schedule_picker(f"{PAGE}_schedule")
        st.slider("Ranks (devices), p", 1, MAX_RANKS, key=f"{PAGE}_ranks")
        st.select_slider("Micro-batches, m", [1, 2, 4, 8, 16, 32], key=f"{PAGE}_microbatches")
        if family.takes_chunks:
            st.slider("Chunks per rank, v", 2, 4, key=f"{PAGE}_chunks")
    st.radio(
        "Model",
        ["mlp", "gpt"],
        horizontal=True,
        key=f"{PAGE}_model",
        format_func=MODEL_TITLES.get,
        on_change=model_changed,
    )
    st.slider("Blocks", 1, 32, key=f"{PAGE}_layers")
    st.select_slider("Hidden width", [32, 64, 128, 256, 512], key=f"{PAGE}_hidden")
    st.toggle("Recompute activations", key=f"{PAGE}_recompute")
    st.radio(
        "Backend",
        ["emulated", "distributed"],
        key=f"{PAGE}_backend",
        help="emulated: one process; each action's measured CPU time placed on virtual device clocks. "
        "distributed: one process per rank (torch.distributed), wall clock.",
    )
    st.slider(
        "Measured steps (median shown)",
        1,
        10,
        key=f"{PAGE}_repeats",
        help="After one warm-up step; the spread over them is drawn as whiskers.",
    )
state.remember(keys)

values = {key.removeprefix(f"{PAGE}_"): st.session_state[key] for key in keys}
try:
    kind = values["model"]
    microbatches = values["microbatches"]
    model = ModelConfig(
        kind=kind, layers=values["layers"], hidden=values["hidden"], batch=SAMPLES_PER_MICROBATCH[kind] * microbatches
    )
    common = dict(model=model, recompute=values["recompute"], backend=values["backend"], repeats=values["repeats"])
    if edited:
        config = RunConfig(schedule_csv=edited, **common)
    else:
        config = RunConfig(
            family=values["schedule"],
            num_ranks=values["ranks"],
            num_microbatches=microbatches,
            num_chunks=values["chunks"] if FAMILIES[values["schedule"]].takes_chunks else None,
            **common,
        )
    budget_line, refusal = memory_check(config)
except ValueError as error:  # the engine's message, in the page's words (blocks, hidden width, batch)
    config, budget_line, refusal = None, "", f"This configuration cannot run: {error}"

kept = st.session_state.get(f"{PAGE}_result")  # (config, result) of this visitor's last run
if refusal:
    st.error(refusal)
else:
    st.caption(budget_line)
    if config.backend == "distributed" and config.num_ranks > CORES:
        st.warning(
            f"{config.num_ranks} ranks on {CORES} CPU core(s): the ranks take turns on the cores, so the "
            f"wall-clock timeline shows the operating system's time slices, not the schedule. The emulated "
            f"backend shows what one device per rank would."
        )
label = "Run again" if kept is not None and kept[0] == config else "Run"
clicked = st.button(label, type="primary", key=f"{PAGE}_run", disabled=bool(refusal))
emulated_view = (
    kept is not None
    and kept[0].backend == "distributed"
    and kept[0].num_ranks > CORES
    and st.button("Show the emulated view of this run", key=f"{PAGE}_emulated")
)

if clicked or emulated_view:
    to_run = config if clicked else replace(kept[0], backend="emulated")
    bar = st.progress(0.0, text="Starting the run (a fresh process imports PyTorch: a few seconds)…")
    waiting = st.empty()

    def progress(done: int, total: int, note: str) -> None:
        waiting.empty()
        bar.progress(min(done / max(total, 1), 1.0), text=f"{done:,} / {total:,} actions · {note}")

    try:
        result = run_one(to_run, progress=progress, waiting=waiting.info)
        st.session_state[f"{PAGE}_result"] = kept = (to_run, result)
        st.session_state[f"{PAGE}_runs"] = st.session_state.get(f"{PAGE}_runs", 0) + 1
    except (ValueError, RuntimeError, TimeoutError) as error:
        st.error(f"The run failed: {error}")
    bar.empty()
    waiting.empty()

if kept is None:
    st.info("Choose a configuration and press Run.")
    st.stop()

ran, result = kept
if ran != config:
    st.caption("Below: your last run. The sidebar has changed since — press Run to measure the new configuration.")
summary = result.summary()
for note in summary["notes"]:
    (st.warning if note.startswith("warning") else st.caption)(note)
low, high = summary["makespan_spread"]
cards = st.columns(4)
cards[0].metric(
    "Makespan, measured",
    f"{summary['makespan']:.2f} ms",
    help=f"median of {summary['repeats']} measured step(s); they ranged {low:.2f}–{high:.2f} ms",
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
st.markdown(
    f"**Gradient check**: every weight's gradient after the pipelined step is compared with the gradient "
    f"of the whole, unsplit model on the whole batch; they must match, because each micro-batch's loss is "
    f"scaled by 1/m and the gradients of the m micro-batches add up before the one update — gradient "
    f"accumulation. Largest relative difference here: {summary['max_grad_error']:.1e}. "
    f"Loss {summary['loss']:.6f}; the unsplit model's {summary['reference_loss']:.6f}."
)

st.plotly_chart(run_figure(result, projector=projector), width="stretch", key="rr_chart")
st.caption(
    "Bars: measured (hatched grey: idle, including time blocked in a receive on the distributed "
    "backend). Black outlines: the simulator's prediction from the measured per-stage costs, on the same "
    "time axis. Whiskers: each action's fastest and slowest of the measured steps."
)

per_rank = pd.DataFrame(
    {
        "measured end (ms)": result.measured.frame.groupby("rank")["end"].max().round(3),
        "predicted end (ms)": result.predicted.frame.groupby("rank")["end"].max().round(3),
        "error": [f"{e:+.1%}" for e in summary["prediction_error_per_rank"]],
    }
).rename_axis("rank")
unit, divisor = memory_unit(summary["peak_memory_bytes"])
per_rank[f"peak memory, measured ({unit})"] = [round(b / divisor, 2) for b in summary["peak_memory_bytes"]]
per_rank[f"peak memory, modelled ({unit})"] = [round(b / divisor, 2) for b in result.modelled_peak_bytes()]
st.dataframe(per_rank, width="stretch")
if FAMILIES.get(result.schedule.name) is None or FAMILIES[result.schedule.name].splits_backward:
    st.caption(
        f"Between I and W a micro-batch keeps {summary['w_memory_fraction']:.0%} of its activation bytes "
        f"(measured here: W needs each layer's input and output gradient); the memory model uses that "
        f"share. Modelled bytes = the model's micro-batch units × the bytes one micro-batch's forward adds "
        f"on that rank, measured."
    )
