"""The emulated backend: every rank in this process, each action run for real and timed, then placed on a
virtual clock per device at max(device free, inputs ready + transfer) — what a machine with one device per
rank would show, on any number of cores. The durations are measured; the device clocks are virtual."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..dependencies import walk
from ..ir import Action, Kind
from .config import RunConfig
from .devices import choose_devices, device_label
from .errors import ActionFailed
from .gradients import gradient_errors, reference_gradients
from .result import RunResult, assemble
from .stage import build_worker
from .progress import Progress, no_progress
from .timing import ActionClock


def run_emulated(config: RunConfig, *, progress: Progress = no_progress) -> RunResult:
    plan = config.plan
    c = plan.compiled
    devices = choose_devices(config)
    workers = [build_worker(config, rank, devices[rank]) for rank in range(config.num_ranks)]
    clocks = [ActionClock(device) for device in devices]
    slot_rank = np.repeat(np.arange(config.num_ranks), np.diff(c.rank_first_slot)).tolist()
    first_action = c.slot_first_action.tolist()
    stage, kind, microbatch = c.stage.tolist(), c.kind.tolist(), c.microbatch.tolist()
    from_neighbour, makes, sends_to = c.from_neighbour.tolist(), c.makes.tolist(), c.sends_to.tolist()
    owner = c.owner.tolist()
    total = config.steps * c.num_slots

    for step in range(config.steps):
        for worker in workers:
            worker.zero_grad()
        inbox: dict[int, torch.Tensor] = {}  # hand-off key -> tensor waiting for its consumer
        handles: list = [None] * c.num_actions
        copy_ms: list[float] = []
        memory = np.zeros(c.num_actions)
        begin = time.perf_counter()
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
                    inbox[makes[i]] = _transfer(output, devices[consumer], consumer != rank, copy_ms)
                memory[i] = worker.memory_bytes()
            progress(step * c.num_slots + done + 1, total, f"step {step + 1}/{config.steps}, rank {rank}")
        for clock in clocks:
            clock.finish()
        wall_ms = (time.perf_counter() - begin) * 1e3
    compute_ms = np.array([clocks[c.rank[i]].milliseconds(h) for i, h in enumerate(handles)])

    # place the measured durations on virtual device clocks
    transfer_ms = config.transfer_ms if config.transfer_ms is not None else (float(np.mean(copy_ms)) if copy_ms else 0.0)
    slot_ms = np.bincount(c.slot, weights=compute_ms, minlength=c.num_slots)
    starts, ends, _ = walk(plan.schedule, slot_ms, transfer_ms)

    reference_loss, reference = reference_gradients(config.model)
    errors = {}
    for worker in workers:
        errors.update(gradient_errors(plan, worker, reference))
    loss = sum(sum(worker.losses.values()) for worker in workers)
    overhead = max(0.0, wall_ms - float(compute_ms.sum()) - float(np.sum(copy_ms))) / wall_ms if wall_ms else 0.0
    notes = ["emulated: the durations are measured, the device clocks are virtual (one device per rank)"]
    if len(set(devices)) < len(devices) and devices[0].type == "cuda":
        notes.append("several ranks share a GPU: memory is torch.cuda.memory_allocated of the shared device")
    if config.transfer_ms is None:
        notes.append(f"transfer: mean measured activation copy, {transfer_ms:.4f} ms over {len(copy_ms)} copies")
    return assemble(config, starts=starts, ends=ends, compute_ms=compute_ms, memory_bytes=memory,
                    transfer_ms=transfer_ms, loss=loss, reference_loss=reference_loss,
                    max_grad_error=max(errors.values()), device=device_label(devices),
                    wall_ms_per_step=wall_ms, overhead_fraction=overhead, notes=tuple(notes))


def _transfer(tensor: torch.Tensor, device: torch.device, crosses: bool, copy_ms: list[float]) -> torch.Tensor:
    """Hand an output to the consumer stage: a real copy (timed) when it lives on another device."""
    if not crosses:
        return tensor
    start = time.perf_counter()
    copied = tensor.to(device, copy=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    copy_ms.append((time.perf_counter() - start) * 1e3)
    return copied
