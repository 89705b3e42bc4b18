"""Real run: execute a schedule on a toy model, and put the measurement next to the simulator's prediction."""

import pandas as pd
import streamlit as st

from app.charts import timeline_figure
from app.widgets import schedule_picker
from engine.models import ModelConfig
from engine.runtime import RunConfig, run
from engine.runtime import GRADIENT_TOLERANCE


@st.cache_data(show_spinner=False, max_entries=16)
def measured(config: RunConfig):
    """One real run per configuration (a rerun of the page does not re-measure)."""
    return run(config)


st.title("Real run")
st.caption("The same schedule executed on a real model: every action runs on real tensors and is timed; the "
           "gradients are checked against the unsplit model; the simulator predicts the timeline from the "
           "costs this run measured.")

with st.sidebar:
    family = schedule_picker("rr_schedule")
    name = family.name
    ranks = st.slider("Ranks, p", 1, 8, 4, key="rr_ranks")
    microbatches = st.select_slider("Micro-batches, m", [1, 2, 4, 8, 16, 32], 8, key="rr_microbatches")
    chunks = st.slider("Chunks per rank, v", 2, 4, 2, key="rr_chunks") if family.takes_chunks else None
    kind = st.radio("Model", ["mlp", "gpt"], horizontal=True, key="rr_model",
                    format_func={"mlp": "MLP", "gpt": "tiny GPT"}.get)
    layers = st.slider("Blocks", 1, 32, 8, key="rr_layers")
    hidden = st.select_slider("Hidden width", [32, 64, 128, 256, 512], 256 if kind == "mlp" else 64,
                              key="rr_hidden")
    recompute = st.toggle("Recompute activations", key="rr_recompute")
    backend = st.radio("Backend", ["emulated", "distributed"], key="rr_backend",
                       help="emulated: one process, measured durations on virtual device clocks. "
                            "distributed: one process per rank (torch.distributed), wall clock.")

# a fixed number of samples per micro-batch keeps every choice of m valid (the batch must split evenly)
batch = (16 if kind == "mlp" else 4) * microbatches
try:
    config = RunConfig(family=name, num_ranks=ranks, num_microbatches=microbatches, num_chunks=chunks, recompute=recompute,
                       backend=backend, model=ModelConfig(kind=kind, layers=layers, hidden=hidden, batch=batch,
                                                          seq_len=16))
except ValueError as error:
    st.error(f"This configuration cannot run: {error}")
    st.stop()

if not st.button("Run", type="primary", key="rr_run") and not st.session_state.get("rr_has_run"):
    st.info("Choose a configuration and press Run.")
    st.stop()
st.session_state["rr_has_run"] = True
try:
    with st.spinner(f"Running {name} on {ranks} {'processes' if backend == 'distributed' else 'emulated devices'}…"):
        result = measured(config)
except (ValueError, RuntimeError) as error:
    st.error(f"The run failed: {error}")
    st.stop()

summary = result.summary()
for note in summary["notes"]:
    st.caption(note)
top = st.columns(4)
top[0].metric("Makespan, measured", f"{summary['makespan']:.1f} ms")
top[1].metric("Makespan, predicted", f"{summary['predicted_makespan']:.1f} ms",
              f"{summary['prediction_error']:+.1%} vs measured", delta_color="off")
top[2].metric("Bubble fraction", f"{summary['bubble_fraction']:.1%}",
              f"predicted {summary['predicted_bubble_fraction']:.1%}", delta_color="off")
top[3].metric("Gradient check", f"{summary['max_grad_error']:.1e}",
              f"matches (< {GRADIENT_TOLERANCE:g})" if summary["gradients_match"] else f"differs (≥ {GRADIENT_TOLERANCE:g})",
              delta_color="normal" if summary["gradients_match"] else "inverse")

st.plotly_chart(timeline_figure(result.measured, title="Measured", time_unit="ms", memory=False),
                width="stretch", key="rr_measured")
st.plotly_chart(timeline_figure(result.predicted, title="Predicted by the simulator from the measured costs",
                                time_unit="ms", memory=False), width="stretch", key="rr_predicted")

st.subheader("Memory")
table = pd.DataFrame({
    "peak activation bytes (measured)": summary["peak_memory_bytes"],
    "peak (model, micro-batches of a rank's share)": summary["peak_memory_model"],
}).rename_axis("rank")
st.dataframe(table, width="stretch")
st.plotly_chart(timeline_figure(result.measured, time_unit="ms", memory_unit="bytes kept for backward",
                                animate=False), width="stretch", key="rr_memory")
st.caption(f"Loss {summary['loss']:.6f}; the unsplit model on the whole batch: {summary['reference_loss']:.6f}.")
