"""A run's outcome: the measured Timeline, the simulator's prediction from the measured costs, and the checks."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..costs import Costs
from ..ir import KIND_LETTERS, Schedule
from ..simulate import simulate, timeline_from_slots
from ..timeline import Timeline
from .setup import RunConfig


@dataclass
class RunResult:
    config: RunConfig
    schedule: Schedule
    measured: Timeline
    """Milliseconds. Emulated: measured durations placed on virtual device clocks. Distributed: wall clock."""
    predicted: Timeline
    """The simulator's timeline for the same schedule under the per-stage costs this run measured."""
    loss: float
    reference_loss: float
    max_grad_error: float
    """Largest ‖g − g_ref‖/‖g_ref‖ over all parameters, against the unsplit model on the full batch."""
    transfer_ms: float
    device: str
    wall_ms_per_step: float
    overhead_fraction: float | None = None
    """Emulated: share of the step's wall time spent outside the timed actions and copies (bookkeeping)."""
    notes: list[str] = field(default_factory=list)

    @property
    def prediction_error(self) -> float:
        """(predicted − measured) / measured makespan."""
        measured = self.measured.makespan
        return 0.0 if measured == 0 else (self.predicted.makespan - measured) / measured

    def summary(self) -> dict:
        measured = self.measured
        return {
            "schedule": self.schedule.name,
            "ranks": self.schedule.num_ranks,
            "microbatches": self.schedule.num_microbatches,
            "stages_per_rank": self.schedule.stages_per_rank,
            "model": self.config.model.kind,
            "backend": self.config.backend,
            "device": self.device,
            "recompute": self.config.recompute,
            "makespan": measured.makespan,
            "time_unit": "ms",
            "bubble_fraction": measured.bubble_fraction,
            "bubble_ratio": measured.bubble_ratio,
            "predicted_makespan": self.predicted.makespan,
            "predicted_bubble_fraction": self.predicted.bubble_fraction,
            "prediction_error": self.prediction_error,
            "loss": self.loss,
            "reference_loss": self.reference_loss,
            "max_grad_error": self.max_grad_error,
            "peak_memory_bytes": [int(v) for v in measured.peak_memory_per_rank()],
            "peak_memory_model": self.predicted.peak_memory_per_rank(),
            "transfer_ms": self.transfer_ms,
            "wall_ms_per_step": self.wall_ms_per_step,
            "overhead_fraction": self.overhead_fraction,
            "num_actions": int(len(measured.frame)),
            "notes": self.notes,
        }


def measured_stage_costs(schedule: Schedule, compute_ms: np.ndarray) -> tuple[tuple[float, float, float, float], ...]:
    """Mean measured duration of F, B, I, W on each stage (0 where a stage has no such action)."""
    compiled = schedule.compiled
    frame = pd.DataFrame({"stage": compiled.stage, "kind": compiled.kind, "ms": compute_ms})
    means = frame.groupby(["stage", "kind"])["ms"].mean()
    return tuple(
        tuple(float(means.get((stage, kind), 0.0)) for kind in range(len(KIND_LETTERS)))
        for stage in range(schedule.num_stages)
    )


def assemble(config: RunConfig, schedule: Schedule, *, starts, ends, compute_ms, memory_bytes, transfer_ms: float,
             waits: pd.DataFrame | None = None, **fields) -> RunResult:
    """Build the measured Timeline and the prediction from the measured costs, side by side."""
    costs = Costs(stage_costs=measured_stage_costs(schedule, np.asarray(compute_ms)), comm=transfer_ms,
                  recompute=config.recompute)
    predicted = simulate(schedule, costs)
    measured = timeline_from_slots(schedule, starts, ends, memory_bytes, source="measured",
                                   compute_ms=np.asarray(compute_ms),
                                   memory_model=predicted.frame["memory_after"].to_numpy())
    measured.waits = waits
    return RunResult(config=config, schedule=schedule, measured=measured, predicted=predicted,
                     transfer_ms=transfer_ms, **fields)
