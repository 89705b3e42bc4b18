"""The engine calls the pages make, kept once per server: pure and deterministic, so one store serves every
visitor, bounded by the bytes it holds (``app.frame.kept``) so a public server's memory stays flat whatever
sizes its visitors choose.

Kept as the objects themselves, not pickled copies (``st.cache_data`` would unpickle 11–17 MB at 32 ranks × 256
micro-batches on every rerun): the results (``Schedule``, ``Timeline``, a CSV reading, a figure) are frozen and
shared, so nothing downstream may change them (the charts and tables build new frames).
"""

from __future__ import annotations

import json

import plotly.graph_objects as go

from app.frame.kept import kept
from app.frame.lab_settings import LabSettings
from engine import Costs, Schedule, Timeline, build_schedule, read_csv, simulate, validate
from engine.attribution import attribute_simulated


@kept()
def simulated(settings: LabSettings) -> tuple[Schedule, Timeline]:
    """One configuration's schedule and simulated step: the same settings give the same timeline instantly."""
    schedule = build_schedule(settings.family, settings.num_ranks, settings.num_microbatches, settings.requested_chunks)
    return schedule, simulate(schedule, settings.costs())


@kept()
def playground_gantt(settings: LabSettings, projector: bool) -> tuple[go.Figure, dict]:
    """The Playground's Gantt of a configuration, and the JSON the page sends (``live_chart``): built and
    serialised once per server (22–31 ms and 9–13 ms at 4 × 8 and 32 × 256 on this host), so a visitor who moves
    a slider back, or a class that opens the same link, gets it at once. Shared: nothing may change either."""
    from app.charts import timeline_figure

    _, timeline = simulated(settings)
    figure = timeline_figure(timeline, title=settings.title(), projector=projector)
    return figure, json.loads(figure.to_json())


@kept()
def simulated_csv(text: str, costs: Costs):
    """A pasted schedule: read, validated (a ScheduleError draws the grid), simulated."""
    reading = read_csv(text, name="edited")
    schedule = validate(reading.schedule)
    return reading, simulate(schedule, costs, check=False)


@kept()
def idle_attribution(_schedule, costs: Costs, _timeline, *, key: object):
    """The idle time split by cause (four more simulations of the same schedule), once per configuration:
    ``key`` names the configuration (the schedule and timeline are the cached ones for it)."""
    return attribute_simulated(_schedule, costs, _timeline)


@kept(spinner="Planning: simulating one pipeline…")
def planned(request):
    """The Plan page's engine call (``engine.scale.plan``) for a ``PlanRequest``: the library call
    ``python -m engine plan`` makes with the same settings."""
    from engine.scale import plan

    return plan(*request.resolve())
