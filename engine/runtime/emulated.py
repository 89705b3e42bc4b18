"""The emulated backend: every rank in this process, each action run for real and timed, then placed on a
virtual clock per device at max(device free, inputs ready + transfer) — what a machine with one device per
rank would show, on any number of cores. The durations are measured; the device clocks are virtual.

Durations are the thread's CPU time on the CPU (CUDA events on a GPU; instructions retired with ``--clock
instructions``), so time the thread waited for a core is not counted; after ``warmup_steps`` thrown-away steps,
``repeats`` steps are measured and each action's estimate is placed: its fastest repeat by default, which other
work on the machine can only inflate ([Note: interference only slows], ``interference.py``), or its median.
The spread of the repeats and the share of the wall clock the thread ran say when the host was too busy.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..dependencies import CompiledSchedule
from ..walk import walk
from .clocks import CLOCKS, INSTRUCTIONS, THREAD_CPU
from .config import RunConfig
from .devices import choose_devices, device_label
from .execute import InProcess, Watch, execute
from .gradients import gradient_errors, reference_gradients, sum_copies
from .interference import ESTIMATORS, Interference, assess, estimate
from .progress import Progress, no_progress
from .result import Measurement, RunResult, assemble
from .stage import build_worker
from .timing import ActionClock, InstructionCounter, median_and_spread, one_intra_op_thread


def run_emulated(config: RunConfig, *, progress: Progress = no_progress) -> RunResult:
    devices = choose_devices(config)
    on_cpu = devices[0].type == "cpu"
    if config.clock == INSTRUCTIONS and not on_cpu:
        raise ValueError("--clock instructions counts CPU instructions; this run is on a GPU: add --device cpu")
    with one_intra_op_thread() if on_cpu else contextlib.nullcontext():
        counter = InstructionCounter() if config.clock == INSTRUCTIONS else None
        try:
            return _measure(config, devices, progress, counter)
        finally:
            if counter is not None:
                counter.close()


def _measure(
    config: RunConfig, devices: list[torch.device], progress: Progress, counter: InstructionCounter | None
) -> RunResult:
    """Run the steps, place the estimates on virtual device clocks, check the gradients, and write it up."""
    workers = {rank: build_worker(config, rank, devices[rank]) for rank in range(config.num_ranks)}
    kind = INSTRUCTIONS if counter is not None else None
    clocks = {rank: ActionClock(device, kind, counter) for rank, device in enumerate(devices)}
    timings = _time_steps(config, devices, workers, clocks, _Progress(progress, config.plan.compiled, config))
    placed = _place_on_device_clocks(config, timings)
    loss, reference_loss, max_grad_error = _check_gradients(config, workers)
    clock = clocks[0].kind
    # bookkeeping: the step's CPU time outside the timed actions and copies (CPU clock only)
    step_cpu_ms = timings.step_cpu_ms
    overhead = max(0.0, step_cpu_ms - timings.timed_ms) / step_cpu_ms if step_cpu_ms and clock == THREAD_CPU else None
    # the host's share of wall-clock time the thread ran: a CPU question (a GPU's clock is its own)
    on_cpu = devices[0].type == "cpu"
    cpu_share = timings.cpu_total_ms / timings.wall_total_ms if on_cpu and timings.wall_total_ms > 0 else None
    interference = assess(timings.durations, cpu_share)
    return assemble(
        config,
        Measurement(
            starts=placed.starts,
            ends=placed.ends,
            compute_ms=placed.chosen,
            memory_bytes=timings.memory,
            memory_peak=timings.peak,
            transfer_ms=placed.transfer_ms,
            loss=loss,
            reference_loss=reference_loss,
            max_grad_error=max_grad_error,
            device=device_label(devices),
            wall_ms_per_step=timings.wall_ms,
            weight_bytes=tuple(workers[rank].weight_bytes() for rank in range(config.num_ranks)),
            overhead_fraction=overhead,
            notes=_notes(config, devices, clock, interference, placed),
            clock=clock,
            makespan_spread=placed.makespan_spread,
            duration_min=placed.low,
            duration_max=placed.high,
            duration_median=placed.median,
            estimator=config.estimator,
            interference=interference,
        ),
    )


@dataclass(frozen=True)
class _StepTimings:
    """What the measured steps left: every action's duration per step, the copies', the last step's memory."""

    durations: np.ndarray
    """Repeats × actions (compiled order), ms."""
    copies: list[list[float]]
    """Per measured step, its copies' durations (the same copies, in the same order, every step)."""
    memory: np.ndarray
    peak: np.ndarray
    step_cpu_ms: float
    """The last measured step's thread CPU time, its wall time and the timed actions' and copies' sum."""
    wall_ms: float
    timed_ms: float
    cpu_total_ms: float
    """Thread CPU and wall time summed over the measured steps."""
    wall_total_ms: float


def _time_steps(
    config: RunConfig,
    devices: list[torch.device],
    workers: dict,
    clocks: dict[int, ActionClock],
    watch: _Progress,
) -> _StepTimings:
    """Run ``warmup_steps`` thrown-away steps, then ``repeats`` measured ones, timing every action and copy."""
    plan = config.plan
    c = plan.compiled
    actions = [i for slot in plan.order for i in c.slot_actions(slot)]  # every rank's, in an order one process can run
    durations = np.zeros((config.repeats, c.num_actions))
    copies: list[list[float]] = []
    step_cpu_ms = wall_ms = timed_ms = 0.0
    cpu_total_ms = wall_total_ms = 0.0
    for step in range(config.warmup_steps + config.repeats):
        measuring = step >= config.warmup_steps
        for worker in workers.values():
            worker.zero_grad()
        transport = InProcess(c, devices, clocks)
        watch.begin(step)
        cpu_begin, wall_begin = time.thread_time(), time.perf_counter()
        measured = execute(c, actions, workers, clocks, transport, watch)
        for clock in clocks.values():
            clock.finish()
        if measuring:
            durations[step - config.warmup_steps] = [
                clocks[rank].milliseconds(measured.readings[i]) for i, rank in enumerate(c.rank.tolist())
            ]
            step_copy_ms = [clocks[0].milliseconds(reading) for reading in transport.copies]
            copies.append(step_copy_ms)
            timed_ms = float(durations[step - config.warmup_steps].sum()) + sum(step_copy_ms)
            step_cpu_ms = (time.thread_time() - cpu_begin) * 1e3
            wall_ms = (time.perf_counter() - wall_begin) * 1e3
            cpu_total_ms, wall_total_ms = cpu_total_ms + step_cpu_ms, wall_total_ms + wall_ms
    return _StepTimings(
        durations, copies, measured.memory, measured.peak, step_cpu_ms, wall_ms, timed_ms, cpu_total_ms, wall_total_ms
    )


@dataclass(frozen=True)
class _Placed:
    """The estimates placed on virtual device clocks: the timeline's slots and the spread over the repeats."""

    transfer_ms: float
    num_copies: int
    chosen: np.ndarray
    """Per action, the estimate over its repeats (``config.estimator``); the timeline and prediction use it."""
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    makespan_spread: tuple[float, float]


def _place_on_device_clocks(config: RunConfig, timings: _StepTimings) -> _Placed:
    """Walk the schedule with the chosen estimates for the timeline, and with each repeat for the makespan's
    spread; a copy's estimate is taken over the repeats like an action's, then the median over the copies."""
    plan = config.plan
    c = plan.compiled
    copies, durations = timings.copies, timings.durations
    num_copies = len(copies[0]) if copies else 0
    transfer_ms = (
        config.transfer_ms
        if config.transfer_ms is not None
        else (float(np.median(estimate(np.array(copies), config.estimator))) if num_copies else 0.0)
    )
    median, low, high = median_and_spread(durations)
    chosen = estimate(durations, config.estimator)
    starts, ends, _ = walk(plan.schedule, np.bincount(c.slot, weights=chosen, minlength=c.num_slots), transfer_ms)
    makespans = [
        max(walk(plan.schedule, np.bincount(c.slot, weights=d, minlength=c.num_slots), transfer_ms).ends, default=0.0)
        for d in durations
    ]
    return _Placed(transfer_ms, num_copies, chosen, median, low, high, starts, ends, (min(makespans), max(makespans)))


def _check_gradients(config: RunConfig, workers: dict) -> tuple[float, float, float]:
    """The pipeline's loss, the unsplit model's, and the largest relative gradient error against it."""
    reference_loss, reference = reference_gradients(config.model)
    sum_copies({index: stage for w in workers.values() for index, stage in w.stages.items()}, config.plan.schedule)
    errors = {}
    for worker in workers.values():
        errors.update(gradient_errors(config.plan, worker, reference))
    loss = sum(sum(worker.losses.values()) for worker in workers.values())
    return loss, reference_loss, max(errors.values())


def _notes(
    config: RunConfig, devices: list[torch.device], clock: str, interference: Interference, placed: _Placed
) -> tuple[str, ...]:
    """What the reader needs to read the numbers: the clock and estimator, a busy host, a shared GPU, the copy."""
    notes = [
        f"emulated: the durations are measured ({CLOCKS[clock]}; {ESTIMATORS[config.estimator]} "
        f"over {config.repeats} step(s) after {config.warmup_steps} warm-up), the device clocks are virtual "
        f"(one device per rank)"
    ]
    if interference.busy:
        notes.append(interference.sentence)
    if len(set(devices)) < len(devices) and devices[0].type == "cuda":
        notes.append("several ranks share a GPU: memory is torch.cuda.memory_allocated of the shared device")
    if config.transfer_ms is None:
        notes.append(
            f"transfer: measured activation copy, {placed.transfer_ms:.4f} ms (the median over {placed.num_copies} "
            f"copies of each copy's {'fastest' if config.estimator == 'min' else 'median'} repeat)"
        )
    return tuple(notes)


class _Progress(Watch):
    """Reports every finished action as one more of all steps' actions."""

    def __init__(self, progress: Progress, c: CompiledSchedule, config: RunConfig):
        self.progress, self.ranks, self.config = progress, c.rank.tolist(), config
        self.done, self.total = 0, (config.warmup_steps + config.repeats) * c.num_actions
        self.note = ""

    def begin(self, step: int) -> None:
        steps, measuring = self.config.warmup_steps + self.config.repeats, step >= self.config.warmup_steps
        self.note = f"{'step' if measuring else 'warm-up'} {step + 1}/{steps}"

    def finished(self, i: int) -> None:
        self.done += 1
        self.progress(self.done, self.total, f"{self.note}, rank {self.ranks[i]}")
