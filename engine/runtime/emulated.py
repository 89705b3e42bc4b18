"""The emulated backend: every rank in this process, each action run for real and timed, then placed on a
virtual clock per device at max(device free, inputs ready + transfer) — what a machine with one device per
rank would show, on any number of cores. The durations are measured; the device clocks are virtual."""

from __future__ import annotations

import time

import numpy as np
import torch

from ..ir import KIND_LETTERS, Action, Kind
from ..simulate import walk
from .result import RunResult, assemble
from .setup import Handoff, RunConfig, build_worker, choose_devices, gradient_errors, input_of, output_of, reference
from .stage import ActionFailed
from .timing import ActionClock, Progress

_KINDS = [Kind(letter) for letter in KIND_LETTERS]


def run_emulated(config: RunConfig, *, progress: bool = False) -> RunResult:
    schedule = config.build_schedule()
    devices = choose_devices(config)
    workers = [build_worker(config, schedule, rank, devices[rank]) for rank in range(config.ranks)]
    clocks = [ActionClock(device) for device in devices]
    owner = [schedule.rank_of(s) for s in range(schedule.num_stages)]
    compiled = schedule.compiled
    first_slot, first_action = compiled.rank_first_slot, compiled.slot_first_action
    slot_rank = np.repeat(np.arange(config.ranks), np.diff(first_slot)).tolist()
    _, _, order = walk(schedule)  # an order in which one process can run every slot
    bar = Progress(config.steps * compiled.num_slots, f"{schedule.name} emulated", progress)

    for step in range(config.steps):
        for worker in workers:
            worker.zero_grad()
        inbox: dict[Handoff, torch.Tensor] = {}
        handles: list = [None] * len(compiled.stage)
        copy_ms: list[float] = []
        memory = np.zeros(len(compiled.stage))
        begin = time.perf_counter()
        for done, flat in enumerate(order):
            rank = slot_rank[flat]
            worker, clock = workers[rank], clocks[rank]
            for offset, (kind, stage, mb) in enumerate(compiled.slots[rank][flat - first_slot[rank]]):
                action = Action(stage, _KINDS[kind], mb)
                need = input_of(action, schedule.num_stages)
                incoming = inbox.pop(need) if need is not None else None
                token = clock.start()
                try:
                    output = worker.perform(action, incoming)
                except Exception as error:
                    raise ActionFailed(rank, action, error) from error
                handles[first_action[flat] + offset] = clock.stop(token)
                handoff = output_of(action, schedule.num_stages)
                if handoff is not None and output is not None:
                    key, consumer = handoff
                    inbox[key] = _transfer(output, devices[owner[consumer]], owner[consumer] != rank, copy_ms)
                memory[first_action[flat] + offset] = worker.memory_bytes()
            bar.update(step * compiled.num_slots + done + 1, f"step {step + 1}/{config.steps}")
        for clock in clocks:
            clock.finish()
        wall_ms = (time.perf_counter() - begin) * 1e3
    compute_ms = np.array([clocks[compiled.rank[i]].milliseconds(h) for i, h in enumerate(handles)])

    # place the measured durations on virtual device clocks
    transfer_ms = config.transfer_ms if config.transfer_ms is not None else (float(np.mean(copy_ms)) if copy_ms else 0.0)
    slot_ms = np.zeros(compiled.num_slots)
    np.add.at(slot_ms, compiled.slot_index, compute_ms)
    starts, ends, _ = walk(schedule, lambda flat, slot: slot_ms[flat], transfer_ms)

    reference_loss, reference_grads = reference(config)
    errors = {}
    for worker in workers:
        errors.update(gradient_errors(config, schedule, worker, reference_grads))
    loss = sum(sum(worker.losses.values()) for worker in workers)
    overhead = max(0.0, wall_ms - float(compute_ms.sum()) - float(np.sum(copy_ms))) / wall_ms if wall_ms else 0.0
    notes = ["emulated: the durations are measured, the device clocks are virtual (one device per rank)"]
    if len(set(devices)) < len(devices) and devices[0].type == "cuda":
        notes.append("several ranks share a GPU: memory is torch.cuda.memory_allocated of the shared device")
    if config.transfer_ms is None:
        notes.append(f"transfer: mean measured activation copy, {transfer_ms:.4f} ms over {len(copy_ms)} copies")
    return assemble(config, schedule, starts=starts, ends=ends, compute_ms=compute_ms, memory_bytes=memory,
                    transfer_ms=transfer_ms, loss=loss, reference_loss=reference_loss,
                    max_grad_error=max(errors.values()), device=_device_label(devices),
                    wall_ms_per_step=wall_ms, overhead_fraction=overhead, notes=notes)


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


def _device_label(devices: list[torch.device]) -> str:
    kinds = sorted({d.type for d in devices})
    return "cpu" if kinds == ["cpu"] else ",".join(str(d) for d in devices)
