"""Starting the rank processes on this machine, watching them, and ending them all when one fails.

File-store rendezvous in a fresh folder of the run's own ([Note: run folders], ``workdirs.py``), so two runs at
once never share a port or a store. The unsplit reference is computed once, here, and each rank gets only its
own parameters' gradients. The ranks are started bound to this process ([Note: stop signals],
``lifetime.py``): they ignore Ctrl-C and SIGHUP (this process stops them), and die if it dies, even by SIGKILL.
Whatever ends the run, the ranks are ended and the folder removed — unless this process is killed outright,
and then the next run removes the folder.

When a run goes wrong the launcher names the rank that caused it, in this order of evidence: a rank killed
by a foreign signal (SIGKILL, SIGSEGV…); a rank stopped (SIGSTOP); a rank whose own action raised; the rank
the others wait for when nobody has moved for the time-out (heartbeats, ``status.py``); any other report.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import time
from dataclasses import replace

import torch
import torch.multiprocessing as mp

from ...models import stage_parameter_names
from ..config import RunConfig
from ..devices import choose_devices
from ..errors import RunFailed
from ..gradients import reference_gradients
from ..lifetime import shielded, start_child
from ..progress import Progress, no_progress
from ..result import RunResult
from ..workdirs import make as make_run_folder
from .rank import rank_entry
from .status import BETWEEN_STEPS, COMPUTING, FIELDS, FINISHED, RECEIVING, STARTING, process_state, read, silent_rank

LAUNCH_GRACE_S = 120.0  # spawning p processes that each import torch, on a busy machine
POLL_S = 0.2


def core_warning(config: RunConfig) -> list[str]:
    cores = os.cpu_count() or 1
    if config.num_ranks > cores and choose_devices(config)[0].type == "cpu":
        return [
            f"warning: {config.num_ranks} ranks on {cores} CPU cores — time-slicing distorts wall-clock "
            f"timelines; the emulated backend shows the one-device-per-rank picture"
        ]
    return []


def check_message_order(config: RunConfig) -> None:
    """NCCL ignores tags: each pair of ranks must receive in the order it sends. Gloo matches by tag."""
    if choose_devices(config)[0].type != "cuda":
        return
    c = config.plan.compiled
    sent: dict[tuple[int, int], list[int]] = {}
    received: dict[tuple[int, int], list[int]] = {}
    for i in range(c.num_actions):  # rank-then-list order: each rank's messages in the order it handles them
        rank, receiver = int(c.rank[i]), c.receiver(i)
        if c.neighbour_is_remote[i]:
            producer = c.producer(i)
            received.setdefault((int(c.rank[producer]), rank), []).append(int(c.makes[producer]))
        if receiver >= 0 and receiver != rank:
            sent.setdefault((rank, receiver), []).append(int(c.makes[i]))
    for pair, messages in sent.items():
        if messages != received.get(pair, []):
            raise ValueError(
                f"{config.family}: ranks {pair[0]}→{pair[1]} send and receive in different orders; "
                f"NCCL cannot match them (gloo can): use --device cpu"
            )


def _write_references(configs: list[RunConfig], workdir: str) -> None:
    """The unsplit model's loss and gradients, once per run, split into one file per rank."""
    for index, config in enumerate(configs):
        loss, gradients = reference_gradients(config.model)
        names = stage_parameter_names(list(config.plan.stage_layers), config.plan.schedule.copies)
        schedule = config.plan.schedule
        for rank in range(config.num_ranks):
            prefixes = [
                prefix
                for stage, mapping in enumerate(names)
                if schedule.rank_of(stage) == rank
                for prefix in mapping.values()
            ]
            mine = {
                name: grad
                for name, grad in gradients.items()
                if any(name == p or name.startswith(p + ".") for p in prefixes)
            }
            torch.save({"loss": loss, "gradients": mine}, os.path.join(workdir, f"reference-{index}-{rank}.pt"))


def run_distributed_many(configs: list[RunConfig], *, progress: Progress = no_progress) -> list[RunResult]:
    """Several runs with the same number of ranks in one set of processes (starting processes that import
    torch costs seconds; the runs themselves, milliseconds)."""
    ranks = {config.num_ranks for config in configs}
    if len(ranks) != 1:
        raise ValueError(f"runs sharing processes need the same number of ranks, got {sorted(ranks)}")
    for config in configs:  # fail on bad input before starting any process
        check_message_order(config)
    num_ranks = configs[0].num_ranks
    context = mp.get_context("spawn")
    processes: list = []
    status = context.Array("d", FIELDS * num_ranks, lock=False)
    workdir = make_run_folder("run")
    try:
        _write_references(configs, workdir)
        with shielded():  # a stop waits until every started rank is in the list the clean-up ends
            for rank in range(num_ranks):
                processes.append(
                    start_child(
                        context,
                        rank_entry,
                        (rank, configs, workdir, f"file://{workdir}/store", status),
                        death_signal=signal.SIGKILL,
                        name=f"pplab-rank-{rank}",
                        daemon=True,
                    )
                )
        _watch(processes, configs, workdir, status, progress)
        try:
            with open(os.path.join(workdir, "result.pkl"), "rb") as handle:
                results = pickle.load(handle)
        except FileNotFoundError:
            raise RunFailed(_vanished(workdir, "the ranks finished, but their result file is gone")) from None
        return [replace(result, notes=tuple(core_warning(result.config)) + result.notes) for result in results]
    finally:
        with shielded():  # a stop that comes now is raised once the ranks are ended and the folder is gone
            _end(processes)
            shutil.rmtree(workdir, ignore_errors=True)


def _vanished(workdir: str, what: str) -> str:
    return (
        f"{what}: the run's folder {workdir} was removed while the run was in progress (another program "
        f"cleaning {os.path.dirname(workdir)}?); nothing of this run could be read back"
        if not os.path.isdir(workdir)
        else f"{what} ({workdir} is still there)"
    )


def _watch(processes: list, configs: list[RunConfig], workdir: str, status, progress: Progress) -> None:
    """Wait for every rank; on a failure or a stall, raise RunFailed naming the rank to blame."""
    num_ranks = configs[0].num_ranks
    total = sum((c.warmup_steps + c.repeats) * c.plan.compiled.num_actions for c in configs)
    per_rank = [
        sum((c.warmup_steps + c.repeats) * len(c.plan.compiled.rank_actions(r)) for c in configs)
        for r in range(num_ranks)
    ]
    timeout = max(c.timeout_s for c in configs)
    limit_s = LAUNCH_GRACE_S + sum(c.timeout_s * (c.warmup_steps + c.repeats + 1) for c in configs)
    started = time.monotonic()
    while True:
        codes = [process.exitcode for process in processes]
        if all(code == 0 for code in codes):
            progress(total, total, "done")
            return
        rows = read(status, num_ranks)
        done = sum(min(row["done"], mine) for row, mine in zip(rows, per_rank, strict=True))
        busy = [row for row in rows if row["state"] in (COMPUTING, RECEIVING)]
        progress(done, total, f"rank {busy[0]['rank']}" if busy else "starting the ranks")
        if any(code not in (None, 0) for code in codes):
            raise RunFailed(_blame(processes, rows, workdir, configs[0]))
        if not os.path.isdir(workdir):  # nothing the ranks make could be read back: stop them now, not at the end
            raise RunFailed(_vanished(workdir, "stopped the ranks"))
        moved = max((row["updated"] for row in rows), default=0.0)
        if moved and time.time() - moved > timeout + 2 * POLL_S:
            raise RunFailed(_blame(processes, rows, workdir, configs[0], stalled_s=time.time() - moved))
        if time.monotonic() - started > limit_s:
            raise RunFailed(
                f"the run did not finish within its limit of {limit_s:.0f} s "
                f"({LAUNCH_GRACE_S:.0f} s to start + the time-out for each step); ended it"
            )
        time.sleep(POLL_S)


def _doing(rows: list[dict], rank: int, config: RunConfig) -> str:
    action, state = rows[rank]["action"], rows[rank]["state"]
    if state == STARTING:
        return "while starting (before its first action)"
    if state in (BETWEEN_STEPS, FINISHED) or action < 0:
        return "between two steps"
    return f"during {config.plan.compiled.label(action)}"


def _blame(processes, rows: list[dict], workdir: str, config: RunConfig, stalled_s: float | None = None) -> str:
    for rank, process in enumerate(processes):  # a foreign signal: killed, crashed
        code = process.exitcode
        if code is not None and code < 0 and -code != signal.SIGTERM:
            return (
                f"rank {rank} died {_doing(rows, rank, config)}: killed by signal "
                f"{signal.Signals(-code).name} (process {process.pid})"
            )
    for rank, process in enumerate(processes):
        if process.exitcode is None and process_state(process.pid) == "T":
            return (
                f"rank {rank} stopped responding {_doing(rows, rank, config)}: its process {process.pid} is "
                f"stopped (SIGSTOP?); the other ranks waited {config.timeout_s:g} s for it"
            )
    if not os.path.isdir(workdir):
        codes = ", ".join(f"rank {r}: {p.exitcode}" for r, p in enumerate(processes))
        return _vanished(workdir, f"the ranks could not go on (exit codes {codes})")
    reports = _reports(workdir)
    own = [r for r in reports if r["own"]]
    if own:
        first = min(own, key=lambda r: r["time"])
        where = f"during {first['action']}" if first["action"] else "before its first action"
        return f"rank {first['rank']} failed {where}: {first['error']}"
    silent = silent_rank(rows)
    if silent is not None and (stalled_s is not None or reports):
        waiting = sorted(r["rank"] for r in rows if r["state"] == RECEIVING and r["rank"] != silent)
        return (
            f"rank {silent} stopped responding {_doing(rows, silent, config)}: ranks "
            f"{', '.join(map(str, waiting))} waited {config.timeout_s:g} s for it"
        )
    if reports:
        first = min(reports, key=lambda r: r["time"])
        return f"rank {first['rank']} failed: {first['error']}"
    codes = ", ".join(f"rank {r}: {p.exitcode}" for r, p in enumerate(processes))
    return f"a rank process ended unexpectedly (exit codes {codes})"


def _reports(workdir: str) -> list[dict]:
    reports: list[dict] = []
    try:
        names = os.listdir(workdir)
    except OSError:  # removed meanwhile
        return reports
    for name in names:
        if name.startswith("error-") and name.endswith(".json"):
            try:
                with open(os.path.join(workdir, name)) as handle:
                    reports.append(json.load(handle))
            except (OSError, ValueError):  # written atomically; a vanished file is not evidence
                continue
    return reports


def _end(processes) -> None:
    """Terminate what is left; kill at once what is stopped (it would ignore SIGTERM until continued), and
    what does not stop."""
    for process in processes:
        if process.is_alive() and process_state(process.pid) == "T":
            process.kill()
        elif process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=2)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
