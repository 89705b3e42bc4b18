"""The Plan page's panels beside its charts: a published run next to the plan (the paper's figure, the planned one
counted the same way, and where every value of the layout comes from), what one layer keeps for its backward, and
measured costs next to the roofline's."""

from __future__ import annotations

import dataclasses

import streamlit as st

from app.charts import timeline_figure
from app.charts.plan import allreduce_traces
from app.charts.player import player
from app.elements.live_chart import live_chart
from app.frame.timeline_panels import chart_summary
from app.views.plan.experts import moe_lines
from engine import FAMILIES
from engine.scale import LAYOUT_PRESETS
from engine.scale.calibration import Comparison, band_of, planned_tflops
from engine.scale.costs import step_flops
from engine.scale.presets import LLAMA3_MEMORY_NOTE, PAPER
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


def fit_banner(settings: PlanRequest, result) -> None:
    """Whether the plan fits each GPU, in proportion. A layout that fits: green. One that does not: red — unless it
    is a published run, which trained: then the count against the GPU, the gap and why the lab's count can be
    above the run's, all visible, as a warning (the lab's count, not the run, is what is in question)."""
    message = result.memory_message
    said = message[:1].upper() + message[1:] + "."
    if result.fits:
        st.success(said)
        return
    words = "" if result.shortfall is None else result.shortfall.words()
    gap = " " + words[:1].upper() + words[1:] if words else ""
    preset = matching_preset(settings)
    if preset is None:
        st.error(said + gap)
        return
    worst = max(result.memory, key=lambda rank: rank.total)
    over = worst.total - worst.capacity
    unknown = " " + UNPUBLISHED_LAYERS if LLAMA3_MEMORY_NOTE in preset.notes else ""
    st.warning(
        f"**A published run that trained on these GPUs: the lab counts {over / 1e9:.1f} GB "
        f"({over / worst.capacity:.1%}) more than the {worst.capacity / 1e9:g} GB on its fullest GPU.**{gap}"
        f"{unknown}"
    )


UNPUBLISHED_LAYERS = (
    "Which tensors Meta's layers keep, and in what precision, is not published: the lab counts what a Megatron-LM "
    "layer with Transformer Engine keeps (checked against torch's saved tensors), the one assumption it cannot check."
)


def band_note(result) -> None:
    """The planned step, throughput and MFU as a run like the published ones on this GPU would show them: the
    planner's error over those runs (``engine.scale.calibration.error_band``), so an engineer sees how sure it is."""
    band = band_of(result)
    if band is None:
        st.caption(
            f"No published run on {result.gpu.title} besides the one its share is set from (or custom GPU or measured "
            "costs): the planner's error here is not measured."
        )
        return
    steps, tokens, mfu = (
        band.step_seconds(result.step_seconds),
        band.rate(result.tokens_per_second),
        band.rate(result.mfu),
    )
    st.caption(
        f"**How sure:** {band.words()[:1].upper() + band.words()[1:]}. A run like them would take "
        f"**{steps[0]:.3g}–{steps[1]:.3g} s** a step, {tokens[0]:,.0f}–{tokens[1]:,.0f} tokens/s, MFU "
        f"{mfu[0]:.1%}–{mfu[1]:.1%}."
    )


def mfu_note(settings: PlanRequest, result) -> None:
    """MFU defined where it is shown: the lab's count, and beside a published run the paper's count of the same
    step (a different FLOP count over the same seconds, so a different MFU)."""
    gpus, peak = result.num_gpus, result.gpu.peak_tflops
    said = (
        f"**MFU** = model FLOPs per step / (GPUs × peak × step time) = {result.model_flops_per_step:.3e} / "
        f"({gpus:,} × {peak:g} TFLOP/s × {result.step_seconds:.3g} s) = **{result.mfu:.1%}** (the lab's count: a "
        f"forward and a backward of every layer, attention over the whole s × s square)."
    )
    preset = matching_preset(settings)
    if preset is not None and preset.is_moe:  # published as tokens/s: the band and the paper panel compare those
        said += f" The published run gives {preset.reported_tokens_per_gpu:,.0f} tokens/s per GPU."
    elif preset is not None:
        tflops = planned_tflops(result, preset)
        counted = "with the recomputed forward" if preset.counts_recomputation else "as the paper counts"
        said += (
            f" Counted {counted}, the same step is {tflops:,.0f} TFLOP/s per GPU = **{tflops / peak:.1%}** of "
            f"peak; the paper reports {preset.reported_tflops_per_gpu:g} TFLOP/s = "
            f"{preset.reported_tflops_per_gpu / peak:.1%}."
        )
    st.caption(said)


def paper(settings: PlanRequest, result) -> None:
    """Next to a published run: its TFLOP/s per GPU and the plan's counted the same way, the GEMM share's source,
    and a table saying where each value of the layout comes from."""
    preset = matching_preset(settings)
    if preset is None:
        return
    row = Comparison(preset, result, planned_tflops(result, preset))
    if preset.is_moe:
        planned = result.tokens_per_second / result.num_gpus
        st.info(
            f"**{preset.title}** — {preset.source}.  \n"
            f"Planned: **{planned:,.0f} tokens/s per GPU** against the published "
            f"{preset.reported_tokens_per_gpu:,.0f}: **{row.difference:+.1%}** (nothing is calibrated on this run)."
        )
        provenance_table(settings, result, preset)
        return
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
    provenance_table(settings, result, preset)


def provenance_table(settings: PlanRequest, result, preset) -> None:
    """Where each value of a published layout comes from: the paper, or the lab's choice and why."""
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
            "it (tests/engine/runtime/test_saved_tensors.py counts them in torch for both layer styles and every "
            "recomputation)."
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
    from app.frame.timeline_panels import why_panel
    from engine import FAMILIES

    with st.expander("Why these numbers", expanded=False):
        why_panel(FAMILIES[result.layout.family], result.schedule, result.costs, result.timeline)
        if result.measured is not None:
            return
        for line in moe_lines(result):
            st.markdown(line)
        shares = result.time_shares()
        parts = ", ".join(f"{name} {share:.1%}" for name, share in shares.items() if share > 0.0005)
        st.markdown(
            f"**Where the GPUs' time goes** (GPUs × step time = 100 %): {parts}. GEMMs run at up to "
            f"{result.gpu.gemm_share:.1%} of peak (less where their shape leaves part of a wave idle), attention "
            f"below that, memory-bound work, communication and the optimizer step at none of it, the bubble and "
            f"the exposed DP reduction idle: together an **MFU of {result.mfu:.1%}** (model FLOPs / (GPUs × peak × "
            "step time))."
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
    live_chart(figure, key=key)  # redrawn in place on a change (charts/live_chart.py)
