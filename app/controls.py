"""The sidebar's widgets for each settings class: draw them, keyed and seeded by the class, and read the
settings back. A link the visitor opened (``state.opened_link``) seeds them first. Keys are prefixed by the
page (``pg_``, ``cp_``, ``ed_``, ``rr_``); the projector switch is one key for every page."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from engine import FAMILIES
from engine.schedules import Family

from . import limits, state
from .codec import flag
from .real_run_settings import RealRunSettings
from .settings import LabSettings
from .widgets import draw

PROJECTOR = "app_projector"
PROJECTOR_ROOT_PX = 21
"""Root font size in projector mode; Streamlit's smallest text (captions, 0.875 rem) is then 18 px."""


def cost_input(label: str, key: str, help: str | None = None) -> None:
    """A cost box: 0 to ``limits.MAX_COST`` in quarters (F, I, W, B and the transfer)."""
    st.number_input(label, key=key, min_value=0.0, max_value=limits.MAX_COST, step=0.25, help=help)


def projector_toggle(link: dict[str, str] | None) -> bool:
    """Larger fonts and rows for a lecture hall; ``&projector=1`` in a link turns it on."""
    if link and state.PROJECTOR_KEY in link:
        state.seed({PROJECTOR: flag(link, state.PROJECTOR_KEY, False, [])})
    state.restore({PROJECTOR: False})
    value = st.sidebar.toggle("Projector mode", key=PROJECTOR, help="Fonts of 18 px and more, taller rows.")
    state.remember([PROJECTOR])
    if value:  # Streamlit sizes its text in rem: a larger root font enlarges the whole page
        st.html(f"<style>html {{ font-size: {PROJECTOR_ROOT_PX}px; }}</style>")
    return value


def projector_query(on: bool) -> dict[str, str]:
    return {state.PROJECTOR_KEY: "1"} if on else {}


def schedule_picker(key: str, label: str = "Schedule") -> Family:
    name = st.selectbox(label, list(FAMILIES), key=key, format_func=lambda n: FAMILIES[n].title)
    return FAMILIES[name]


def bind_lab(
    prefix: str,
    link: dict[str, str] | None,
    *,
    base: LabSettings | None = None,
    with_schedule: bool = True,
    split_costs: bool | None = None,
    show_chunks: bool = True,
    show_overlapped: bool | None = None,
) -> tuple[LabSettings, list[str]]:
    """The schedule, sizes and costs of one configuration, from the sidebar (seeded from ``link`` when the
    visitor opened one), and the problems found in the link or the typed multipliers.

    ``split_costs`` forces the F, I, W inputs (Compare, editor) and ``show_overlapped`` the F&B input; by
    default the family decides (B, or I and W; F&B when it overlaps)."""
    base = base or LabSettings()
    problems: list[str] = []
    if link:
        linked, problems = LabSettings.from_query(link, base)
        state.seed(linked.widget_values(prefix))
    defaults = base.widget_values(prefix)
    state.restore(defaults)
    key = lambda name: LabSettings.widget_key(prefix, name)  # noqa: E731 - a short local alias
    with st.sidebar:
        family = schedule_picker(key("family")) if with_schedule else None
        st.slider("Ranks (devices), p", 1, limits.MAX_RANKS, key=key("num_ranks"))
        st.slider("Micro-batches, m", 1, limits.MAX_MICROBATCHES, key=key("num_microbatches"))
        if family.takes_chunks if family is not None else show_chunks:
            st.slider(
                "Chunks per rank, v",
                limits.MIN_CHUNKS,
                limits.MAX_CHUNKS,
                key=key("num_chunks"),
                help="Model chunks each rank holds (interleaved schedules only).",
            )
        st.markdown("**Costs** (one micro-batch through one rank's share of the model)")
        cost_input("F forward", key("forward"))
        if family.splits_backward if split_costs is None and family is not None else bool(split_costs):
            cost_input("I input-gradient backward", key("backward_input"), "The Zero Bubble paper calls this pass B.")
            cost_input("W weight-gradient backward", key("backward_weight"))
        else:
            cost_input("B full backward", key("backward"))
        overlapped = family is not None and family.overlaps_forward_backward
        if overlapped if show_overlapped is None else show_overlapped:
            st.number_input(
                "F&B overlapped pair",
                key=key("overlapped"),
                min_value=0.0,
                max_value=limits.MAX_OVERLAPPED,
                step=0.25,
                help="One forward and one backward run together (DualPipeV); F + B means no gain.",
            )
        cost_input(
            "Transfer between ranks",
            key("comm"),
            "Time from the end of an action to its output's arrival on another rank.",
        )
        if st.session_state.get(key("comm"), 0) > 0:
            st.toggle(
                "Transfers share a link",
                key=key("shared_links"),
                help="A transfer occupies its link: one at a time in each direction between two ranks, so a "
                "burst of hand-offs queues. Off: each is a pure delay.",
            )
        st.text_input(
            "Stage cost multipliers (optional)",
            key=key("stage_scale"),
            placeholder="e.g. 1.5,1,1,1.5",
            help="One number per stage: an imbalanced model, where one stage is slower than the others.",
        )
        recompute = st.toggle(
            "Recompute activations",
            key=key("recompute"),
            help="A forward keeps only part of its activations; the backward re-runs it first.",
        )
        if recompute:
            st.slider(
                "Share a forward keeps",
                0.0,
                1.0,
                step=0.05,
                key=key("recompute_memory_fraction"),
                help="The stage input and little else; the rest is rebuilt by re-running the forward.",
            )
    state.remember(defaults)
    values = {name: st.session_state[name] for name in defaults}
    if not with_schedule:
        values[key("family")] = base.family
    settings, typed = LabSettings.from_widgets(prefix, values)
    return settings, problems + typed


def bind_real_run(link: dict[str, str] | None, *, edited: bool) -> tuple[RealRunSettings, list[str]]:
    """The Real run page's sidebar; with ``edited`` the schedule comes from the editor, so its picker hides."""
    problems: list[str] = []
    if link:
        linked, problems = RealRunSettings.from_query(link)
        state.seed(linked.widget_values())
    defaults = RealRunSettings().widget_values()
    state.restore(defaults)
    names = ["model", "layers", "hidden", "recompute", "backend", "repeats", "estimator"]
    if not edited:  # the schedule's own settings come first
        family = FAMILIES[draw(RealRunSettings, "family")]
        names[:0] = ["num_ranks", "num_microbatches"] + (["num_chunks"] if family.takes_chunks else [])
    for name in names:
        draw(RealRunSettings, name, on_change=_model_changed if name == "model" else None)
    state.remember(defaults)
    settings, typed = RealRunSettings.from_widgets({name: st.session_state[name] for name in defaults})
    return replace(settings, schedule_csv=RealRunSettings.received_schedule(st.session_state)), problems + typed


def _model_changed() -> None:
    """A new model starts from its own default width (``RealRunSettings.with_model``)."""
    key = RealRunSettings.widget_key
    st.session_state[key("hidden")] = RealRunSettings().with_model(st.session_state[key("model")]).hidden


def warn_about(problems: list[str]) -> None:
    """Each problem found in a link, in the page's words (the values in it are already quoted as code)."""
    for problem in problems:
        st.warning(f"The link's {problem}.")
