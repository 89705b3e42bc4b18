"""Projector mode: larger fonts and rows for a lecture hall, turned on by a switch or ``&projector=1`` in a link,
with the presenter's bar at the top right (scrolling away with the page) in place of the sidebar. One key for
every page."""

from __future__ import annotations

import streamlit as st

from app.charts.style import PROJECTOR_CSS, PROJECTOR_HIDES_SIDEBAR
from app.frame import state
from app.frame.safe_text import shown

PROJECTOR = "app_projector"
PROJECTOR_ROOT_PX = 21
"""Root font size in projector mode; Streamlit's smallest text (captions, 0.875 rem) is then 18 px."""


PROJECTOR_VALUES = ("1", "0", "true", "false")
"""What a link's ``projector`` may say."""


def projector_toggle(link: dict[str, str] | None) -> bool:
    """Larger fonts and rows for a lecture hall; ``&projector=1`` in a link turns it on. In projector mode the
    sidebar is gone (not a strip, and out of the Tab order): a bar fixed at the top right brings the settings
    back and leaves projector mode (``presenter_bar``)."""
    if link and state.PROJECTOR_KEY in link:
        asked = link[state.PROJECTOR_KEY]
        if asked not in PROJECTOR_VALUES:
            st.warning(f"{state.PROJECTOR_KEY}={shown(asked)} in the link is none of 1, 0, true, false: projector "
                       "mode stays off.")  # fmt: skip
        state.seed({PROJECTOR: asked in ("1", "true")})
    state.restore({PROJECTOR: False})
    value = st.sidebar.toggle("Projector mode", key=PROJECTOR, help="Fonts of 18 px and more, taller rows.")
    state.remember([PROJECTOR])
    if value:  # Streamlit sizes its text in rem: a larger root font enlarges the whole page
        settings_shown = presenter_bar()
        hidden = "" if settings_shown else PROJECTOR_HIDES_SIDEBAR
        st.html(f"<style>html {{ font-size: {PROJECTOR_ROOT_PX}px; }}{PROJECTOR_CSS}{hidden}</style>")
    return value


PRESENTER_SETTINGS = "app_projector_settings"
"""Whether the sidebar is shown in projector mode (for the session; off when projector mode is turned on)."""


def _leave_projector() -> None:
    st.session_state[PROJECTOR] = False
    st.session_state[PRESENTER_SETTINGS] = False


def _flip_settings() -> None:
    st.session_state[PRESENTER_SETTINGS] = not st.session_state.get(PRESENTER_SETTINGS, False)


def presenter_bar() -> bool:
    """Two buttons at the top right of a projected page, scrolling away with it (``.st-key-presenter_bar`` in
    ``style.PROJECTOR_CSS``): show or hide the settings, leave projector mode. Whether the settings are shown."""
    shown_now = bool(st.session_state.get(PRESENTER_SETTINGS, False))
    with st.container(key="presenter_bar", horizontal=True):
        st.button(
            "Hide settings" if shown_now else "Settings",
            key="presenter_settings",
            icon=":material/tune:",
            on_click=_flip_settings,
            help="The sidebar: schedule, sizes, costs and the pages",
        )
        st.button("Leave projector mode", key="presenter_leave", on_click=_leave_projector)
    return shown_now


def projector_query(on: bool) -> dict[str, str]:
    return {state.PROJECTOR_KEY: "1"} if on else {}
