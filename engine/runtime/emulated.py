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
from .setup import RunConfig, build_worker, choose_devices, gradient_errors, reference
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
    slot_rank = np.repeat(np.arange(config.ranks), [len(r) for r in compiled.slots]).tolist()
    slot_step = [step for r in compiled.slots for step in range(len(r))]
    first_action = np.searchsorted(compiled.slot_index, np.arange(compiled.num_slots)).tolist()
    _, _, order = walk(schedule)  # an order in which one process can run every slot
    bar = Progress(config.steps * compiled.num_slots, f"{schedule.name} emulated", progress)

    for step in range(config.steps):
        for worker in workers:
            worker.zero_grad()
        inbox: dict[tuple[str, int, int], torch.Tensor] = {}
        handles: list = [None] * len(compiled.stage)
        copy_ms: list[float] = []
        memory = np.zeros(len(compiled.stage))
        begin = time.perf_counter()
        for done, flat in enumerate(order):
            rank = slot_rank[flat]
            worker, clock = workers[rank], clocks[rank]
            for offset, (kind, stage, mb) in enumerate(compiled.slots[rank][slot_step[flat]]):
                action = Action(stage, _KINDS[kind], mb)
                incoming = inbox.pop(("act", stage, mb) if kind == 0 else ("grad", stage, mb), None)
                token = clock.start()
                try:
                    output = worker.perform(action, incoming)
                except Exception as error:
                    raise ActionFailed(rank, action, error) from error
                handles[first_action[flat] + offset] = clock.stop(token)
                if output is not None:
                    consumer = stage + 1 if kind == 0 else stage - 1
                    output = _transfer(output, devices[owner[consumer]], owner[consumer] != rank, copy_ms)
                    inbox[("act", consumer, mb) if kind == 0 else ("grad", consumer, mb)] = output
                memory[first_action[flat] + offset] = _memory(worker, devices[rank])
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


def _memory(worker, device: torch.device) -> float:
    if device.type == "cuda":
        return float(torch.cuda.memory_allocated(device))
    return float(worker.activation_bytes())


def _device_label(devices: list[torch.device]) -> str:
    kinds = sorted({d.type for d in devices})
    return "cpu" if kinds == ["cpu"] else ",".join(str(d) for d in devices)
