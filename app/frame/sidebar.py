"""The sidebar's widgets for a settings class: draw them, keyed and seeded by the class, and read the settings
back. A link the visitor opened (``state.opened_link``) seeds them first. Keys are prefixed by the page (``pg_``,
``cp_``, ``ed_``, ``rr_``). ``bind_lab`` draws the simulated pages' settings (``LabSettings``); a page with settings
of its own binds them in its folder with ``seed_from_link`` → ``draw`` → ``read_back``."""

from __future__ import annotations

import re
from dataclasses import dataclass

import streamlit as st

from app.frame import state
from app.frame.lab_settings import COST_BOXES, FULL_KEYS, SPLIT_KEYS, LabSettings
from app.frame.widgets import draw, draw_option
from engine import FAMILIES
from engine.costs import PAIR_KEY
from engine.options import Declared
from engine.schedules import Family

LINK_PROBLEM = re.compile(r"[a-z_]+=`")
"""How a problem found in a link starts (``engine.options.Declared.from_query``)."""


@dataclass(frozen=True)
class LabInputs:
    """Which of a configuration's inputs a page asks for (the family decides what it leaves as None)."""

    schedule: bool = True
    """A schedule picker (Compare chooses its schedules itself)."""
    chunks: bool | None = None
    """The chunks slider; None: when the chosen family takes chunks."""
    split_costs: bool | None = None
    """I and W instead of B; None: when the chosen family splits the backward."""
    overlapped: bool | None = None
    """The F&B box; None: when the chosen family overlaps a forward and a backward."""


def bind_lab(
    prefix: str, link: dict[str, str] | None, *, base: LabSettings | None = None, inputs: LabInputs = LabInputs()
) -> tuple[LabSettings, list[str]]:
    """The schedule, sizes and costs of one configuration, from the sidebar (seeded from ``link`` when the
    visitor opened one), and the problems found in the link or the typed values."""
    base = base or LabSettings()
    # seed: a link the visitor opened sets the widgets; otherwise they come back as the visitor left them
    problems, defaults = seed_from_link(LabSettings, link, prefix, base)
    # draw: the schedule and its sizes, the costs it reads, then what every schedule shares
    family = _draw_schedule(prefix, inputs)
    _draw_costs(prefix, family, inputs)
    _draw_shared(prefix)
    # read back
    state.remember(defaults)
    values = {name: st.session_state[name] for name in defaults}
    if not inputs.schedule:
        values[LabSettings.widget_key("family", prefix)] = base.family
    settings, typed = LabSettings.from_widgets(values, prefix)
    return settings, problems + typed


def _draw_schedule(prefix: str, inputs: LabInputs) -> Family | None:
    family = FAMILIES[draw(LabSettings, "family", prefix)] if inputs.schedule else None
    draw(LabSettings, "num_ranks", prefix)
    draw(LabSettings, "num_microbatches", prefix)
    takes_chunks = family.takes_chunks if family is not None and inputs.chunks is None else bool(inputs.chunks)
    if takes_chunks:
        draw(LabSettings, "num_chunks", prefix)
    return family


def _draw_costs(prefix: str, family: Family | None, inputs: LabInputs) -> None:
    """One box per cost the family reads (``engine.costs.COST_KINDS`` gives each its label and help)."""
    st.sidebar.markdown("**Costs** (one micro-batch through one rank's share of the model)")
    split = family.splits_backward if family is not None and inputs.split_costs is None else bool(inputs.split_costs)
    overlaps = family is not None and family.overlaps_forward_backward
    overlapped = overlaps if inputs.overlapped is None else inputs.overlapped
    keys = (SPLIT_KEYS if split else FULL_KEYS) + ((PAIR_KEY,) if overlapped else ())
    for key in keys:
        draw_option(COST_BOXES[key], LabSettings.widget_key(COST_BOXES[key].key, prefix))
    draw(LabSettings, "comm", prefix)
    draw(LabSettings, "expert_comm", prefix)


def _draw_shared(prefix: str) -> None:
    """The link sharing (once transfers take time), the stage multipliers and recomputation."""
    if st.session_state.get(LabSettings.widget_key("comm", prefix), 0) > 0:
        draw(LabSettings, "shared_links", prefix)
    draw(LabSettings, "stage_scale", prefix, placeholder="e.g. 1.5,1,1,1.5")
    if draw(LabSettings, "recompute", prefix):
        draw(LabSettings, "recompute_memory_fraction", prefix)


def seed_from_link(
    settings: type[Declared], link: dict[str, str] | None, prefix: str | None = None, base: Declared | None = None
) -> tuple[list[str], dict[str, object]]:
    """Before a page draws its widgets: a link the visitor opened sets them (its problems returned), the rest
    come back as the visitor left them (or their defaults, returned for ``read_back``)."""
    problems: list[str] = []
    if link:
        linked, problems = settings.from_query(link, base)
        state.seed(linked.widget_values(prefix))
    defaults = (base if base is not None else settings()).widget_values(prefix)
    state.restore(defaults)
    return problems, defaults


def read_back(settings: type[Declared], defaults: dict[str, object], prefix: str | None = None):
    """After the widgets: keep their values for the next visit and read the settings they hold."""
    state.remember(defaults)
    return settings.from_widgets({name: st.session_state[name] for name in defaults}, prefix)


def warn_about(problems: list[str]) -> None:
    """Each problem found in a link ("key=`value`: …") or in a typed input ("Label: …"), in the page's words
    (the values in it are already quoted as code or escaped)."""
    for problem in problems:
        st.warning(f"The link's {problem}." if LINK_PROBLEM.match(problem) else f"{problem}.")


def page_heading(title: str, intro: str) -> None:
    """A page's title and the paragraph that says what the page does; projector mode leaves the paragraph out
    (``.st-key-page_intro`` in ``style.PROJECTOR_CSS``): the teacher says it, and the chart needs the room."""
    st.title(title)
    with st.container(key="page_intro"):
        st.caption(intro)
