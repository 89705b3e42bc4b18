"""Plan: a real model on real GPUs — step time, tokens per second, MFU, the bubble, memory per GPU in GB — on
the lab's own simulator (``engine.scale``), for the same inputs as ``python -m engine plan``."""

import streamlit as st

from app.charts.plan import memory_figure, time_figure
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.cards import card_places
from app.frame.engine_calls import planned
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain
from app.frame.sidebar import page_heading, read_back, seed_from_link, warn_about
from app.frame.widgets import draw
from app.text.metrics import PLAN_CARDS
from app.views.plan.panels import (
    band_note,
    fit_banner,
    kept_per_layer,
    measured_against_roofline,
    mfu_note,
    paper,
    pipeline_gantt,
    why_these_numbers,
)
from engine import FAMILIES
from engine.scale import LAYOUT_PRESETS
from engine.scale.records import layers_text
from engine.scale.request import CUSTOM, CUSTOM_GPU, CUSTOM_MODEL, PLAN_KEYS, PlanRequest

PAGE = PlanRequest.PREFIX
PRESET = f"{PAGE}_preset"


def load_preset() -> None:
    """The "Start from" menu: a published layout fills every input."""
    name = st.session_state[PRESET]
    if name in LAYOUT_PRESETS:
        state.seed(PlanRequest.from_preset(name).widget_values())


def bind() -> tuple[PlanRequest, bool]:
    """The sidebar, every input drawn from its declaration in ``PlanRequest`` (seeded from a link)."""
    link = state.opened_link(PAGE, PLAN_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    problems, defaults = seed_from_link(PlanRequest, link)
    state.restore({PRESET: "—"})
    with st.sidebar:
        st.selectbox(
            "Start from a published layout",
            ["—", *LAYOUT_PRESETS],
            key=PRESET,
            format_func=lambda n: LAYOUT_PRESETS[n].title if n in LAYOUT_PRESETS else "—",
            on_change=load_preset,
        )
        if draw(PlanRequest, "model") == CUSTOM:
            custom = st.expander("Custom model", expanded=True)
            for name in CUSTOM_MODEL:
                draw(PlanRequest, name, where=custom)
        if draw(PlanRequest, "gpu") == CUSTOM:
            custom = st.expander("Custom GPU", expanded=True)
            for name in CUSTOM_GPU:
                draw(PlanRequest, name, where=custom)
        st.markdown("**Layout**")
        left, right = st.columns(2)
        for name, column in (("tp", left), ("pp", right), ("dp", left), ("cp", right), ("ep", left)):
            draw(PlanRequest, name, where=column)
        draw(PlanRequest, "seq")
        left, right = st.columns(2)
        draw(PlanRequest, "global_batch", where=left)
        draw(PlanRequest, "microbatch_size", where=right)
        if FAMILIES[draw(PlanRequest, "family")].takes_chunks:
            draw(PlanRequest, "chunks")
        for name in ("split", "recompute", "zero", "gradient_precision", "sequence_parallel", "flash_attention",
                     "fp8", "tp_overlap", "dp_overlap", "p2p_overlap", "measured"):  # fmt: skip
            draw(PlanRequest, name)
    state.remember([PRESET])
    settings, typed = read_back(PlanRequest, defaults)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems + typed)
    return settings, projector


def cards(result, *, stacked: bool = False) -> None:
    """The plan's cards (``app.text.metrics.PLAN_CARDS``), in two rows of three or one under another; peak memory's
    help says whether it fits this GPU."""
    fits = f"of {result.gpu.memory_gb:g} GB: " + ("fits" if result.fits else "does not fit")
    values = [
        (metric.card, metric.shown(result), fits if name == "peak_memory_gb" else metric.help)
        for name, metric in PLAN_CARDS.items()
    ]
    places = card_places(len(values), stacked=stacked, columns=3)
    for place, (label, value, words) in zip(places, values, strict=True):
        place.metric(label, value, help=words)


def first_view(settings: PlanRequest, result, projector: bool) -> None:
    """What the page opens on: the cards, whether it fits (with the gap and why, in proportion), MFU defined,
    and one pipeline's step in seconds. On a projector the chart comes first with the cards beside it."""
    if projector:
        chart, side = st.columns([5, 2], gap="medium")
        with side:
            cards(result, stacked=True)
        with chart:
            pipeline_gantt(settings, result, projector, key="pl_gantt")
        band_note(result)
        fit_banner(settings, result)
        mfu_note(settings, result)
        return
    with st.container(key="stage_pl"):  # on a phone: the chart, the cards, then the notes (style.PAGE_CSS)
        cards(result)
        with st.container(key="phone_last_pl"):
            band_note(result)
            fit_banner(settings, result)
            mfu_note(settings, result)
        with st.container(key="phone_first_pl"):
            st.subheader("One pipeline's step, in seconds")
            pipeline_gantt(settings, result, projector, key="pl_gantt")


def plan_page() -> None:
    page_heading(
        "Plan a pipeline at real scale",
        "A real model on real GPUs: each layer's operations (GEMMs, attention, norms, activations) timed on the GPU's "
        "roofline, the pipeline simulated with the lab's own simulator (one pipeline; the data-parallel replicas run "
        "it side by side and meet in the gradient reduction), memory per GPU from the model states and what each "
        "layer keeps × the simulator's micro-batches in flight. The same numbers as `python -m engine plan`.",
    )
    settings, projector = bind()
    try:
        result = planned(settings)
        state.keep_last_good(PAGE, (settings, result))
    except ValueError as error:  # the engine's message carries the arithmetic
        st.error(f"This layout cannot run: {plain(error)}")
        good = state.last_good(PAGE)
        if good is None:
            st.stop()
        settings, result = good
        st.caption("Below: the last layout that worked.")

    first_view(settings, result, projector)
    layers = result.layers_per_stage
    gpu = result.gpu
    st.markdown(
        f"**{result.model.title}**: {result.parameters / 1e9:,.1f} B parameters"
        + (f" ({result.active_parameters / 1e9:,.1f} B active)" if result.model.is_moe else "")
        + "; "
        f"{result.model_flops_per_step:.3e} FLOPs per step; layers per stage {layers_text(layers)} "
        f"({len(layers)} stages, {result.num_microbatches} micro-batches per pipeline). "
        f"**{gpu.title}**: GEMMs at {gpu.gemm_share:.1%} of peak — {gpu.gemm_share_source}."
    )
    for note in result.notes:
        st.caption(note)
    paper(settings, result)
    why_these_numbers(result)
    st.subheader("Where each stage's time goes")
    live_chart(time_figure(result, projector=projector), key="pl_time")
    measured_against_roofline(result)
    st.subheader("Memory per GPU")
    live_chart(memory_figure(result, projector=projector), key="pl_memory")
    kept_per_layer(result)
    with st.expander("Every family at this layout (a few seconds at large sizes)"):
        if st.button("Compare every family", key=f"{PAGE}_compare"):
            rows = [
                {
                    "schedule": row.title,
                    "step (s)": "—" if row.step_seconds is None else f"{row.step_seconds:.3g}",
                    "bubble": "—" if row.bubble_fraction is None else f"{row.bubble_fraction:.1%}",
                    "peak memory / GPU": "—"
                    if row.peak_memory_bytes is None
                    else f"{row.peak_memory_bytes / 1e9:.1f} GB",
                    "fits": "yes" if row.fits else ("no" if row.error is None else f"cannot run: {row.error}"),
                }
                for row in result.compare_families()
            ]
            st.table(rows)
    downloads = st.columns(2)
    downloads[0].download_button(
        "torchtitan config (TOML)", result.torchtitan_toml, "plan.toml", "text/plain", key=f"{PAGE}_toml"
    )
    downloads[1].download_button(
        "Schedule CSV (PyTorch)", result.schedule_csv, f"{settings.family}.csv", "text/csv", key=f"{PAGE}_csv"
    )


plan_page()
