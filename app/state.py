"""One visitor's state across reruns and pages: widget values that survive leaving a page, the URL kept in
step with the widgets, and the last result that worked.

Streamlit drops a widget's value when a run does not draw that widget (leaving the page, or a cost input
that another schedule hides); ``restore``/``remember`` keep a copy in ``st.session_state`` so the sidebar
comes back as the visitor left it.
"""

from __future__ import annotations

import streamlit as st

KEPT = "_kept_widget_values"


def restore(keys: list[str], defaults: dict[str, object]) -> None:
    """Before drawing widgets: bring back values Streamlit dropped, or seed the defaults."""
    kept = st.session_state.setdefault(KEPT, {})
    for key in keys:
        if key not in st.session_state:
            st.session_state[key] = kept.get(key, defaults[key])


def remember(keys: list[str]) -> None:
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


def new_link(page: str, keys: tuple[str, ...]) -> dict[str, str] | None:
    """This page's keys in the query string, when this page did not write them itself (a link someone opened or
    edited); another page's keys left in the address bar are not a link to this one."""
    query = {key: value for key, value in st.query_params.to_dict().items() if key in keys and key != "projector"}
    if query and query != st.session_state.get(f"_url_{page}"):
        return query
    return None


def write_link(page: str, query: dict[str, str]) -> None:
    """Keep the address bar in step with the widgets, so the view can be shared."""
    st.session_state[f"_url_{page}"] = {key: value for key, value in query.items() if key != "projector"}
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def keep_last_good(page: str, result) -> None:
    st.session_state[f"_last_good_{page}"] = result


def last_good(page: str):
    return st.session_state.get(f"_last_good_{page}")
