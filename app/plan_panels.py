"""The Plan page's panels beside its charts: a published run next to the plan (the paper's figure, the planned one
counted the same way, and where every value of the layout comes from), what one layer keeps for its backward, and
measured costs next to the roofline's."""

from __future__ import annotations

import dataclasses

import streamlit as st

from app.charts import timeline_figure
from app.charts.plan import allreduce_traces
from app.charts.player import player
from app.explain import chart_summary
from engine import FAMILIES
from engine.scale import LAYOUT_PRESETS
from engine.scale.calibration import Comparison, planned_tflops
from engine.scale.costs import step_flops
from engine.scale.presets import PAPER
from engine.scale.records import layers_text
from engine.scale.request import PlanRequest

MB = 1e6


def matching_preset(settings: PlanRequest):
    """The published run these settings plan, unchanged (None: changed, measured costs given, or none)."""
    if settings.measured or settings.model == "custom" or settings.gpu == "custom":
        return None
    model = settings.model_spec()

    def resolved(layout):  # the same job however it is written: the sequence spelled out, the GPU count implied
        return dataclasses.replace(layout, num_gpus=None, seq_length=layout.sequence(model))

    layout = resolved(settings.layout())
    for preset in LAYOUT_PRESETS.values():
        if (preset.model, preset.gpu) == (settings.model, settings.gpu) and layout == resolved(preset.layout):
            return preset
    return None


def paper(settings: PlanRequest, result) -> None:
    """Next to a published run: its TFLOP/s per GPU and the plan's counted the same way, the GEMM share's source,
    and a table saying where each value of the layout comes from."""
    preset = matching_preset(settings)
    if preset is None:
        return
    row = Comparison(preset, result, planned_tflops(result, preset))
    counted = "recomputation counted (Eq. 3)" if preset.counts_recomputation else "model FLOPs, attention's causal half"
    calibrates = " — this run sets the GPU's GEMM share" if row.calibrates else ""
    if preset.attention_counted < 1:  # what counting the whole s × s square instead would give, from the engine
        whole = step_flops(result.model, result.layout, 1.0)[0] / step_flops(result.model, result.layout, 0.5)[0]
        calibrates += f" (counted over the whole attention square, {whole - 1:.0%} more FLOPs for the same time)"
    st.info(
        f"**{preset.title}** — {preset.source}.  \n"
        f"Planned, counted as the paper counts ({counted}): **{row.planned:,.1f} TFLOP/s per GPU** against the "
        f"paper's {row.reported:g}: **{row.difference:+.1%}**{calibrates}."
    )
    values = settings.widget_values()
    rows = []
    for name, where in preset.provenance.items():
        value = values.get(PlanRequest.widget_key(name), getattr(settings, name, ""))
        if name == "split":  # the rule as the plan resolved it, and what it gives
            value = f"{settings.layout().split}: {layers_text(result.layers_per_stage)}"
        rows.append(
            {"setting": PlanRequest.option(name).label, "value": str(value),
             "from": "the paper" if where.origin == PAPER else "the lab's choice", "where, or why": where.words}
        )  # fmt: skip
    with st.expander("Where each value of this layout comes from", expanded=False):
        st.table(rows)
        for note in preset.notes:
            st.caption(note)


def kept_per_layer(result) -> None:
    """What one layer keeps for one micro-batch on one GPU, by operation (the activations' per-layer bytes)."""
    kept, total = result.kept_per_layer, result.kept_per_layer_bytes
    with st.expander(f"What one layer keeps for its backward: {total / MB:,.1f} MB per micro-batch on one GPU"):
        st.table([{"kept by": name, "MB": f"{size / MB:,.1f}", "share": f"{size / total:.0%}"} for name, size in kept])
        st.caption(
            "Each operation's saved tensors as torch's autograd keeps them for a layer built as Megatron-LM builds "
            "it (tests/test_saved_tensors.py counts them in torch for both layer styles and every recomputation)."
        )


def measured_against_roofline(result) -> None:
    """With measured costs: each stage's measured F, I, W next to the roofline's, and their ratio."""
    if result.measured is None:
        return
    rows = []
    for planned, measured in zip(result.stage_costs, result.measured, strict=True):
        row = {"stage": planned.stage}
        for key, roofline in (("F", planned.forward), ("I", planned.backward_input), ("W", planned.backward_weight)):
            row[f"{key} measured (ms)"] = f"{measured[key] * 1e3:.3f}"
            row[f"{key} roofline (ms)"] = f"{roofline * 1e3:.3f}"
            row[f"{key} ratio"] = "—" if roofline == 0 else f"{measured[key] / roofline:.2f}×"
        rows.append(row)
    st.subheader("Measured costs against the roofline")
    st.caption(
        "The pipeline above is simulated with the measured F, I and W; the roofline's are shown beside them, so the "
        "ratio says how far this machine is from the model."
    )
    st.table(rows)


def why_these_numbers(result) -> None:
    """The family's closed forms with this plan's p, m and v beside the simulated values (and which of their
    assumptions the layout breaks), then where the GPUs' time goes and how that makes the MFU."""
    from app.explain import why_panel
    from engine import FAMILIES

    with st.expander("Why these numbers", expanded=False):
        why_panel(FAMILIES[result.layout.family], result.schedule, result.costs, result.timeline)
        if result.measured is not None:
            return
        shares = result.time_shares()
        parts = ", ".join(f"{name} {share:.1%}" for name, share in shares.items() if share > 0.0005)
        st.markdown(
            f"**Where the GPUs' time goes** (GPUs × step time = 100 %): {parts}. GEMMs run at up to "
            f"{result.gpu.gemm_share:.1%} of peak (less where their shape leaves part of a wave idle), attention "
            f"below that, memory-bound work and communication at none of it, the bubble and the exposed DP "
            f"reduction idle: together an **MFU of {result.mfu:.1%}** (model FLOPs / (GPUs × peak × step time))."
        )


def pipeline_gantt(settings: PlanRequest, result, projector: bool, *, key: str) -> None:
    """One pipeline's step of a plan, in seconds (its DP all-reduce drawn under each row), with the playback
    controls: the Plan page's chart, and lesson 11's staircase in seconds."""
    title = f"{FAMILIES[settings.family].title}: {settings.pp} ranks, {result.num_microbatches} micro-batches"
    figure = timeline_figure(
        result.timeline,
        title=title,
        time_unit="seconds",
        memory=False,
        projector=projector,
        extra=allreduce_traces(result),
        end=max((row.end for row in result.allreduce), default=0.0),
    )
    player(key, figure, name=title, summary=chart_summary(result.timeline, title, memory=False))
    st.plotly_chart(figure, width="stretch", key=key)
