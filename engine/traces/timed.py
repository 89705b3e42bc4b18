"""A compute slot of a rank as read from its trace (``engine.traces.actions`` reads them, ``blocking`` trims
them)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Action, Overlap


@dataclass(frozen=True)
class TimedAction:
    """One compute slot of a rank: what it ran and when (µs on the rank's trace clock)."""

    slot: Action | Overlap
    start: float
    """When the span began (the rank turned to it)."""
    compute_start: float
    """When its input was there and it computed (= ``start`` when it waited for nothing)."""
    end: float
    inferred: bool = False
    """Read from autograd events, not from a label (``Schedule1F1B`` writes none)."""
