"""Playground: pick a schedule and sizes, see the simulated timeline, its bubble and its memory."""

import json

import pandas as pd
import streamlit as st

from app.charts import gantt, memory_chart
from app.widgets import chunks_slider, schedule_picker
from engine import Costs, build_schedule, simulate


@st.cache_data(show_spinner=False, max_entries=64)
def simulated(name: str, ranks: int, microbatches: int, chunks: int | None, costs: Costs):
    """Pure engine call, cached: the same sliders give the same timeline instantly."""
    schedule = build_schedule(name, ranks, microbatches, chunks)
    return schedule, simulate(schedule, costs)


st.title("Playground")
st.caption("Choose a schedule and the sizes; the exact simulator times every action. "
           "Costs are per micro-batch through one rank's share of the model.")

with st.sidebar:
    name, family = schedule_picker("pg", "1f1b")
    ranks = st.slider("Ranks (devices), p", 1, 32, 4, key="pg_ranks")
    microbatches = st.slider("Micro-batches, m", 1, 256, 8, key="pg_microbatches")
    chunks = chunks_slider("pg", family, 8)
    st.markdown("**Costs**")
    forward = st.number_input("F forward", 0.0, 100.0, 1.0, 0.25, key="pg_forward")
    if family.splits_backward:
        backward_input = st.number_input("I input-gradient backward", 0.0, 100.0, 1.0, 0.25, key="pg_input")
        backward_weight = st.number_input("W weight-gradient backward", 0.0, 100.0, 1.0, 0.25, key="pg_weight")
        backward = None
    else:
        backward = st.number_input("B full backward", 0.0, 100.0, 2.0, 0.25, key="pg_backward")
        backward_input = backward_weight = None
    overlapped = None
    if name == "dualpipev":
        overlapped = st.number_input("F&B overlapped pair", 0.0, 200.0, 2.5, 0.25, key="pg_overlapped",
                                     help="Time for one forward and one backward run together; F+B means no gain.")
    comm = st.number_input("Transfer between ranks", 0.0, 100.0, 0.0, 0.1, key="pg_comm")
    recompute = st.toggle("Recompute activations", key="pg_recompute")

try:
    costs = Costs(forward=forward, backward=backward, backward_input=backward_input,
                  backward_weight=backward_weight, overlapped=overlapped, comm=comm, recompute=recompute)
    schedule, timeline = simulated(name, ranks, microbatches, chunks, costs)
except ValueError as error:  # the engine's message carries the arithmetic
    st.error(f"This configuration cannot run: {error}")
    st.stop()

summary = timeline.summary()
columns = st.columns(4)
columns[0].metric("Makespan", f"{summary['makespan']:.4g}")
columns[1].metric("Bubble fraction", f"{summary['bubble_fraction']:.1%}",
                  help="idle / (ranks × makespan): the share of device time wasted")
columns[2].metric("Bubble ratio", f"{summary['bubble_ratio']:.3f}", help="idle / busy (Megatron's (p−1)/m)")
columns[3].metric("Peak memory", f"{max(summary['peak_memory']):.3g}",
                  help="activations, in micro-batches through one rank's share, on the busiest rank")

st.plotly_chart(gantt(timeline, title=f"{name}: {ranks} ranks, {microbatches} micro-batches"
                      + (f", {chunks} stages per rank" if chunks else "")),
                width="stretch", key="pg_gantt")

st.subheader("Per rank")
table = pd.DataFrame({
    "busy": summary["busy"], "idle": summary["idle"], "idle inside span": summary["span_idle"],
    "peak memory": summary["peak_memory"],
}).rename_axis("rank")
st.dataframe(table, width="stretch")
st.caption("'Idle inside span' leaves out the wait before a rank's first action and after its last — "
           "the count the Zero Bubble papers use, since the next step's warm-up can fill it.")

st.subheader("Activation memory")
st.plotly_chart(memory_chart(timeline), width="stretch", key="pg_memory")

with st.expander("Schedule as text (rank × step grid, PyTorch CSV)"):
    st.code(schedule.grid(max_rows=200), language=None)
    download = st.columns(2)
    download[0].download_button("Download CSV (PyTorch format)", schedule.to_csv(), f"{name}.csv", "text/csv",
                                key="pg_csv")
    download[1].download_button("Download Perfetto trace", json.dumps(timeline.to_chrome_trace()),
                                f"{name}.trace.json", "application/json", key="pg_trace")
