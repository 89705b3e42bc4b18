"""One visitor's state across reruns and pages, and the address bar kept in step with it.

[Note: the URL follows the widgets] The address bar always shows the view, but only a link the visitor
actually opened sets the widgets: the page's first run in this session (a pasted or shared address),
Back/Forward (Streamlit marks those runs as history navigation), or arrival from another page (the sidebar's
links and the lessons' "open in the Playground" carry the page's keys). Every other run writes the URL from
the widgets and never reads it back — reading back our own write, while a burst of key presses is still
arriving, would overwrite the newest value with an older one.

The sidebar's page links carry each page's last query (``page_link``), so moving between pages adds one
history entry, not two, and Back returns to the previous view with its settings in one step.

Streamlit drops a widget's value when a run does not draw that widget (leaving the page, or a cost input
another schedule hides); ``restore``/``remember`` keep a copy so the sidebar comes back as the visitor left it.
"""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

KEPT = "_kept_widget_values"
NOW = "_page_now"
SEEN = "_pages_seen"
QUERIES = "_page_queries"
PROJECTOR_KEY = "projector"
"""The one URL key every page shares."""


def opened_link(page: str, keys: Iterable[str]) -> dict[str, str] | None:
    """This page's keys from the address bar when the visitor opened a link to it (see [Note: the URL follows
    the widgets]); None on every other run. Call once per run, before drawing the widgets."""
    context = get_script_run_ctx()
    history = bool(context is not None and context.is_history_navigation)
    seen: set = st.session_state.setdefault(SEEN, set())
    arrived = st.session_state.get(NOW) != page
    first = page not in seen
    seen.add(page)
    st.session_state[NOW] = page
    if not (first or history or arrived):
        return None
    wanted = set(keys)
    return {key: value for key, value in st.query_params.to_dict().items() if key in wanted}


def write_url(page: str, query: dict[str, str]) -> None:
    """Show ``query`` in the address bar (only when it differs: an equal write would add a history entry) and
    keep it for the sidebar's link to this page."""
    st.session_state.setdefault(QUERIES, {})[page] = query
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def page_query(page: str, default: dict[str, str]) -> dict[str, str]:
    """The query a link to ``page`` carries: what the page last showed, or its defaults."""
    return st.session_state.get(QUERIES, {}).get(page, default)


def restore(defaults: dict[str, object]) -> None:
    """Before drawing widgets: bring back values Streamlit dropped, or seed the defaults."""
    kept = st.session_state.setdefault(KEPT, {})
    for key, default in defaults.items():
        if key not in st.session_state:
            st.session_state[key] = kept.get(key, default)


def remember(keys: Iterable[str]) -> None:
    """After drawing widgets: keep their values for the next time the page is drawn."""
    kept = st.session_state.setdefault(KEPT, {})
    for key in keys:
        if key in st.session_state:
            kept[key] = st.session_state[key]


def seed(values: dict[str, object]) -> None:
    """Set widget values (from a link) before the widgets are drawn."""
    kept = st.session_state.setdefault(KEPT, {})
    for key, value in values.items():
        st.session_state[key] = value
        kept[key] = value


def keep_last_good(page: str, result) -> None:
    st.session_state[f"_last_good_{page}"] = result


def last_good(page: str):
    return st.session_state.get(f"_last_good_{page}")
