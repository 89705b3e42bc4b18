"""Sidebar widgets several pages share. Keys are prefixed by the page (``pg_``, ``rr_``)."""

import streamlit as st

from engine.schedules import FAMILIES, Family


def schedule_picker(prefix: str, default: str) -> tuple[str, Family]:
    """A select box of every schedule family, by its title."""
    names = list(FAMILIES)
    name = st.selectbox("Schedule", names, index=names.index(default), key=f"{prefix}_schedule",
                        format_func=lambda n: FAMILIES[n].title)
    return name, FAMILIES[name]


def chunks_slider(prefix: str, family: Family, maximum: int) -> int | None:
    """Stages per rank, shown only for the families that have them."""
    if not family.takes_chunks:
        return None
    return st.slider("Stages per rank, v", 2, maximum, 2, key=f"{prefix}_chunks")
