"""A stranger's traces read in a child process with limits: what the command line and the Your run page both use.
A crafted file can make the reader itself grow (a 160-byte gzip can ask for gigabytes), and a long-lived server
does not give back to the system what one read took; a child's memory goes when the child ends.

The child sets its own limits first thing (``resource.setrlimit``): an address space of what it had at the start
plus ``MEMORY_LIMIT_BYTES``, and ``CPU_LIMIT_S`` of CPU; the parent ends it past ``time_limit_s`` of wall-clock
time. Everything it allocated goes back to the system when it ends. A child that hits a limit becomes one line
that names the limit. The reader's own bounds (``engine.traces.shape``, ``reading.KeptBudget``, the field
checks) refuse nearly every bad file long before a limit: the limits are for what nobody foresaw.

The app starts children from a fork server that imported the reader once (a threaded server must not fork
itself, and a fresh interpreter would import pandas for each upload); the command line forks itself, which is
cheap and safe before it has started any thread.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
from collections.abc import Callable, Sequence
from pathlib import Path

from ..runtime.errors import RunFailed
from ..runtime.fork_server import FORK_SERVER, start_fork_server
from ..runtime.isolated import call_isolated
from .chunks import OverlappedChunks
from .imported import ImportedRun, ImportOptions, read_traces
from .reading import TraceError

MEMORY_LIMIT_BYTES = 1536 * 1024**2
"""Address space the child may add to what it had when it started: 1.5 GiB (the kept events' own budget is
256 MiB; the 2- and 4-rank example traces read in about 120 MB)."""
CPU_LIMIT_S = 300
"""CPU seconds the child may use (a safety net: the wall-clock limit usually ends it first)."""
COMMAND_TIME_LIMIT_S = 600.0
"""Wall-clock limit of ``python -m engine trace``."""
PAGE_TIME_LIMIT_S = 120.0
"""Wall-clock limit of one upload's reading on the page (the page reads up to 512 MiB)."""
SERVER_NICENESS = 10
"""A reading for a page runs below the server's priority: the pages, and the visitors who only click, come first."""


def read_traces_isolated(
    paths: Sequence[str | Path],
    options: ImportOptions | None = None,
    *,
    names: Sequence[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    time_limit_s: float = COMMAND_TIME_LIMIT_S,
    server: bool = False,
) -> ImportedRun | OverlappedChunks:
    """``read_traces`` in a child process with limits (see the module's note). ``server``: started from the
    fork server (the app); else by forking this process (the command line). TraceError in one line for a trace
    that cannot be read, a limit reached included."""
    names = [str(path) for path in paths] if names is None else list(names)
    if server:
        start_fork_server()
    context = FORK_SERVER if server else mp.get_context("fork")

    def relay(done: int, total: int, note: str) -> None:
        if progress is not None:
            progress(note, done, total)

    try:
        return call_isolated(
            _read_with_limits,
            ([str(path) for path in paths], options or ImportOptions(), names, SERVER_NICENESS if server else 0),
            progress=relay,
            time_limit_s=time_limit_s,
            what="trace reading",
            context=context,
        )
    except RunFailed as failed:
        raise TraceError(_limit_reached(str(failed), time_limit_s)) from None
    except TraceError:
        raise
    except ValueError as refused:  # the child's TraceError (or a pattern's refusal) comes back as a ValueError
        raise TraceError(str(refused)) from None


def _read_with_limits(
    paths: list[str], options: ImportOptions, names: list[str], niceness: int, progress
) -> ImportedRun | OverlappedChunks:
    """In the child: the limits and the priority, then the reading; a limit reached is a TraceError that names it."""
    if niceness:
        os.nice(niceness)
    _limit(resource.RLIMIT_AS, _address_space() + MEMORY_LIMIT_BYTES)
    _limit(resource.RLIMIT_CPU, cpu_limit_s())

    def report(name: str, done: int, total: int) -> None:
        progress(done, total, name)

    try:
        return read_traces(paths, options, progress=report, names=names)
    except MemoryError:
        raise TraceError(
            f"reading these traces needs more than {MEMORY_LIMIT_BYTES / 2**30:g} GiB of memory, the most the "
            "lab gives one reading; profile fewer steps (torch.profiler.schedule(wait=1, warmup=1, active=1))"
        ) from None


def cpu_limit_s() -> int:
    """The CPU seconds a reading gets: ``CPU_LIMIT_S``, or less under a smaller hard limit (``ulimit -t``), then
    a second below it, so the kernel's SIGXCPU at the soft limit comes before its SIGKILL at the hard one and the
    reading ends saying it ran out of CPU, not of memory."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard == resource.RLIM_INFINITY or hard > CPU_LIMIT_S:
        return CPU_LIMIT_S
    return max(1, hard - 1)


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    if soft == resource.RLIM_INFINITY or value < soft:
        resource.setrlimit(which, (value, hard))


def _address_space() -> int:
    """This process's virtual size now (bytes; Linux ``/proc/self/statm``), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_reached(message: str, time_limit_s: float) -> str:
    """The child's ending, said as the limit it reached where one explains it."""
    if "SIGXCPU" in message:
        return f"reading these traces took more than {cpu_limit_s()} s of CPU, the most the lab gives one reading"
    if "took longer than its limit" in message:
        return (
            f"reading these traces took more than {time_limit_s:g} s, the most the lab gives one reading; "
            "profile fewer steps, or read them with python -m engine trace"
        )
    if "SIGKILL" in message or "SIGSEGV" in message or "SIGABRT" in message or "out of memory" in message:
        return (
            f"reading these traces needed more than {MEMORY_LIMIT_BYTES / 2**30:g} GiB of memory (the reading "
            f"ended: {message.split(':', 1)[0]})"
        )
    return message
