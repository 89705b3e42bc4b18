"""The pipeline-parallelism lab's engine: schedule IR, generators, validator, simulator, timelines.

The names below load on first use (PEP 562), so ``python -m engine`` reaches the command line's ``main`` —
which installs the signal handlers — before pandas and the simulator are imported; ``from engine import
Timeline`` works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "UNIT": "costs",
    "Costs": "costs",
    "ScheduleError": "dependencies",
    "Action": "ir",
    "Kind": "ir",
    "Overlap": "ir",
    "Schedule": "ir",
    "read_csv": "pytorch_csv",
    "read_csv_file": "pytorch_csv",
    "FAMILIES": "schedules",
    "build_schedule": "schedules",
    "simulate": "simulator",
    "Timeline": "timeline",
    "validate": "validation",
}
"""Each public name → the module of this package that defines it."""

__all__ = sorted(_HOMES, key=str.lower)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly (``as``: re-exported)
    from .costs import UNIT as UNIT
    from .costs import Costs as Costs
    from .dependencies import ScheduleError as ScheduleError
    from .ir import Action as Action
    from .ir import Kind as Kind
    from .ir import Overlap as Overlap
    from .ir import Schedule as Schedule
    from .pytorch_csv import read_csv as read_csv
    from .pytorch_csv import read_csv_file as read_csv_file
    from .schedules import FAMILIES as FAMILIES
    from .schedules import build_schedule as build_schedule
    from .simulator import simulate as simulate
    from .timeline import Timeline as Timeline
    from .validation import validate as validate
