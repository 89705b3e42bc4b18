"""A real run in a fresh child process: what a long-lived server (the app) uses, so that every byte a run
allocated goes back to the operating system when it ends, a run past its time limit is ended, and progress
comes back as it happens.

Everything comes back through pipes the parent reads while the child runs — progress, then the outcome (the
result, or what went wrong) — so there is no file for another program cleaning the temporary folder to take
away, and no queue to deadlock (a child that fills a ``multiprocessing`` queue waits for a reader, so a
parent that joins it before reading waits for ever). The child's standard error goes through a third pipe:
the parent copies it to its own (the server's log) and keeps the last lines.

When the child ends without an outcome, the error says what the evidence says ([Note: a run that left no
result]): the exit code or the signal, the out-of-memory killer only when the kernel counted a kill during
the run (or the child printed a MemoryError), and the child's last lines.

The child is bound to the parent ([Note: stop signals], ``lifetime.py``): SIGTERM — from the parent ending
it, or from the kernel when the parent dies, even by SIGKILL — unwinds it, so a distributed run inside ends
its ranks and removes its folder.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import TypeVar

from .config import RunConfig
from .errors import RunFailed
from .lifetime import Stopped, start_child, stop_signals
from .progress import Progress, no_progress
from .result import RunResult

T = TypeVar("T")

REPORT_EVERY_S = 0.1
TAIL_LINES = 10
TAIL_CHARS = 1000
"""How much of the child's last output an error quotes."""


def _real_run(config: RunConfig, progress: Progress) -> RunResult | None:
    from . import run  # in the child: the parent need not import torch to start one

    return run(config, progress=progress)


def _child(function: Callable[..., object], args: tuple, niceness: int, channel, stderr_pipe) -> None:
    os.dup2(stderr_pipe.fileno(), 2)  # the parent keeps the last lines and copies them to its own stderr
    stderr_pipe.close()
    if niceness:
        os.nice(niceness)  # below the server's own threads: its pages and health check answer first
    last = [0.0]

    def progress(done: int, total: int, note: str) -> None:
        now = time.monotonic()
        if now - last[0] >= REPORT_EVERY_S or done == total:
            last[0] = now
            channel.send(("progress", (done, total, note)))

    outcome: dict[str, object]  # the result, or what went wrong: kind, message and where
    # the parent ends the run with SIGTERM (and the kernel sends it when the parent dies): unwind, so a
    # distributed launcher ends its rank processes and removes its folder; Ctrl-C and SIGHUP are the parent's
    with stop_signals(ignore=tuple(s for s in (signal.SIGINT, getattr(signal, "SIGHUP", None)) if s is not None)):
        try:
            outcome = {"result": function(*args, progress)}
        except Stopped:
            sys.exit(143)
        except ValueError as error:
            outcome = {"kind": "refused", "message": str(error)}
        except MemoryError as error:
            outcome = {"kind": "failed", "message": f"the run ran out of memory (MemoryError: {error})"}
        except RuntimeError as error:
            outcome = {"kind": "failed", "message": str(error)}
        except Exception as error:  # noqa: BLE001 - reported to the parent, in one line
            outcome = {
                "kind": "failed",
                "message": f"{type(error).__name__}: {error}",
                "where": traceback.format_exc(limit=-3),
            }
        try:
            channel.send(("outcome", outcome))
        except Exception as error:  # noqa: BLE001 - something in it does not pickle: say what went wrong
            channel.send(("outcome", {"kind": "failed", "message": f"the run's outcome could not be sent: {error}"}))


class _Tail:
    """Copies a pipe to this process's stderr as it comes and keeps its last ``TAIL_LINES`` lines."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.lines: deque[str] = deque(maxlen=TAIL_LINES)
        self.partial = ""
        self.thread = threading.Thread(target=self._copy, daemon=True, name="pplab-run-stderr")
        self.thread.start()

    def _copy(self) -> None:
        descriptor = self.reader.fileno()
        try:
            while chunk := os.read(descriptor, 65536):  # b"" once every writer (child, its ranks) has closed
                _echo(chunk)
                text = self.partial + chunk.decode(errors="replace")
                *complete, self.partial = text.split("\n")
                self.lines.extend(line for line in complete if line.strip())
                self.partial = self.partial[-TAIL_CHARS:]
        except OSError:
            pass
        finally:
            self.reader.close()

    def text(self, wait_s: float = 2.0) -> str:
        """The last lines (at most ``TAIL_CHARS`` characters), once the pipe has closed or ``wait_s`` passed."""
        self.thread.join(timeout=wait_s)
        lines = list(self.lines) + ([self.partial] if self.partial.strip() else [])
        text = "\n".join(lines[-TAIL_LINES:])
        return text if len(text) <= TAIL_CHARS else "…" + text[-TAIL_CHARS:]


def _echo(chunk: bytes) -> None:
    """The child's output, on to this process's stderr (the server's log), as it was before it was kept."""
    try:
        stream = sys.stderr
        if hasattr(stream, "buffer"):
            stream.buffer.write(chunk)
        else:
            stream.write(chunk.decode(errors="replace"))
        stream.flush()
    except (OSError, ValueError, AttributeError):  # no stderr (closed, or a server without one)
        pass


def oom_kills() -> dict[str, int]:
    """The kernel's counts of processes its out-of-memory killer ended: this cgroup's (``memory.events``,
    cgroup v2) and the machine's (``/proc/vmstat``), those that can be read here."""
    counts = {}
    try:
        with open("/proc/self/cgroup") as handle:
            path = next(line.split(":", 2)[2].strip() for line in handle if line.startswith("0::"))
        with open(f"/sys/fs/cgroup{path.rstrip('/')}/memory.events") as handle:
            counts["cgroup"] = next(int(line.split()[1]) for line in handle if line.startswith("oom_kill "))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    try:
        with open("/proc/vmstat") as handle:
            counts["machine"] = next(int(line.split()[1]) for line in handle if line.startswith("oom_kill "))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return counts


@dataclass(frozen=True)
class Ending:
    """How a run's child process ended without an outcome: the evidence ``explain`` reads."""

    exitcode: int | None
    output: str
    """Its last lines on stderr (bounded)."""
    oom_before: dict[str, int]
    oom_after: dict[str, int]


def explain(ending: Ending, what: str = "real run") -> str:
    """[Note: a run that left no result] One message from the evidence: how the process ended, why when the
    evidence says (the out-of-memory killer only when the kernel counted a kill meanwhile, or the child
    printed a MemoryError), and its last lines."""
    code = ending.exitcode
    if code is None:
        how = "still running when the parent stopped waiting"
    elif code < 0:
        try:
            how = f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    rose = {k: (ending.oom_before[k], v) for k, v in ending.oom_after.items() if v > ending.oom_before.get(k, v)}
    if code == -signal.SIGKILL and rose:
        counts = ", ".join(f"{where}: {a} → {b}" for where, (a, b) in rose.items())
        cause = f"the kernel's out-of-memory killer ended it (its count of kills rose during the run; {counts})"
    elif "MemoryError" in ending.output:
        cause = "it ran out of memory (it printed a MemoryError)"
    elif code == -signal.SIGKILL:
        cause = (
            "another program killed it (the kernel counted no out-of-memory kill during the run)"
            if ending.oom_after
            else "another program, or the out-of-memory killer, killed it (this machine does not say which)"
        )
    elif code is not None and code < 0:
        cause = "a signal ended it"
    else:
        cause = "it ended before sending its result"
    message = f"the {what}'s process ended without a result ({how}): {cause}"
    if ending.output:
        message += "; its last output:\n" + "\n".join(f"  {line}" for line in ending.output.splitlines())
    else:
        message += "; it printed nothing"
    return message


def _reap(child) -> None:
    """Wait for the child to end (killed after 10 s), so it leaves no zombie."""
    child.join(timeout=10)
    if child.is_alive():
        child.kill()
        child.join(timeout=10)


def over_limit(what: str, time_limit_s: float) -> str:
    advice = {"real run": ": try fewer micro-batches, repeats or a smaller model"}.get(what, "")
    return f"the {what} took longer than its limit of {time_limit_s:g} s on this server and was ended{advice}"


def run_isolated(
    config: RunConfig, *, progress: Progress = no_progress, time_limit_s: float = 600.0
) -> RunResult | None:
    """``run(config)`` in a child process. ValueError when the run is refused (bad input, over the memory
    budget), RunFailed when it fails or runs past ``time_limit_s``."""
    return call_isolated(_real_run, (config,), progress=progress, time_limit_s=time_limit_s, what="real run")


def call_isolated(
    function: Callable[..., T],
    args: tuple,
    *,
    progress: Progress = no_progress,
    time_limit_s: float,
    what: str,
    niceness: int = 0,
    context: BaseContext | None = None,
    answer_grace_s: float = 0.0,
) -> T:
    """``function(*args, progress)`` (module-level, its arguments and result picklable) in a fresh child process
    at ``niceness``, ended past ``time_limit_s``. ValueError when it refuses its input, RunFailed when it fails
    (the message names ``what``: "run", "search"). ``context``: multiprocessing's, "spawn" when None.

    With ``answer_grace_s``, a child still working at its limit is asked to stop (SIGTERM, which a search turns
    into its best order so far) and what it sends within that grace is its answer."""
    context = context or mp.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stderr_reader, stderr_writer = context.Pipe(duplex=False)
    oom_before = oom_kills()
    started = time.monotonic()
    child = start_child(
        context,
        _child,
        (function, args, niceness, sender, stderr_writer),
        death_signal=signal.SIGTERM,
        name=f"pplab-{what.replace(' ', '-')}",
    )
    sender.close()  # the child holds the writing ends now: they close, and reads see the end, when it ends
    stderr_writer.close()
    tail = _Tail(stderr_reader)
    outcome: dict | None = None
    try:
        # one rule for the limit: a result that arrived counts, however late its clean-up; without one, a run
        # that reached its limit is reported as over its limit even when the child ended during the last poll
        asked_to_stop = False
        while outcome is None:
            elapsed = time.monotonic() - started
            if elapsed > time_limit_s and answer_grace_s > 0 and not asked_to_stop and child.is_alive():
                child.terminate()
                asked_to_stop = True
            if elapsed > time_limit_s + (answer_grace_s if asked_to_stop else 0.0):
                break
            if receiver.poll(0.1):
                try:
                    kind, payload = receiver.recv()
                except (EOFError, OSError):  # the child is gone
                    break
                if kind == "progress":
                    progress(*payload)
                else:
                    outcome = payload
            elif not child.is_alive() and not receiver.poll(0):
                break
    finally:
        if outcome is None:
            if child.is_alive():
                child.terminate()  # SIGTERM unwinds the child, whose launcher ends its rank processes
            _reap(child)
        else:  # the result is in hand: the child's exit (freeing its memory) is not the visitor's wait
            threading.Thread(target=_reap, args=(child,), daemon=True, name="pplab-reap").start()
        receiver.close()
    if outcome is None and time.monotonic() - started > time_limit_s:
        raise RunFailed(over_limit(what, time_limit_s))
    if outcome is None:
        raise RunFailed(explain(Ending(child.exitcode, tail.text(), oom_before, oom_kills()), what))
    if "result" in outcome:
        return outcome["result"]
    if outcome["kind"] == "refused":
        raise ValueError(outcome["message"])
    if outcome.get("where"):  # where it failed goes to the server's log; a visitor sees no server path
        _echo(f"pplab: the {what} failed: {outcome['message']}\n{outcome['where']}\n".encode())
    raise RunFailed(outcome["message"])
