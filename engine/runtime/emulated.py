"""The emulated backend: every rank in this process, each action run for real and timed, then placed on a
virtual clock per device at max(device free, inputs ready + transfer) — what a machine with one device per
rank would show, on any number of cores. The durations are measured; the device clocks are virtual.

Durations are the thread's CPU time on the CPU (CUDA events on a GPU), so a busy machine barely moves them;
after ``warmup_steps`` thrown-away steps, ``repeats`` steps are measured and each action's median is placed.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import torch

from ..dependencies import walk
from ..ir import Action, Kind
from .config import RunConfig
from .devices import choose_devices, device_label
from .errors import ActionFailed
from .gradients import gradient_errors, reference_gradients
from .progress import Progress, no_progress
from .result import RunResult, assemble
from .stage import build_worker
from .timing import CLOCKS, ActionClock, median_and_spread, one_intra_op_thread


def run_emulated(config: RunConfig, *, progress: Progress = no_progress) -> RunResult:
    devices = choose_devices(config)
    on_cpu = devices[0].type == "cpu"
    with one_intra_op_thread() if on_cpu else contextlib.nullcontext():
        return _measure(config, devices, progress)


def _measure(config: RunConfig, devices: list[torch.device], progress: Progress) -> RunResult:
    plan = config.plan
    c = plan.compiled
    workers = [build_worker(config, rank, devices[rank]) for rank in range(config.num_ranks)]
    clocks = [ActionClock(device) for device in devices]
    slot_rank = np.repeat(np.arange(config.num_ranks), np.diff(c.rank_first_slot)).tolist()
    first_action = c.slot_first_action.tolist()
    stage, kind, microbatch = c.stage.tolist(), c.kind.tolist(), c.microbatch.tolist()
    from_neighbour, makes, sends_to = c.from_neighbour.tolist(), c.makes.tolist(), c.sends_to.tolist()
    owner = c.owner.tolist()
    steps = config.warmup_steps + config.repeats
    total = steps * c.num_slots
    durations = np.zeros((config.repeats, c.num_actions))
    copies: list[float] = []
    step_cpu_ms = wall_ms = timed_ms = 0.0

    for step in range(steps):
        measuring = step >= config.warmup_steps
        for worker in workers:
            worker.zero_grad()
        inbox: dict[int, torch.Tensor] = {}  # hand-off key -> tensor waiting for its consumer
        handles: list = [None] * c.num_actions
        step_copies: list[float] = []
        memory, peak = np.zeros(c.num_actions), np.zeros(c.num_actions)
        cpu_begin, wall_begin = time.thread_time(), time.perf_counter()
        for done, flat in enumerate(plan.order):
            rank = slot_rank[flat]
            worker, clock = workers[rank], clocks[rank]
            for i in range(first_action[flat], first_action[flat + 1]):
                action = Action(stage[i], Kind(kind[i]), microbatch[i])
                incoming = inbox.pop(from_neighbour[i]) if from_neighbour[i] >= 0 else None
                token = clock.start()
                try:
                    output = worker.perform(action, incoming)
                except Exception as error:
                    raise ActionFailed(rank, action, error) from error
                handles[i] = clock.stop(token)
                if sends_to[i] >= 0 and output is not None:
                    consumer = owner[sends_to[i]]
                    inbox[makes[i]] = _transfer(output, devices[consumer], clock, consumer != rank, step_copies)
                memory[i] = worker.memory_bytes()
                peak[i] = worker.peak_during
            progress(
                step * c.num_slots + done + 1,
                total,
                f"{'step' if measuring else 'warm-up'} {step + 1}/{steps}, rank {rank}",
            )
        for clock in clocks:
            clock.finish()
        if measuring:
            durations[step - config.warmup_steps] = [clocks[c.rank[i]].milliseconds(h) for i, h in enumerate(handles)]
            step_copy_ms = [clocks[0].milliseconds(h) for h in step_copies]
            copies += step_copy_ms
            timed_ms = float(durations[step - config.warmup_steps].sum()) + sum(step_copy_ms)
            step_cpu_ms = (time.thread_time() - cpu_begin) * 1e3
            wall_ms = (time.perf_counter() - wall_begin) * 1e3

    # place the measured durations on virtual device clocks: the medians for the timeline, each repeat for
    # the spread of the makespan
    transfer_ms = (
        config.transfer_ms if config.transfer_ms is not None else (float(np.median(copies)) if copies else 0.0)
    )
    median, low, high = median_and_spread(durations)
    starts, ends, _ = walk(plan.schedule, np.bincount(c.slot, weights=median, minlength=c.num_slots), transfer_ms)
    makespans = [
        max(walk(plan.schedule, np.bincount(c.slot, weights=d, minlength=c.num_slots), transfer_ms).ends, default=0.0)
        for d in durations
    ]

    reference_loss, reference = reference_gradients(config.model)
    errors = {}
    for worker in workers:
        errors.update(gradient_errors(plan, worker, reference))
    loss = sum(sum(worker.losses.values()) for worker in workers)
    # bookkeeping: the step's CPU time outside the timed actions and copies (CPU clock only)
    overhead = (
        max(0.0, step_cpu_ms - timed_ms) / step_cpu_ms if step_cpu_ms and clocks[0].kind == "thread_cpu" else None
    )
    notes = [
        f"emulated: the durations are measured ({CLOCKS[clocks[0].kind]}; median of {config.repeats} "
        f"step(s) after {config.warmup_steps} warm-up), the device clocks are virtual (one device per rank)"
    ]
    if len(set(devices)) < len(devices) and devices[0].type == "cuda":
        notes.append("several ranks share a GPU: memory is torch.cuda.memory_allocated of the shared device")
    if config.transfer_ms is None:
        notes.append(f"transfer: median measured activation copy, {transfer_ms:.4f} ms over {len(copies)} copies")
    return assemble(
        config,
        starts=starts,
        ends=ends,
        compute_ms=median,
        memory_bytes=memory,
        memory_peak=peak,
        transfer_ms=transfer_ms,
        loss=loss,
        reference_loss=reference_loss,
        max_grad_error=max(errors.values()),
        device=device_label(devices),
        wall_ms_per_step=wall_ms,
        overhead_fraction=overhead,
        notes=tuple(notes),
        clock=clocks[0].kind,
        makespan_spread=(min(makespans), max(makespans)),
        duration_min=low,
        duration_max=high,
    )


def _transfer(
    tensor: torch.Tensor, device: torch.device, clock: ActionClock, crosses: bool, copies: list
) -> torch.Tensor:
    """Hand an output to the consumer stage: a real copy (timed by the producer's clock) when it lives on
    another device."""
    if not crosses:
        return tensor
    token = clock.start()
    copied = tensor.to(device, copy=True)
    copies.append(clock.stop(token))
    return copied
