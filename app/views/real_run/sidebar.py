"""The Real run page's sidebar: the schedule (unless it comes from the editor), the model and the run's settings,
drawn from ``RealRunSettings``'s declarations."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.frame.sidebar import read_back, seed_from_link
from app.frame.widgets import draw
from app.views.real_run.settings import RealRunSettings
from engine import FAMILIES


def bind_real_run(link: dict[str, str] | None, *, edited: bool) -> tuple[RealRunSettings, list[str]]:
    """The Real run page's sidebar; with ``edited`` the schedule comes from the editor, so its picker hides."""
    problems, defaults = seed_from_link(RealRunSettings, link)
    names = [name for name, _ in RealRunSettings.options() if name not in RealRunSettings.SCHEDULE]
    if not edited:  # the schedule's own settings come first
        family = FAMILIES[draw(RealRunSettings, "family")]
        names[:0] = ["num_ranks", "num_microbatches"] + (["num_chunks"] if family.takes_chunks else [])
    for name in names:
        draw(RealRunSettings, name, on_change=_model_changed if name == "model" else None)
    settings, typed = read_back(RealRunSettings, defaults)
    return replace(settings, schedule_csv=RealRunSettings.received_schedule(st.session_state)), problems + typed


def _model_changed() -> None:
    """A new model starts from its own default width (``RealRunSettings.with_model``)."""
    key = RealRunSettings.widget_key
    st.session_state[key("hidden")] = RealRunSettings().with_model(st.session_state[key("model")]).hidden
