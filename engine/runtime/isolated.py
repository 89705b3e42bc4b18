"""A real run in a fresh child process: what a long-lived server (the app) uses, so that every byte a run
allocated goes back to the operating system when it ends, a run past its time limit is ended, and progress
comes back as it happens.

The result returns through a file, not the pipe (FIELD-NOTES: large results sent through a multiprocessing
queue before ``join`` can deadlock); the pipe carries only small progress messages.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import queue as queue_module
import shutil
import signal
import sys
import tempfile
import time
import traceback

from .config import RunConfig
from .errors import RunFailed
from .progress import Progress, no_progress
from .result import RunResult

REPORT_EVERY_S = 0.1


def _child(config: RunConfig, messages, workdir: str) -> None:
    from . import run

    # ended by the parent: unwind (so a distributed launcher ends its rank processes), then exit
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    last = [0.0]

    def progress(done: int, total: int, note: str) -> None:
        now = time.monotonic()
        if now - last[0] >= REPORT_EVERY_S or done == total:
            last[0] = now
            messages.put((done, total, note))

    outcome: dict[str, object]  # the result, or what went wrong: kind, message and where
    try:
        result = run(config, progress=progress)
        outcome = {"result": result}
    except ValueError as error:
        outcome = {"kind": "refused", "message": str(error)}
    except RuntimeError as error:
        outcome = {"kind": "failed", "message": str(error)}
    except Exception as error:  # noqa: BLE001 - reported to the parent, in one line
        outcome = {
            "kind": "failed",
            "message": f"{type(error).__name__}: {error}",
            "where": traceback.format_exc(limit=-3),
        }
    with open(os.path.join(workdir, "outcome.partial"), "wb") as handle:
        pickle.dump(outcome, handle)
    os.replace(os.path.join(workdir, "outcome.partial"), os.path.join(workdir, "outcome.pkl"))


def run_isolated(config: RunConfig, *, progress: Progress = no_progress, time_limit_s: float = 600.0) -> RunResult:
    """``run(config)`` in a child process. ValueError when the run is refused (bad input, over the memory
    budget), RunFailed when it fails or runs past ``time_limit_s``."""
    context = mp.get_context("spawn")
    messages = context.Queue()
    workdir = tempfile.mkdtemp(prefix="pplab-isolated-")
    child = context.Process(target=_child, args=(config, messages, workdir), name="pplab-real-run")
    started = time.monotonic()
    child.start()
    try:
        while child.is_alive():
            try:
                done, total, note = messages.get(timeout=0.1)
                progress(done, total, note)
            except queue_module.Empty:
                pass
            if time.monotonic() - started > time_limit_s:
                raise RunFailed(
                    f"the run took longer than its limit of {time_limit_s:.0f} s on this server and was "
                    f"ended: try fewer micro-batches, repeats or a smaller model"
                )
        path = os.path.join(workdir, "outcome.pkl")
        if not os.path.exists(path):
            raise RunFailed(
                f"the run's process ended without a result (exit code {child.exitcode}); "
                f"most often the machine ran out of memory"
            )
        with open(path, "rb") as handle:
            outcome = pickle.load(handle)
    finally:
        if child.is_alive():
            child.terminate()  # SIGTERM unwinds the child, whose launcher ends its rank processes
            child.join(timeout=10)
        if child.is_alive():
            child.kill()
        child.join(timeout=10)
        messages.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if "result" in outcome:
        return outcome["result"]
    if outcome["kind"] == "refused":
        raise ValueError(outcome["message"])
    raise RunFailed(outcome["message"] + (f"\n{outcome['where']}" if outcome.get("where") else ""))
