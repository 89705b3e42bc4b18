"""Sidebar widgets the pages share. Keys are prefixed by the page (``pg_``, ``cp_``, ``ed_``, ``rr_``); the
projector switch is one key for every page (``app_projector``)."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from engine import FAMILIES
from engine.schedules import Family

from .settings import MAX_CHUNKS, MAX_COST, MAX_MICROBATCHES, MAX_RANKS, MIN_CHUNKS, LabSettings
from .state import remember, restore, seed

PROJECTOR = "app_projector"
FIELDS = tuple(asdict(LabSettings()))
DEFAULT_OVERLAPPED = 2.5
PROJECTOR_ROOT_PX = 21
"""Root font size in projector mode; Streamlit's smallest text (captions, 0.875 rem) is then 18 px."""


def keys(prefix: str) -> dict[str, str]:
    return {field: f"{prefix}_{field}" for field in FIELDS}


def widget_values(prefix: str, settings: LabSettings) -> dict[str, object]:
    values = {keys(prefix)[field]: value for field, value in asdict(settings).items()}
    values[f"{prefix}_overlapped"] = DEFAULT_OVERLAPPED if settings.overlapped is None else settings.overlapped
    values[f"{prefix}_scale"] = ",".join(f"{x:g}" for x in settings.scale) if settings.scale else ""
    return values


def parse_scale(text: str) -> tuple[float, ...] | None:
    """The multipliers typed in the sidebar, or None; ValueError in words."""
    if not text.strip():
        return None
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"stage cost multipliers are numbers separated by commas, got {text!r}") from None


def projector_toggle() -> bool:
    """Larger fonts and rows for a lecture hall; ``&projector=1`` in a link turns it on."""
    if "projector" in st.query_params and st.session_state.get("_projector_link") != st.query_params["projector"]:
        st.session_state["_projector_link"] = st.query_params["projector"]
        seed({PROJECTOR: st.query_params["projector"] in ("1", "true")})
    restore([PROJECTOR], {PROJECTOR: False})
    value = st.sidebar.toggle("Projector mode", key=PROJECTOR, help="Fonts of 18 px and more, taller rows.")
    remember([PROJECTOR])
    if value:  # Streamlit sizes its text in rem: a larger root font enlarges the whole page
        st.html(f"<style>html {{ font-size: {PROJECTOR_ROOT_PX}px; }}</style>")
    return value


def schedule_picker(key: str, label: str = "Schedule") -> Family:
    names = list(FAMILIES)
    name = st.selectbox(label, names, key=key, format_func=lambda n: FAMILIES[n].title)
    return FAMILIES[name]


def lab_sidebar(
    prefix: str, *, with_schedule: bool = True, split_costs: bool | None = None, show_chunks: bool = True
) -> LabSettings:
    """The schedule, sizes and costs of one configuration. ``split_costs`` forces the F, I, W inputs (Compare,
    editor); by default the family decides (B, or I and W)."""
    names = keys(prefix)
    restore(list(names.values()), widget_values(prefix, LabSettings()))
    with st.sidebar:
        family = schedule_picker(names["schedule"]) if with_schedule else None
        st.slider("Ranks (devices), p", 1, MAX_RANKS, key=names["ranks"])
        st.slider("Micro-batches, m", 1, MAX_MICROBATCHES, key=names["microbatches"])
        if (family is None and show_chunks) or (family is not None and family.takes_chunks):
            st.slider(
                "Chunks per rank, v",
                MIN_CHUNKS,
                MAX_CHUNKS,
                key=names["chunks"],
                help="Model chunks each rank holds (interleaved schedules only).",
            )
        st.markdown("**Costs** (one micro-batch through one rank's share of the model)")
        number = dict(min_value=0.0, max_value=MAX_COST, step=0.25)
        st.number_input("F forward", key=names["forward"], **number)
        split = family.splits_backward if split_costs is None else split_costs
        if split:
            st.number_input(
                "I input-gradient backward",
                key=names["backward_input"],
                **number,
                help="The Zero Bubble paper calls this pass B.",
            )
            st.number_input("W weight-gradient backward", key=names["backward_weight"], **number)
        else:
            st.number_input("B full backward", key=names["backward"], **number)
        if family is not None and family.name == "dualpipev":
            st.number_input(
                "F&B overlapped pair",
                key=names["overlapped"],
                min_value=0.0,
                max_value=2 * MAX_COST,
                step=0.25,
                help="One forward and one backward run together; F + B means no gain.",
            )
        st.number_input(
            "Transfer between ranks",
            key=names["comm"],
            **number,
            help="Time from the end of an action to its output's arrival on another rank.",
        )
        st.text_input(
            "Stage cost multipliers (optional)",
            key=names["scale"],
            placeholder="e.g. 1.5,1,1,1.5",
            help="One number per stage: an imbalanced model, where one stage is slower than the others.",
        )
        recompute = st.toggle(
            "Recompute activations",
            key=names["recompute"],
            help="A forward keeps only part of its activations; the backward re-runs it first.",
        )
        if recompute:
            st.slider(
                "Share a forward keeps",
                0.0,
                1.0,
                step=0.05,
                key=names["keep"],
                help="The stage input and little else; the rest is rebuilt by re-running the forward.",
            )
    remember(list(names.values()))
    state = st.session_state
    try:
        scale = parse_scale(state[names["scale"]])
    except ValueError as error:
        st.sidebar.error(f"{error}; using none")
        scale = None
    schedule = state[names["schedule"]] if with_schedule else "zb-h1"
    return LabSettings(
        schedule=schedule,
        ranks=state[names["ranks"]],
        microbatches=state[names["microbatches"]],
        chunks=state[names["chunks"]],
        forward=state[names["forward"]],
        backward=state[names["backward"]],
        backward_input=state[names["backward_input"]],
        backward_weight=state[names["backward_weight"]],
        overlapped=state[names["overlapped"]] if schedule == "dualpipev" else None,
        comm=state[names["comm"]],
        recompute=state[names["recompute"]],
        keep=state[names["keep"]],
        scale=scale,
    )
