"""One rank's process: its own list of actions, in order, with real sends and receives.

Before an action the rank receives what it needs from the rank that made it (the time blocked in ``recv``
is recorded as a wait, apart from compute); after it, it sends its output with ``isend`` (never blocking).
Because the schedule is validated deadlock-free, this cannot hang; a rank that raises ends the run.
Messages are matched by their hand-off key (``engine.dependencies``), used as the gloo tag. The rank keeps
its heartbeat (``status.py``) so the launcher can name a rank that goes silent.

Timestamps are ``perf_counter`` readings (wall clock: waiting for other ranks is what this backend shows),
gathered to rank 0 (``gather.py``).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from ...ir import Action, Kind
from ...models import torch_dtype
from ..config import RunConfig
from ..devices import choose_devices
from ..errors import ActionFailed
from ..gradients import gradient_errors, reference_gradients
from ..result import RunResult
from ..stage import build_worker
from .gather import assemble_distributed
from .status import BETWEEN_STEPS, COMPUTING, FINISHED, RECEIVING, STARTING, RankStatus


def rank_entry(rank: int, configs: list[RunConfig], workdir: str, init_method: str, status_array) -> None:
    """What ``torch.multiprocessing`` starts: every run of ``configs`` as rank ``rank``; rank 0 writes results."""
    torch.set_num_threads(1)  # FIELD-NOTES: more threads than cores made each rank 15-20× slower
    current = {"action": None}
    status = RankStatus(status_array, rank)
    status.set(STARTING)
    try:
        device = choose_devices(configs[0])[rank]
        dist.init_process_group(
            "nccl" if device.type == "cuda" else "gloo",
            init_method=init_method,
            rank=rank,
            world_size=configs[0].num_ranks,
            timeout=timedelta(seconds=configs[0].timeout_s),
        )
        results = []
        for index, config in enumerate(configs):
            reference = torch.load(os.path.join(workdir, f"reference-{index}-{rank}.pt"), weights_only=True)
            results.append(run_rank(config, rank, device, current, status, reference))
        status.set(FINISHED)
        if rank == 0:
            _write_atomically(os.path.join(workdir, "result.pkl"), pickle.dumps(results))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the launcher reports it, once
        os._exit(130)
    except BaseException as error:
        cause = error.cause if isinstance(error, ActionFailed) else error
        report = {
            "rank": rank,
            "action": current["action"],
            "error": f"{type(cause).__name__}: {cause}",
            "own": isinstance(error, ActionFailed),
            "time": time.time(),
        }
        _write_atomically(os.path.join(workdir, f"error-{rank}.json"), json.dumps(report).encode())
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _write_atomically(path: str, data: bytes) -> None:
    """Write then rename, so a reader never sees half a file (a rank can be killed mid-write)."""
    with open(path + ".partial", "wb") as handle:
        handle.write(data)
    os.replace(path + ".partial", path)


def torchrun_main(config: RunConfig) -> RunResult | None:
    """Under torchrun: this process is one rank; rank 0 returns the result, the others None."""
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    if int(os.environ["WORLD_SIZE"]) != config.num_ranks:
        raise ValueError(f"torchrun started {os.environ['WORLD_SIZE']} processes for --ranks {config.num_ranks}")
    local = int(os.environ.get("LOCAL_RANK", rank))
    use_cuda = config.device != "cpu" and torch.cuda.is_available() and torch.cuda.device_count() > local
    device = torch.device(f"cuda:{local}") if use_cuda else torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo", timeout=timedelta(seconds=config.timeout_s))
    try:
        return run_rank(config, rank, device)
    finally:
        dist.destroy_process_group()


def run_rank(
    config: RunConfig,
    rank: int,
    device: torch.device,
    current: dict | None = None,
    status: RankStatus | None = None,
    reference: dict | None = None,
) -> RunResult | None:
    """Run ``config``'s steps as rank ``rank`` of an initialised process group; rank 0 returns the result.

    ``current["action"]`` names the action in progress (for the failure report); ``reference`` is the unsplit
    model's (loss, gradients), computed here when not given."""
    current = {} if current is None else current
    status = status or RankStatus(None, rank)
    plan = config.plan
    c = plan.compiled
    worker = build_worker(config, rank, device)
    shape, dtype = config.model.boundary_shape(config.num_microbatches), torch_dtype(config.model)
    first, last = int(c.rank_first_slot[rank]), int(c.rank_first_slot[rank + 1])
    mine = range(int(c.slot_first_action[first]), int(c.slot_first_action[last]))  # this rank's actions, in order
    synchronise = torch.cuda.synchronize if device.type == "cuda" else (lambda *args: None)
    if reference is None:
        loss, grads = reference_gradients(config.model)
        reference = {"loss": loss, "gradients": grads}
    done, measured = 0, []
    for step in range(config.warmup_steps + config.repeats):
        worker.zero_grad()
        local: dict[int, torch.Tensor] = {}
        pending = []
        events, waits = [], []
        status.set(BETWEEN_STEPS, done=done)
        dist.barrier()
        origin = time.perf_counter()
        for i in mine:
            action = Action(int(c.stage[i]), Kind(int(c.kind[i])), int(c.microbatch[i]))
            current["action"] = str(action)
            need = int(c.from_neighbour[i])
            incoming = None
            if need >= 0 and not c.neighbour_is_remote[i]:
                incoming = local.pop(need)
            elif need >= 0:
                incoming = torch.empty(shape, dtype=dtype, device=device)
                producer = c.producer_rank(need)
                status.set(RECEIVING, i, producer)
                began = time.perf_counter()
                dist.recv(incoming, src=producer, tag=need)
                waits.append((began - origin, time.perf_counter() - origin, need, str(action)))
            status.set(COMPUTING, i)
            began = time.perf_counter()
            try:
                output = worker.perform(action, incoming)
                synchronise()
            except Exception as error:
                raise ActionFailed(rank, action, error) from error
            ended = time.perf_counter()
            done += 1
            events.append((began - origin, ended - origin, worker.memory_bytes(), worker.peak_during))  # list order
            if c.sends_to[i] >= 0 and output is not None:
                consumer_rank = int(c.owner[c.sends_to[i]])
                if consumer_rank == rank:
                    local[int(c.makes[i])] = output
                else:
                    tensor = output.contiguous()
                    pending.append((dist.isend(tensor, dst=consumer_rank, tag=int(c.makes[i])), tensor))
        current["action"] = None
        status.set(BETWEEN_STEPS, done=done)
        for work, _ in pending:
            work.wait()
        finished = time.perf_counter()  # this rank's step is over: computed, and everything it sent arrived
        if step >= config.warmup_steps:
            measured.append({"events": events, "waits": waits, "origin": origin, "finished": finished})
    errors = gradient_errors(plan, worker, reference["gradients"])
    payload = {
        "rank": rank,
        "steps": measured,
        "host": socket.gethostname(),
        "errors": errors,
        "loss": sum(worker.losses.values()),
    }
    gathered = [None] * config.num_ranks if rank == 0 else None
    dist.gather_object(payload, gathered, dst=0)
    if rank != 0:
        return None
    return assemble_distributed(config, gathered, device, reference["loss"])
