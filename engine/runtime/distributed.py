"""The distributed backend: one process per rank with torch.distributed — gloo on CPU, NCCL when every rank
has its own GPU — started here with ``torch.multiprocessing`` or by ``torchrun`` across nodes.

Each rank runs its own list in order. Before an action it receives what it needs from the rank that made
it (the time blocked in ``recv`` is recorded as a wait, apart from compute); after it, it sends its output
with ``isend`` (never blocking). Because the schedule is validated deadlock-free, this cannot hang; a rank
that raises ends the run: the others see the connection close, the launcher terminates what is left.

Timestamps are ``perf_counter`` readings. On one host every process reads the same monotonic clock, so
they are compared as they are; across hosts (torchrun) each rank's times count from its own exit from a
common barrier. Events are gathered to rank 0, which builds the Timeline.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import socket
import tempfile
import time
from datetime import timedelta

import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ..ir import Schedule, slot_actions
from .result import RunResult, assemble
from .setup import (Handoff, RunConfig, activation_shape, build_worker, choose_devices, gradient_errors, input_of,
                    output_of, reference)
from .stage import ActionFailed
from .timing import Progress

LAUNCH_GRACE_S = 120.0  # spawning p processes that each import torch, on a busy machine


class RunFailed(RuntimeError):
    """A distributed run ended early; the message names the rank and the action."""


def under_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ
                                                    and "MASTER_ADDR" in os.environ)


# -- the launcher (this machine) -------------------------------------------------------------------------------
def run_distributed(config: RunConfig, *, progress: bool = False) -> RunResult:
    if under_torchrun():
        return _torchrun_main(config, _notes(config))
    return run_distributed_many([config], progress=progress)[0]


def _notes(config: RunConfig) -> list[str]:
    cores = os.cpu_count() or 1
    if config.ranks > cores and choose_devices(config)[0].type == "cpu":
        return [f"warning: {config.ranks} ranks on {cores} CPU cores — time-slicing distorts wall-clock "
                f"timelines; the emulated backend shows the one-device-per-rank picture"]
    return []


def run_distributed_many(configs: list[RunConfig], *, progress: bool = False) -> list[RunResult]:
    """Several runs with the same number of ranks in one set of processes (starting processes that import
    torch costs seconds; the runs themselves, milliseconds)."""
    ranks = {config.ranks for config in configs}
    if len(ranks) != 1:
        raise ValueError(f"runs sharing processes need the same number of ranks, got {sorted(ranks)}")
    for config in configs:  # fail on bad input before starting any process
        _check_message_order(config, config.build_schedule())
    config = configs[0]
    workdir = tempfile.mkdtemp(prefix="pplab-run-")
    bar = Progress(config.ranks, f"{config.schedule} distributed: ranks finished", progress)
    context = None
    try:
        # file:// rendezvous in a fresh folder: two runs at once never share a port or a store
        context = mp.start_processes(_rank_entry, args=(configs, workdir, f"file://{workdir}/store"),
                                     nprocs=config.ranks, join=False, start_method="spawn")
        limit_s = LAUNCH_GRACE_S + sum(c.timeout_s * (c.steps + 1) for c in configs)
        deadline = time.monotonic() + limit_s
        while True:
            try:
                if context.join(timeout=0.2):
                    break
            except (mp.ProcessRaisedException, mp.ProcessExitedException) as error:
                raise RunFailed(_first_failure(workdir) or f"a rank process failed: {error}") from None
            bar.update(sum(not p.is_alive() for p in context.processes))
            if time.monotonic() > deadline:
                raise RunFailed(f"the run did not finish within its limit of {limit_s:.0f} s "
                                f"({LAUNCH_GRACE_S:.0f} s to start + the time-out for each step); ended it")
        bar.update(config.ranks)
        with open(os.path.join(workdir, "result.pkl"), "rb") as handle:
            results = pickle.load(handle)
        for result in results:
            result.notes = _notes(result.config) + result.notes
        return results
    finally:
        if context is not None:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
            for process in context.processes:
                process.join(timeout=5)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=5)
        shutil.rmtree(workdir, ignore_errors=True)


def _first_failure(workdir: str) -> str | None:
    """The earliest error a rank wrote: the root cause, not the others' "connection closed"."""
    reports = []
    for name in os.listdir(workdir):
        if name.startswith("error-"):
            with open(os.path.join(workdir, name)) as handle:
                reports.append(json.load(handle))
    if not reports:
        return None
    reports.sort(key=lambda r: (not r["own"], r["time"]))
    first = reports[0]
    where = f"during {first['action']}" if first["action"] else "before its first action"
    return f"rank {first['rank']} failed {where}: {first['error']}"


def _check_message_order(config: RunConfig, schedule: Schedule) -> None:
    """NCCL ignores tags: each pair of ranks must receive in the order it sends. Gloo matches by tag."""
    devices = choose_devices(config)
    if devices[0].type != "cuda":
        return
    sent, received = {}, {}
    for rank, slots in enumerate(schedule.ranks):
        for slot in slots:
            for action in slot_actions(slot):
                need = input_of(action, schedule.num_stages)
                if need and schedule.rank_of(need[1]) != rank:
                    received.setdefault((schedule.rank_of(need[1]), rank), []).append(need)
                handoff = output_of(action, schedule.num_stages)
                if handoff and schedule.rank_of(handoff[1]) != rank:
                    sent.setdefault((rank, schedule.rank_of(handoff[1])), []).append(handoff[0])
    for pair, messages in sent.items():
        if messages != received.get(pair, []):
            raise ValueError(f"{schedule.name}: ranks {pair[0]}→{pair[1]} send and receive in different orders; "
                             f"NCCL cannot match them (gloo can): use --device cpu")


# -- one rank -------------------------------------------------------------------------------------------------
def _tag(key: Handoff, schedule: Schedule) -> int:
    """Gloo matches point-to-point messages by (source, tag): one tag per message of a step."""
    table, stage, microbatch = key
    return ((table == "grad") * schedule.num_stages + stage) * schedule.num_microbatches + microbatch


def _rank_entry(rank: int, configs: list[RunConfig], workdir: str, init_method: str) -> None:
    torch.set_num_threads(1)  # FIELD-NOTES: more threads than cores made each rank 15-20× slower
    current = {"action": None}
    try:
        device = choose_devices(configs[0])[rank]
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=init_method, rank=rank,
                                world_size=configs[0].ranks, timeout=timedelta(seconds=configs[0].timeout_s))
        results = [_rank_loop(config, rank, device, current) for config in configs]
        if rank == 0:
            with open(os.path.join(workdir, "result.pkl"), "wb") as handle:
                pickle.dump(results, handle)
    except BaseException as error:
        cause = error.cause if isinstance(error, ActionFailed) else error
        report = {"rank": rank, "action": current["action"], "error": f"{type(cause).__name__}: {cause}",
                  "own": isinstance(error, ActionFailed), "time": time.time()}
        with open(os.path.join(workdir, f"error-{rank}.json"), "w") as handle:
            json.dump(report, handle)
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _torchrun_main(config: RunConfig, notes: list[str]) -> RunResult | None:
    """Under torchrun: this process is one rank; rank 0 returns the result, the others None."""
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    if int(os.environ["WORLD_SIZE"]) != config.ranks:
        raise ValueError(f"torchrun started {os.environ['WORLD_SIZE']} processes for --ranks {config.ranks}")
    local = int(os.environ.get("LOCAL_RANK", rank))
    use_cuda = config.device != "cpu" and torch.cuda.is_available() and torch.cuda.device_count() > local
    device = torch.device(f"cuda:{local}") if use_cuda else torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo", timeout=timedelta(seconds=config.timeout_s))
    try:
        result = _rank_loop(config, rank, device, {"action": None})
    finally:
        dist.destroy_process_group()
    if result is not None:
        result.notes = notes + result.notes
    return result


def _rank_loop(config: RunConfig, rank: int, device: torch.device, current: dict) -> RunResult | None:
    schedule = config.build_schedule()
    worker = build_worker(config, schedule, rank, device)
    shape, dtype = activation_shape(config), config.model.torch_dtype
    slots = schedule.ranks[rank]
    synchronise = torch.cuda.synchronize if device.type == "cuda" else (lambda *args: None)
    reference_loss, reference_grads = reference(config)  # every rank checks its own parameters
    for step in range(config.steps):
        worker.zero_grad()
        local: dict = {}
        pending = []
        events, waits = [], []
        dist.barrier()
        origin = time.perf_counter()
        for slot in slots:
            for action in slot_actions(slot):
                current["action"] = str(action)
                need = input_of(action, schedule.num_stages)
                incoming = None
                if need is not None:
                    producer_rank = schedule.rank_of(need[1])
                    if producer_rank == rank:
                        incoming = local.pop(need)
                    else:
                        incoming = torch.empty(shape, dtype=dtype, device=device)
                        began = time.perf_counter()
                        dist.recv(incoming, src=producer_rank, tag=_tag(need, schedule))
                        waits.append((began - origin, time.perf_counter() - origin, need, str(action)))
                began = time.perf_counter()
                try:
                    output = worker.perform(action, incoming)
                    synchronise()
                except Exception as error:
                    raise ActionFailed(rank, action, error) from error
                ended = time.perf_counter()
                events.append((began - origin, ended - origin, worker.memory_bytes()))  # in list order
                handoff = output_of(action, schedule.num_stages)
                if handoff is not None and output is not None:
                    key, consumer = handoff
                    consumer_rank = schedule.rank_of(consumer)
                    if consumer_rank == rank:
                        local[key] = output
                    else:
                        tensor = output.contiguous()
                        pending.append((dist.isend(tensor, dst=consumer_rank, tag=_tag(key, schedule)), tensor))
        current["action"] = None
        for work, _ in pending:
            work.wait()
        finished = time.perf_counter()  # this rank's step is over: computed, and everything it sent arrived
    # gather to rank 0: events, gradient errors, losses
    payload = {"rank": rank, "events": events, "waits": waits, "origin": origin, "finished": finished,
               "host": socket.gethostname(),
               "errors": gradient_errors(config, schedule, worker, reference_grads),
               "loss": sum(worker.losses.values())}
    gathered = [None] * config.ranks if rank == 0 else None
    dist.gather_object(payload, gathered, dst=0)
    if rank != 0:
        return None
    return _assemble(config, schedule, gathered, device, reference_loss)


def _assemble(config: RunConfig, schedule: Schedule, gathered: list[dict], device: torch.device,
              reference_loss: float) -> RunResult:
    compiled = schedule.compiled
    num_actions = len(compiled.stage)
    began_ms, ended_ms, memory = np.zeros(num_actions), np.zeros(num_actions), np.zeros(num_actions)
    wait_rows = []
    same_host = len({payload["host"] for payload in gathered}) == 1
    rank_first_action = np.searchsorted(compiled.rank, np.arange(config.ranks))
    for payload in gathered:
        rank = payload["rank"]
        shift = payload["origin"] if same_host else 0.0  # back to the shared clock, see the module docstring
        # a rank runs its actions in list order, which is the compiled order of its actions
        first = rank_first_action[rank]
        for offset, (began, ended, mem) in enumerate(payload["events"]):
            began_ms[first + offset], ended_ms[first + offset] = (began + shift) * 1e3, (ended + shift) * 1e3
            memory[first + offset] = mem
        for began, ended, need, action in payload["waits"]:
            table, stage, mb = need
            wait_rows.append({"rank": rank, "start": (began + shift) * 1e3, "end": (ended + shift) * 1e3,
                              "waiting_for": f"{stage}{'F' if table == 'act' else 'I/B'}{mb}", "action": action,
                              "need": need})
    # a slot spans from its first action's start to its last action's end
    starts = np.asarray(began_ms)[compiled.slot_first_action]
    ends = np.zeros(compiled.num_slots)
    np.maximum.at(ends, compiled.slot_index, ended_ms)
    waits = pd.DataFrame(wait_rows, columns=["rank", "start", "end", "waiting_for", "action", "need"])
    transfer_ms = _transfer_estimate(schedule, waits, ended_ms)
    waits = waits.drop(columns="need")
    compute_ms = ended_ms - began_ms
    origin = min(starts.min(), waits["start"].min() if len(waits) else np.inf)
    starts, ends = starts - origin, ends - origin
    if len(waits):
        waits["start"] -= origin
        waits["end"] -= origin
    errors = {}
    for payload in gathered:
        errors.update(payload["errors"])
    return assemble(config, schedule, starts=starts, ends=ends, compute_ms=compute_ms, memory_bytes=memory,
                    transfer_ms=transfer_ms, waits=waits, loss=float(sum(p["loss"] for p in gathered)),
                    reference_loss=reference_loss, max_grad_error=max(errors.values()),
                    device=str(device) if device.type == "cuda" else "cpu",
                    wall_ms_per_step=_step_wall_ms(gathered, same_host),
                    notes=[f"distributed: wall-clock timestamps; transfer estimated at {transfer_ms:.4f} ms "
                           f"(median wait past the producer's end, when the receiver was already waiting)"])


def _step_wall_ms(gathered: list[dict], same_host: bool) -> float:
    """From the barrier that starts the step to the last rank's last completed send (what a training loop
    waits for). Across hosts, the longest rank's own span."""
    if same_host:
        return (max(p["finished"] for p in gathered) - min(p["origin"] for p in gathered)) * 1e3
    return max(p["finished"] - p["origin"] for p in gathered) * 1e3


def _transfer_estimate(schedule: Schedule, waits: pd.DataFrame, ended_ms: np.ndarray) -> float:
    """Median of (receive done − producer done) over receives that were posted before the producer finished."""
    compiled = schedule.compiled
    produced_at = {}  # hand-off key -> when its producer ended
    for i, (kind, stage, mb) in enumerate(zip(compiled.kind.tolist(), compiled.stage.tolist(),
                                              compiled.microbatch.tolist())):
        if kind != 3:  # every F makes an "act", every B or I a "grad"; W hands nothing on
            produced_at[("act" if kind == 0 else "grad", stage, mb)] = ended_ms[i]
    latencies = []
    for row in waits.itertuples(index=False):
        produced = produced_at.get(row.need)
        if produced is not None and row.start <= produced:
            latencies.append(row.end - produced)
    return max(0.0, float(np.median(latencies))) if latencies else 0.0
