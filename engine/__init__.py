"""The pipeline-parallelism lab's engine: schedule IR, generators, validator, simulator, timelines."""

from .costs import UNIT, Costs
from .dependencies import ScheduleError
from .ir import Action, Kind, Overlap, Schedule
from .pytorch_csv import read_csv, read_csv_file
from .schedules import FAMILIES, build_schedule
from .simulate import simulate
from .timeline import Timeline
from .validate import validate

__all__ = [
    "Action",
    "Costs",
    "FAMILIES",
    "Kind",
    "Overlap",
    "Schedule",
    "ScheduleError",
    "Timeline",
    "UNIT",
    "build_schedule",
    "read_csv",
    "read_csv_file",
    "simulate",
    "validate",
]
