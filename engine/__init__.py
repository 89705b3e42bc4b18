"""The pipeline-parallelism lab's engine: schedule IR, generators, validator, simulator, timelines."""

from .costs import UNIT, Costs
from .ir import Action, Kind, Overlap, Schedule
from .schedules import FAMILIES, build_schedule
from .simulate import simulate
from .timeline import Timeline
from .validate import ScheduleError, validate

__all__ = [
    "Action", "Costs", "FAMILIES", "Kind", "Overlap", "Schedule", "ScheduleError", "Timeline", "UNIT",
    "build_schedule", "simulate", "validate",
]
