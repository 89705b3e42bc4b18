"""What both backends share: the run's configuration, building a rank's stages, and checking gradients."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from ..ir import Action, Kind, Schedule, all_actions, slot_actions
from ..models import (ModelConfig, ToyModel, make_batch, partition, reference_gradients, split_model,
                      stage_parameter_names, to_reference_name)
from ..schedules import build_schedule
from ..validate import validate
from .stage import RankWorker

BACKENDS = ("emulated", "distributed")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class RunConfig:
    """One runtime experiment: a schedule executed on a toy model."""

    schedule: str = "1f1b"
    """Schedule family name."""
    ranks: int = 4
    """p: pipeline ranks (devices)."""
    microbatches: int = 8
    """m: micro-batches per step; must divide the batch."""
    chunks: int | None = None
    """v: stages per rank, for families that take it."""
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
    steps: int = 2
    """Training steps to run; the timeline is the last one's (the first pays one-off costs such as autograd's
    start-up, ~0.5 s in a fresh process). Weights are not
    updated between steps, so every step is checked against the same unsplit reference."""
    transfer_ms: float | None = None
    """Emulated: time for an activation to reach another device; None = measured (the copy's own time)."""
    timeout_s: float = 30.0
    """Distributed: how long a rank may wait for another before the run is ended."""
    fail_at: str | None = None
    """Inject a failure, "RANK:ACTION" such as "1:1F3" (tests of the failure path)."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be a whole number ≥ 1, got {self.steps!r}")
        if self.model.batch % self.microbatches:
            b, m = self.model.batch, self.microbatches
            raise ValueError(f"batch ({b}) must split into {m} equal micro-batches: {b} = {b // m}×{m} + {b % m}; "
                             f"try --batch {max(m, b - b % m)}")
        if self.transfer_ms is not None and not self.transfer_ms >= 0:
            raise ValueError(f"transfer time must be ≥ 0 ms, got {self.transfer_ms}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout must be > 0 s, got {self.timeout_s}")
        if self.fail_at is not None:
            rank, sep, action = self.fail_at.partition(":")
            if not sep or not rank.isdigit() or not action:
                raise ValueError(f"fail_at must look like RANK:ACTION, e.g. 1:1F3; got {self.fail_at!r}")
        self.stage_layers(self.build_schedule())  # a bad schedule or split fails here, before any work

    def build_schedule(self) -> Schedule:
        schedule = validate(build_schedule(self.schedule, self.ranks, self.microbatches, self.chunks))
        if self.fail_at is not None:
            rank, _, action = self.fail_at.partition(":")
            if int(rank) >= self.ranks:
                raise ValueError(f"fail_at {self.fail_at}: there is no rank {rank} (ranks 0..{self.ranks - 1})")
            if action not in {str(a) for slot in schedule.ranks[int(rank)] for a in slot_actions(slot)}:
                raise ValueError(f"fail_at {self.fail_at}: rank {rank} never runs {action}")
        return schedule

    def stage_layers(self, schedule: Schedule) -> list[int]:
        return partition(self.model.layers, schedule.num_stages, self.partition)

    def failure_for(self, rank: int) -> str | None:
        if self.fail_at is None:
            return None
        fail_rank, _, action = self.fail_at.partition(":")
        return action if int(fail_rank) == rank else None


def choose_devices(config: RunConfig) -> list[torch.device]:
    """One device per rank: a GPU each when there are enough (auto), otherwise the CPU."""
    available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if config.device == "cpu" or (config.device == "auto" and available < config.ranks):
        return [torch.device("cpu")] * config.ranks
    if available == 0:
        raise ValueError("--device cuda asked for, but no CUDA device is visible")
    if config.backend == "distributed" and available < config.ranks and "LOCAL_RANK" not in os.environ:
        raise ValueError(f"distributed on cuda needs one GPU per rank: {config.ranks} ranks, {available} GPUs")
    return [torch.device(f"cuda:{rank % available}") for rank in range(config.ranks)]


def build_worker(config: RunConfig, schedule: Schedule, rank: int, device: torch.device) -> RankWorker:
    """The stages rank ``rank`` holds, copied from the seeded full model, and its share of the data."""
    counts = config.stage_layers(schedule)
    model = ToyModel(config.model)
    stages = split_model(model, counts)
    mine = {s.index: s.to(device) for s in stages if schedule.rank_of(s.index) == rank}
    x, target = make_batch(config.model)
    m = config.microbatches
    # clones: a view would share the whole batch's storage, and memory is counted per storage
    inputs = [chunk.to(device).clone() for chunk in x.chunk(m)]
    targets = [chunk.to(device).clone() for chunk in target.chunk(m)]
    split = {(a.stage, a.microbatch) for _, a in all_actions(schedule) if a.kind is Kind.I}
    return RankWorker(rank, mine, inputs, targets, num_stages=schedule.num_stages, split=split,
                      recompute=config.recompute, device=device, fail_at=config.failure_for(rank))


def gradient_errors(config: RunConfig, schedule: Schedule, worker: RankWorker,
                    reference: dict[str, torch.Tensor]) -> dict[str, float]:
    """For each parameter on this rank: ‖g − g_ref‖ / ‖g_ref‖ against the unsplit model's full-batch gradient."""
    names = stage_parameter_names(config.stage_layers(schedule))
    errors = {}
    for index, stage in worker.stages.items():
        for name, parameter in stage.named_parameters():
            global_name = to_reference_name(name, names[index])
            expected = reference[global_name]
            got = parameter.grad
            if got is None:
                errors[global_name] = float("inf")
                continue
            difference = (got.detach().cpu().to(expected.dtype) - expected).norm()
            errors[global_name] = float(difference / expected.norm().clamp_min(1e-30))
    return errors


def reference(config: RunConfig) -> tuple[float, dict[str, torch.Tensor]]:
    return reference_gradients(config.model)


Handoff = tuple[str, int, int]
"""(table, producing stage, micro-batch): "act" for a forward's output, "grad" for an input gradient."""


def input_of(action: Action, num_stages: int) -> Handoff | None:
    """What the action needs from a neighbour stage (DESIGN.md's dependencies), or None.

    F(s) needs F(s−1)'s output; I/B(s) needs I/B(s+1)'s input gradient. W and the ends need nothing."""
    if action.kind is Kind.F:
        return ("act", action.stage - 1, action.microbatch) if action.stage > 0 else None
    if action.kind in (Kind.B, Kind.I) and action.stage < num_stages - 1:
        return ("grad", action.stage + 1, action.microbatch)
    return None


def output_of(action: Action, num_stages: int) -> tuple[Handoff, int] | None:
    """What the action hands on, and the stage that consumes it, or None."""
    if action.kind is Kind.F and action.stage < num_stages - 1:
        return ("act", action.stage, action.microbatch), action.stage + 1
    if action.kind in (Kind.B, Kind.I) and action.stage > 0:
        return ("grad", action.stage, action.microbatch), action.stage - 1
    return None


def activation_shape(config: RunConfig) -> tuple[int, ...]:
    """Shape of what crosses a stage boundary (activation or its gradient): (N/m, H) or (N/m, T, H)."""
    rows = config.model.batch // config.microbatches
    if config.model.kind == "mlp":
        return (rows, config.model.hidden)
    return (rows, config.model.seq_len, config.model.hidden)
