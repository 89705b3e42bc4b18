"""One rank's process: its own list of actions, in order, through the one execution loop (``execute.py``)
with the process-group transport (``transport.py``: real sends and receives, the waits recorded apart from
compute). Because the schedule is validated deadlock-free, this cannot hang; a rank that raises ends the run.
The rank keeps its heartbeat (``status.py``) so the launcher can name a rank that goes silent.

Timestamps are ``perf_counter`` readings since the step began (wall clock: waiting for other ranks is what
this backend shows), gathered to rank 0 (``gather.py``).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from ...dependencies import CompiledSchedule
from ...models import torch_dtype
from ..config import RunConfig
from ..devices import choose_devices
from ..errors import ActionFailed
from ..execute import Watch, execute
from ..gradients import copy_groups, gradient_errors, reference_gradients
from ..result import RunResult
from ..stage import build_worker
from ..timing import StepClock
from .gather import assemble_distributed
from .status import BETWEEN_STEPS, COMPUTING, FINISHED, STARTING, RankStatus
from .transport import ProcessGroup


def rank_entry(rank: int, configs: list[RunConfig], workdir: str, init_method: str, status_array) -> None:
    """What the launcher starts (through ``lifetime.start_child``): every run of ``configs`` as rank ``rank``;
    rank 0 writes the results."""
    torch.set_num_threads(1)  # ranks × threads above the cores makes each rank 15-20× slower
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
    except KeyboardInterrupt:  # ranks ignore Ctrl-C (lifetime.start_child); the launcher reports a stop, once
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
        try:
            _write_atomically(os.path.join(workdir, f"error-{rank}.json"), json.dumps(report).encode())
        except OSError:  # the run's folder is gone: the launcher says so
            pass
        sys.exit(1)  # reported to the launcher, which names the rank in one line: no traceback on stderr
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
    # what crosses a stage boundary (an activation or its gradient): each receive gets a tensor like it
    boundary = torch.empty(
        config.model.boundary_shape(config.num_microbatches), dtype=torch_dtype(config.model), device=device
    )
    clock = StepClock(device)
    mine = c.rank_actions(rank)
    heartbeat = _Heartbeat(c, current, status)
    if reference is None:
        loss, grads = reference_gradients(config.model)
        reference = {"loss": loss, "gradients": grads}
    done, measured = 0, []
    for step in range(config.warmup_steps + config.repeats):
        worker.zero_grad()
        status.set(BETWEEN_STEPS, done=done)
        dist.barrier()
        clock.begin()
        transport = ProcessGroup(c, boundary, clock, status)
        record = execute(c, mine, {rank: worker}, {rank: clock}, transport, heartbeat)
        current["action"] = None
        done += len(mine)
        status.set(BETWEEN_STEPS, done=done)
        transport.finish()
        finished = time.perf_counter()  # this rank's step is over: computed, and everything it sent arrived
        if step >= config.warmup_steps:
            events = [(*record.readings[i], record.memory[i], record.peak[i]) for i in mine]  # list order
            measured.append({"events": events, "waits": transport.waits, "origin": clock.origin, "finished": finished})
    _sum_copies_with_the_mirror(plan.schedule, worker, rank)
    errors = gradient_errors(plan, worker, reference["gradients"])
    payload = {
        "rank": rank,
        "steps": measured,
        "host": socket.gethostname(),
        "errors": errors,
        "loss": sum(worker.losses.values()),
        "weight_bytes": worker.weight_bytes(),
    }
    gathered: list[dict] | None = [{}] * config.num_ranks if rank == 0 else None
    dist.gather_object(payload, gathered, dst=0)
    if gathered is None:
        return None
    return assemble_distributed(config, gathered, device, reference["loss"])


def _sum_copies_with_the_mirror(schedule, worker, rank: int) -> None:
    """DualPipe: each block this rank holds has a copy on another rank (the mirror, p − 1 − r); send ours, take
    theirs, and add (see ``engine.runtime.gradients``). Every send and receive is posted before any wait, so the
    two ranks of a pair cannot block each other. Tag: the sending stage."""
    exchanges: list[tuple[list, torch.Tensor, list]] = []
    for group in copy_groups(schedule):
        for mine in (s for s in group if s in worker.stages):
            for theirs in (s for s in group if s != mine):
                partner = schedule.rank_of(theirs)
                grads = [p.grad for p in worker.stages[mine].parameters()]
                ours = torch.cat([g.reshape(-1) for g in grads])
                received = torch.empty_like(ours)
                if partner == rank:  # both copies here (not with the dual placement, but said for safety)
                    received.copy_(torch.cat([p.grad.reshape(-1) for p in worker.stages[theirs].parameters()]))
                    exchanges.append((grads, received, []))
                    continue
                requests = [dist.isend(ours, partner, tag=mine), dist.irecv(received, partner, tag=theirs)]
                exchanges.append((grads, received, requests))
    for grads, received, requests in exchanges:
        for request in requests:
            if request is not None:
                request.wait()
        offset = 0
        for grad in grads:
            grad.add_(received[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()


class _Heartbeat(Watch):
    """Keeps the launcher told which action this rank is on (``status.py``; the transport adds whom it waits
    for), and the failure report which action was in progress."""

    def __init__(self, c: CompiledSchedule, current: dict, status: RankStatus):
        self.c, self.current, self.status = c, current, status

    def starting(self, i: int) -> None:
        self.current["action"] = self.c.label(i)
        self.status.set(COMPUTING, i)
