"""One runtime experiment (``RunConfig``) and what it derives once (``RunPlan``): torch-free, so bad input
is refused before PyTorch is even imported."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..dependencies import CompiledSchedule, compiled
from ..ir import Schedule, all_actions
from ..limits import whole_number
from ..model_config import ModelConfig, partition
from ..pytorch_csv import read_csv
from ..schedules import build_schedule
from ..validation import validate
from ..walk import execution_order
from .clocks import CLOCK_CHOICES, INSTRUCTIONS
from .interference import ESTIMATORS

BACKENDS = ("emulated", "distributed")
DEVICES = ("auto", "cpu", "cuda")
MAX_STEPS = 100


@dataclass(frozen=True)
class RunPlan:
    """The validated schedule and the split of the model, built once per config and passed down to the
    backend, the worker and the result (one build, one structure check, one untimed walk)."""

    schedule: Schedule
    stage_layers: tuple[int, ...]
    """Blocks on each stage."""

    @property
    def compiled(self) -> CompiledSchedule:
        return compiled(self.schedule)

    @property
    def order(self) -> np.ndarray:
        """An order of the slots (flat indices) one process can run them in."""
        return execution_order(self.schedule)


EDITED = "edited"
"""The family name of a schedule run from the editor's CSV (``RunConfig.from_csv``)."""


@dataclass(frozen=True)
class FailurePoint:
    """Where a test injects a failure: ``rank`` raises as it starts ``action``."""

    rank: int
    action: str
    """The action's text ("1F3"), compared with the text of each action the rank runs: a text no action
    writes (say "1F03") is refused, not read as another action."""

    @classmethod
    def parse(cls, text: str) -> FailurePoint:
        """Read "RANK:ACTION" such as "1:1F3"."""
        rank, sep, action = text.partition(":")
        if not sep or not rank.isdigit() or not action:
            raise ValueError(f"fail_at must look like RANK:ACTION, e.g. 1:1F3; got {text!r}")
        return cls(int(rank), action)


@dataclass(frozen=True)
class RunConfig:
    """One runtime experiment: a schedule executed on a toy model."""

    family: str = "1f1b"
    """Schedule family name (``engine.schedules.FAMILIES``)."""
    num_ranks: int = 4
    """p: pipeline ranks (devices)."""
    num_microbatches: int = 8
    """m: micro-batches per step; must divide the batch."""
    num_chunks: int | None = None
    """v: model chunks per rank, for families that take it."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The toy model and its data."""
    partition: str = "balanced"
    """"balanced", "llama3" or blocks per stage such as "4,5,5,4"."""
    backend: str = "emulated"
    """"emulated" (one process, virtual device clocks) or "distributed" (one process per rank)."""
    device: str = "auto"
    """"auto" (one GPU per rank when there are enough, else CPU), "cpu" or "cuda"."""
    recompute: bool = False
    """Keep only stage inputs in the forward; re-run it before the backward."""
    warmup_steps: int = 1
    """Steps run and thrown away first: they pay one-off costs (autograd's start-up, ~0.5 s in a fresh
    process; first-touch allocations)."""
    repeats: int = 3
    """Measured steps after the warm-up: the timeline uses each action's estimate over them (``estimator``), the
    spread its min and max. Weights are not updated between steps, so every step is checked against the same
    unsplit reference."""
    estimator: str = "min"
    """Emulated: each action's cost from its repeats — "min" (the fastest: other work on the machine can only
    slow an action down, see [Note: interference only slows]) or "median". The distributed backend shows one
    real step, the one with the median wall time, and predicts from the median durations."""
    clock: str = "auto"
    """"auto" (thread CPU time, CUDA events on a GPU, wall clock when distributed) or "instructions" (emulated on
    the CPU: instructions retired, where Linux's perf_event_open is allowed; ``engine.runtime.perf``)."""
    transfer_ms: float | None = None
    """Emulated: time for an activation to reach another device; None = measured (the copy's own time)."""
    timeout_s: float = 30.0
    """Distributed: how long a rank may wait for another before the run is ended."""
    fail_at: str | None = None
    """Inject a failure, "RANK:ACTION" such as "1:1F3" (tests of the failure path); read once into ``failure``."""
    edited_schedule: Schedule | None = None
    """A schedule to run instead of a family (the editor's "run it for real"), made by ``from_csv`` from
    PyTorch's CSV; ``family``, ``num_ranks``, ``num_microbatches`` and ``num_chunks`` are then its own
    ("edited", its p, its m, None)."""

    @classmethod
    def from_csv(cls, schedule_csv: str, **settings: Any) -> RunConfig:
        """The experiment of a schedule in PyTorch's CSV format: the CSV read once, its sizes as the config's.
        ``settings``: any other field (model, backend, repeats, ...)."""
        schedule = read_csv(schedule_csv, name=EDITED).schedule
        return cls(
            family=EDITED,
            num_ranks=schedule.num_ranks,
            num_microbatches=schedule.num_microbatches,
            num_chunks=None,
            edited_schedule=schedule,
            **settings,
        )

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        whole_number("warm-up steps", self.warmup_steps, 0, MAX_STEPS)
        whole_number("repeats", self.repeats, 1, MAX_STEPS)
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        if self.clock not in CLOCK_CHOICES:
            raise ValueError(f"clock must be one of {', '.join(CLOCK_CHOICES)}, got {self.clock!r}")
        if self.clock == INSTRUCTIONS and (self.backend != "emulated" or self.device == "cuda"):
            raise ValueError(
                "--clock instructions times the emulated backend's actions on the CPU; the distributed backend "
                "keeps the wall clock and a GPU its CUDA events"
            )
        if self.edited_schedule is not None:
            edited = self.edited_schedule
            sizes = (self.family, self.num_ranks, self.num_microbatches, self.num_chunks)
            if sizes != (EDITED, edited.num_ranks, edited.num_microbatches, None):
                raise ValueError(
                    f"an edited schedule runs as family {EDITED!r} with its own {edited.num_ranks} ranks and "
                    f"{edited.num_microbatches} micro-batches and no chunks, got {sizes}; use RunConfig.from_csv"
                )
        if self.model.batch % self.num_microbatches:
            b, m = self.model.batch, self.num_microbatches
            raise ValueError(
                f"batch ({b}) must split into {m} equal micro-batches: {b} = {b // m}×{m} + {b % m}; "
                f"try a batch of {max(m, b - b % m)}"
            )
        if self.transfer_ms is not None and not 0 <= self.transfer_ms < float("inf"):
            raise ValueError(f"transfer time must be a finite number ≥ 0 ms, got {self.transfer_ms}")
        if not 0 < self.timeout_s < float("inf"):
            raise ValueError(f"timeout must be a finite number > 0 s, got {self.timeout_s}")
        _ = self.failure  # a malformed failure point fails here
        _ = self.plan  # a bad schedule, split or failure point fails here, before any work

    @cached_property
    def failure(self) -> FailurePoint | None:
        """``fail_at`` read (once) into a rank and an action's text; None when no failure is injected."""
        return None if self.fail_at is None else FailurePoint.parse(self.fail_at)

    @cached_property
    def plan(self) -> RunPlan:
        if self.edited_schedule is not None:
            schedule = validate(self.edited_schedule)
        else:
            schedule = validate(build_schedule(self.family, self.num_ranks, self.num_microbatches, self.num_chunks))
        failure = self.failure
        if failure is not None:
            if failure.rank >= self.num_ranks:
                raise ValueError(
                    f"fail_at {self.fail_at}: there is no rank {failure.rank} (ranks 0..{self.num_ranks - 1})"
                )
            if failure.action not in {str(a) for r, a in all_actions(schedule) if r == failure.rank}:
                raise ValueError(f"fail_at {self.fail_at}: rank {failure.rank} never runs {failure.action}")
        per_copy = partition(self.model.layers, schedule.route_length, self.partition)  # DualPipe: one copy's
        return RunPlan(schedule, tuple(per_copy * schedule.copies))

    def failure_for(self, rank: int) -> str | None:
        """The action's text at which ``rank`` fails (None: it does not)."""
        failure = self.failure
        return failure.action if failure is not None and failure.rank == rank else None
