"""A run's outcome: the measured Timeline, the simulator's prediction from the measured costs, and the checks.
Torch-free: results travel between processes and into the app as plain numbers."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..attribution import IdleAttribution, attribute, measured_levels
from ..costs import COST_OF_KIND, Costs, Durations, resolved
from ..dependencies import compiled
from ..ir import Kind, Schedule
from ..simulator import simulate
from ..timeline import Timeline, before_on_rank
from .clocks import CLOCKS, WALL
from .config import RunConfig
from .interference import Interference

GRADIENT_TOLERANCE = 1e-5
"""A run's gradients "match" the unsplit model when every parameter's relative difference is below this."""


@dataclass(frozen=True)
class RunResult:
    config: RunConfig
    schedule: Schedule
    measured: Timeline
    """Milliseconds. Emulated: each action's estimated duration (``estimator``) placed on virtual device clocks.
    Distributed: wall clock. Per action, ``compute_ms`` is the estimate the prediction uses, ``duration_min``,
    ``duration_median`` and ``duration_max`` its measured repeats' fastest, median and slowest."""
    predicted: Timeline
    """The simulator's timeline for the same schedule under the per-stage costs this run measured."""
    loss: float
    reference_loss: float
    max_grad_error: float
    """Largest ‖g − g_ref‖/‖g_ref‖ over all parameters, against the unsplit model on the full batch."""
    transfer_ms: float
    device: str
    wall_ms_per_step: float
    w_memory_fraction: float = 0.5
    """Share of a micro-batch's activation bytes still held between I and W: measured when the schedule
    splits the backward, else the model's default."""
    overhead_fraction: float | None = None
    """Emulated on CPU: share of the step's CPU time spent outside the timed actions and copies (bookkeeping)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    clock: str = WALL
    """How actions were timed: one of ``CLOCKS`` (see ``engine.runtime.timing``)."""
    makespan_spread: tuple[float, float] | None = None
    """The smallest and largest makespan over the measured steps (the timeline shows the medians)."""
    prediction_costs: Costs | None = None
    """What the prediction was simulated with: the measured per-stage costs and transfer time."""
    estimator: str = "median"
    """How each action's duration was estimated from its repeats (``interference.ESTIMATORS``)."""
    interference: Interference | None = None
    """How disturbed the measurement was, and the busy-host notice (emulated on the CPU; None otherwise).
    When ``interference.busy``, its sentence is also in ``notes``."""
    weight_bytes: tuple[int, ...] | None = None
    """Per rank, the bytes of the parameters it held (counted from its modules), beside the activations."""

    def __post_init__(self) -> None:
        assert self.clock in CLOCKS, f"a backend reported an unknown clock {self.clock!r}"

    @property
    def prediction_error(self) -> float:
        """(predicted − measured) / measured makespan."""
        measured = self.measured.makespan
        return 0.0 if measured == 0 else (self.predicted.makespan - measured) / measured

    def bytes_per_unit(self) -> list[float]:
        """Per rank, the measured bytes of the simulator's memory unit (one micro-batch through one rank's share):
        what the forwards added, measured, over what the memory model says they add."""
        frame = self.measured.frame
        added = frame["memory_after"].to_numpy() - before_on_rank(frame["memory_after"], frame["rank"])
        added_model = frame["memory_model"].to_numpy() - before_on_rank(frame["memory_model"], frame["rank"])
        forward = (frame["kind"] == "F").to_numpy()
        result = []
        for rank in range(self.measured.num_ranks):
            mine = forward & (frame["rank"].to_numpy() == rank)
            units = added_model[mine].sum()
            result.append(float(added[mine].sum() / units) if units > 0 else 0.0)
        return result

    def modelled_memory_curve(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """The memory model of rank ``rank`` over the predicted step, in bytes: the predicted Timeline's memory
        series × the rank's measured bytes per unit. Its maximum is ``modelled_peak_bytes()[rank]``."""
        x, units = self.predicted.memory_curve(rank)
        return x, units * self.bytes_per_unit()[rank]

    def modelled_peak_bytes(self) -> list[float]:
        per_unit = self.bytes_per_unit()
        return [peak * unit for peak, unit in zip(self.predicted.peak_memory_per_rank(), per_unit, strict=True)]

    def prediction_error_per_rank(self) -> list[float]:
        """(predicted − measured) / measured of each rank's last end."""
        measured = self.measured.frame.groupby("rank")["end"].max()
        predicted = self.predicted.frame.groupby("rank")["end"].max()
        return [
            float((predicted[r] - measured[r]) / measured[r]) if measured.get(r, 0) else 0.0
            for r in range(self.measured.num_ranks)
        ]

    def idle_attribution(self) -> IdleAttribution:
        """Each rank's measured idle time split by cause ([Note: idle attribution], ``engine.attribution``): the
        textbook bubble, the stages' imbalance and cost ratios and the transfers as measured, and the rest."""
        assert self.prediction_costs is not None and self.prediction_costs.stage_costs is not None
        rows = self.prediction_costs.stage_costs
        return attribute(self.schedule, measured_levels(rows, self.prediction_costs), self.measured)

    def summary(self) -> dict:
        measured = self.measured
        return {
            "schedule": self.schedule.name,
            "ranks": self.schedule.num_ranks,
            "microbatches": self.schedule.num_microbatches,
            "chunks": self.schedule.num_chunks,
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
            "gradients_match": self.max_grad_error < GRADIENT_TOLERANCE,
            "peak_memory_bytes": [int(v) for v in measured.peak_memory_per_rank()],
            "peak_memory_model": self.predicted.peak_memory_per_rank(),
            "weight_bytes": list(self.weight_bytes) if self.weight_bytes is not None else None,
            "w_memory_fraction": self.w_memory_fraction,
            "transfer_ms": self.transfer_ms,
            "wall_ms_per_step": self.wall_ms_per_step,
            "overhead_fraction": self.overhead_fraction,
            "num_actions": int(len(measured.frame)),
            "clock": self.clock,
            "repeats": self.config.repeats,
            "makespan_spread": list(self.makespan_spread) if self.makespan_spread else None,
            "estimator": self.estimator,
            "interference": self.interference.as_dict() if self.interference else None,
            "prediction_error_per_rank": self.prediction_error_per_rank(),
            "idle_by_cause": self.idle_attribution().as_dict(),
            "notes": list(self.notes),
        }


def measured_stage_costs(schedule: Schedule, compute_ms: np.ndarray) -> tuple[Durations, ...]:
    """Mean measured duration of each kind on each stage (0 where a stage has no such action), keyed as
    ``Costs.durations``; F&B, which times no single action, is F + B (``resolved``)."""
    c = compiled(schedule)
    frame = pd.DataFrame({"stage": c.stage, "kind": c.kind, "ms": compute_ms})
    means = frame.groupby(["stage", "kind"])["ms"].mean()
    return tuple(
        resolved({cost.key: float(means.get((stage, kind), 0.0)) for kind, cost in COST_OF_KIND.items()}, measured=True)
        for stage in range(schedule.num_stages)
    )


def measured_w_memory_fraction(schedule: Schedule, memory_bytes: np.ndarray) -> float | None:
    """What share of a micro-batch's bytes is still held after I (W's inputs), from the measured changes:
    1 + Σ(change at I) / Σ(change at the forwards of split micro-batches). None when nothing is split."""
    c = compiled(schedule)
    change = np.asarray(memory_bytes, dtype=float) - before_on_rank(memory_bytes, c.rank)
    is_input = c.kind == Kind.I
    if not is_input.any():
        return None
    split = set(zip(c.stage[is_input].tolist(), c.microbatch[is_input].tolist(), strict=True))
    forwards = [i for i in np.flatnonzero(c.kind == Kind.F) if (c.stage[i], c.microbatch[i]) in split]
    added = change[forwards].sum()
    if added <= 0:
        return None
    return float(np.clip(1.0 + change[is_input].sum() / added, 0.0, 1.0))


@dataclass(frozen=True)
class Measurement:
    """What a backend measured in one run, handed to ``assemble``: times per slot, costs and memory per action
    (compiled order), and the run's checks and notes. The fields without a default are what every backend
    measures; the rest default to what ``RunResult`` assumes when a backend does not report them."""

    starts: np.ndarray | list[float]
    """Per slot (flat), its start and end on the measured timeline, ms."""
    ends: np.ndarray | list[float]
    compute_ms: np.ndarray
    """Per action, the duration the prediction uses (the estimate over the repeats), ms."""
    memory_bytes: np.ndarray
    """Per action, the bytes the rank held after it."""
    transfer_ms: float
    loss: float
    reference_loss: float
    max_grad_error: float
    device: str
    wall_ms_per_step: float
    clock: str
    makespan_spread: tuple[float, float]
    waits: pd.DataFrame | None = None
    """Distributed: the receive waits (rank, start, end, waiting_for, action)."""
    notes: tuple[str, ...] = ()
    duration_min: np.ndarray | None = None
    """Per action, its measured repeats' fastest, slowest and median; None: ``compute_ms``."""
    duration_max: np.ndarray | None = None
    duration_median: np.ndarray | None = None
    memory_peak: np.ndarray | None = None
    """Per action, the most bytes held while it ran; None: ``memory_bytes``."""
    overhead_fraction: float | None = None
    estimator: str = "median"
    interference: Interference | None = None
    weight_bytes: tuple[int, ...] | None = None
    """Per rank, the bytes of the parameters it held."""


def assemble(config: RunConfig, measured: Measurement) -> RunResult:
    """Build the measured Timeline and the prediction from the measured costs, side by side.

    The prediction's memory model uses the share of bytes W still needs after I as measured in this run
    (for these small models nearly all of it: W keeps each layer's input and output gradient)."""
    schedule = config.plan.schedule
    compute_ms = np.asarray(measured.compute_ms)
    w_fraction = None if config.recompute else measured_w_memory_fraction(schedule, measured.memory_bytes)
    costs = Costs.of(
        stage_costs=measured_stage_costs(schedule, compute_ms), comm=measured.transfer_ms, recompute=config.recompute
    )
    if w_fraction is not None:  # else the memory model's default share
        costs = replace(costs, w_memory_fraction=w_fraction)
    predicted = simulate(schedule, costs, check=False)

    def or_compute(values: np.ndarray | None) -> np.ndarray:
        return np.asarray(compute_ms if values is None else values)

    timeline = Timeline.from_slots(
        schedule,
        measured.starts,
        measured.ends,
        measured.memory_bytes,
        source="measured",
        waits=measured.waits,
        comm=measured.transfer_ms,
        compute_ms=compute_ms,
        duration_min=or_compute(measured.duration_min),
        duration_max=or_compute(measured.duration_max),
        duration_median=or_compute(measured.duration_median),
        memory_model=predicted.frame["memory_after"].to_numpy(),
        memory_peak=np.asarray(measured.memory_bytes if measured.memory_peak is None else measured.memory_peak, float),
    )
    return RunResult(
        config=config,
        schedule=schedule,
        measured=timeline,
        predicted=predicted,
        loss=measured.loss,
        reference_loss=measured.reference_loss,
        max_grad_error=measured.max_grad_error,
        transfer_ms=measured.transfer_ms,
        device=measured.device,
        wall_ms_per_step=measured.wall_ms_per_step,
        w_memory_fraction=costs.w_memory_fraction,
        overhead_fraction=measured.overhead_fraction,
        notes=tuple(measured.notes),
        clock=measured.clock,
        makespan_spread=measured.makespan_spread,
        prediction_costs=costs,
        estimator=measured.estimator,
        interference=measured.interference,
        weight_bytes=measured.weight_bytes,
    )
