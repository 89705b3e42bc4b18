"""The schedule is data, and a family's generator is the few lines that write it: the code toggle beside a
family's chart shows them (Streamlit's hello app shows its own code the same way)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import streamlit as st

from engine.schedules import Family

SCHEDULES_PACKAGE = "engine.schedules"


def generator_sources(family: Family) -> list[tuple[str, str]]:
    """(qualified name, source) of the family's generator, then of each function of ``engine.schedules`` it
    calls by name (one level: the phases its docstring cites), in the order it names them."""
    build = inspect.unwrap(family.build)
    shown: list[Callable] = [build]
    for name in build.__code__.co_names:
        helper = build.__globals__.get(name)
        if inspect.isfunction(helper) and _taught(helper) and helper not in shown:
            shown.append(helper)
    return [(f"{function.__module__}.{function.__name__}", inspect.getsource(function)) for function in shown]


def show_generator_code(family: Family, key: str) -> None:
    """A toggle that shows the family's generator and the helpers it calls, with its source cited."""
    if not st.toggle("Show the generator's code", key=key, help="The pure function that writes this schedule."):
        return
    st.caption(f"{family.title} — {family.source}. Each rank's list is built by these lines; nothing else decides it.")
    for name, source in generator_sources(family):
        st.markdown(f"`{name}`")
        st.code(source, language="python", line_numbers=True)


def _taught(function: Callable) -> bool:
    """A schedule-building function, not an input check (``engine.schedules.common`` checks sizes)."""
    module = function.__module__
    return module.startswith(SCHEDULES_PACKAGE) and module != f"{SCHEDULES_PACKAGE}.common"
