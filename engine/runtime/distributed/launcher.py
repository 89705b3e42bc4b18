"""Starting the rank processes on this machine, watching them, and ending them all when one fails.

File-store rendezvous in a fresh temporary folder, so two runs at once never share a port or a store. A rank
that raises writes what it was doing to ``error-<rank>.json``; the launcher reports the earliest rank that
failed on its own (not the others' "connection closed"), then terminates what is left.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import time
from dataclasses import replace

import torch.multiprocessing as mp

from ...dependencies import compiled
from ..config import RunConfig
from ..devices import choose_devices
from ..errors import RunFailed
from ..result import RunResult
from ..progress import Progress, no_progress
from .rank import rank_entry

LAUNCH_GRACE_S = 120.0  # spawning p processes that each import torch, on a busy machine


def core_warning(config: RunConfig) -> list[str]:
    cores = os.cpu_count() or 1
    if config.num_ranks > cores and choose_devices(config)[0].type == "cpu":
        return [f"warning: {config.num_ranks} ranks on {cores} CPU cores — time-slicing distorts wall-clock "
                f"timelines; the emulated backend shows the one-device-per-rank picture"]
    return []


def check_message_order(config: RunConfig) -> None:
    """NCCL ignores tags: each pair of ranks must receive in the order it sends. Gloo matches by tag."""
    if choose_devices(config)[0].type != "cuda":
        return
    c = compiled(config.plan.schedule)
    sent: dict[tuple[int, int], list[int]] = {}
    received: dict[tuple[int, int], list[int]] = {}
    for i in range(c.num_actions):  # rank-then-list order: each rank's messages in the order it handles them
        rank = int(c.rank[i])
        if c.neighbour_is_remote[i]:
            received.setdefault((c.producer_rank(c.from_neighbour[i]), rank), []).append(int(c.from_neighbour[i]))
        if c.sends_to[i] >= 0 and c.owner[c.sends_to[i]] != rank:
            sent.setdefault((rank, int(c.owner[c.sends_to[i]])), []).append(int(c.makes[i]))
    for pair, messages in sent.items():
        if messages != received.get(pair, []):
            raise ValueError(f"{config.family}: ranks {pair[0]}→{pair[1]} send and receive in different orders; "
                             f"NCCL cannot match them (gloo can): use --device cpu")


def run_distributed_many(configs: list[RunConfig], *, progress: Progress = no_progress) -> list[RunResult]:
    """Several runs with the same number of ranks in one set of processes (starting processes that import
    torch costs seconds; the runs themselves, milliseconds)."""
    ranks = {config.num_ranks for config in configs}
    if len(ranks) != 1:
        raise ValueError(f"runs sharing processes need the same number of ranks, got {sorted(ranks)}")
    for config in configs:  # fail on bad input before starting any process
        check_message_order(config)
    num_ranks = configs[0].num_ranks
    workdir = tempfile.mkdtemp(prefix="pplab-run-")
    context = None
    try:
        context = mp.start_processes(rank_entry, args=(configs, workdir, f"file://{workdir}/store"),
                                     nprocs=num_ranks, join=False, start_method="spawn")
        limit_s = LAUNCH_GRACE_S + sum(c.timeout_s * (c.steps + 1) for c in configs)
        deadline = time.monotonic() + limit_s
        while True:
            try:
                if context.join(timeout=0.2):
                    break
            except (mp.ProcessRaisedException, mp.ProcessExitedException) as error:
                raise RunFailed(first_failure(workdir) or f"a rank process failed: {error}") from None
            progress(sum(not p.is_alive() for p in context.processes), num_ranks, "ranks finished")
            if time.monotonic() > deadline:
                raise RunFailed(f"the run did not finish within its limit of {limit_s:.0f} s "
                                f"({LAUNCH_GRACE_S:.0f} s to start + the time-out for each step); ended it")
        progress(num_ranks, num_ranks, "ranks finished")
        with open(os.path.join(workdir, "result.pkl"), "rb") as handle:
            results = pickle.load(handle)
        return [replace(result, notes=tuple(core_warning(result.config)) + result.notes) for result in results]
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


def first_failure(workdir: str) -> str | None:
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
