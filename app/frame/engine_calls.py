"""The engine calls the pages make, cached once per server: pure and deterministic, so one cache serves every
visitor, bounded in entries so a public server's memory stays flat.

``st.cache_resource``, not ``st.cache_data``: the results (``Schedule``, ``Timeline``, a CSV reading) are
frozen, so every rerun can share the same objects instead of unpickling a copy — at 32 ranks × 256
micro-batches that copy was 11–17 MB and most of a rerun. Nothing downstream may mutate them (the charts and
tables build new frames; ``tests/test_app.py`` checks a cached timeline is unchanged after a page draws it).
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import streamlit as st

from app.frame.lab_settings import LabSettings
from engine import Costs, Schedule, Timeline, build_schedule, read_csv, simulate, validate
from engine.attribution import attribute_simulated

CACHE_ENTRIES = 32


@st.cache_resource(show_spinner=False, max_entries=CACHE_ENTRIES)
def simulated(settings: LabSettings) -> tuple[Schedule, Timeline]:
    """One configuration's schedule and simulated step: the same settings give the same timeline instantly."""
    schedule = build_schedule(settings.family, settings.num_ranks, settings.num_microbatches, settings.requested_chunks)
    return schedule, simulate(schedule, settings.costs())


FIGURE_ENTRIES = 16
"""Drawn figures kept: a 32 × 256 Gantt with its JSON is about 4 MB (tracemalloc), so at most about 64 MB."""


@st.cache_resource(show_spinner=False, max_entries=FIGURE_ENTRIES)
def playground_gantt(settings: LabSettings, projector: bool) -> tuple[go.Figure, dict]:
    """The Playground's Gantt of a configuration, and the JSON the page sends (``live_chart``): built and
    serialised once per server (22–31 ms and 9–13 ms at 4 × 8 and 32 × 256 on this host), so a visitor who moves
    a slider back, or a class that opens the same link, gets it at once. Shared: nothing may change either."""
    from app.charts import timeline_figure

    _, timeline = simulated(settings)
    figure = timeline_figure(timeline, title=settings.title(), projector=projector)
    return figure, json.loads(figure.to_json())


@st.cache_resource(show_spinner=False, max_entries=CACHE_ENTRIES)
def simulated_csv(text: str, costs: Costs):
    """A pasted schedule: read, validated (a ScheduleError draws the grid), simulated."""
    reading = read_csv(text, name="edited")
    schedule = validate(reading.schedule)
    return reading, simulate(schedule, costs, check=False)


@st.cache_resource(show_spinner=False, max_entries=CACHE_ENTRIES)
def idle_attribution(_schedule, costs: Costs, _timeline, *, key: object):
    """The idle time split by cause (four more simulations of the same schedule), once per configuration:
    ``key`` names the configuration (the schedule and timeline are the cached ones for it)."""
    return attribute_simulated(_schedule, costs, _timeline)


@st.cache_resource(show_spinner="Planning: simulating one pipeline…", max_entries=CACHE_ENTRIES)
def planned(request):
    """The Plan page's engine call (``engine.scale.plan``) for a ``PlanRequest``: the library call
    ``python -m engine plan`` makes with the same settings."""
    from engine.scale import plan

    return plan(*request.resolve())
