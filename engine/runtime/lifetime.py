"""How a run's processes end: a stop signal unwinds the run (never half-way through its clean-up), and a child
process never outlives the process that started it (torch-free: stdlib only).

[Note: stop signals]
SIGINT (Ctrl-C), SIGTERM and SIGHUP to the process that runs a real run mean the same: stop. With
``stop_signals()`` installed (the command line; a run's child process for the app) the first of them raises
``Stopped`` — a ``KeyboardInterrupt``, so everything that unwinds for Ctrl-C unwinds for it — and later ones
wait: a second Ctrl-C must not cut the clean-up short. Inside ``shielded()`` (the launcher's clean-up, every
``start_child``) even the first waits, and is raised when the block ends.

Child processes (the ranks; the app's run process) are started by ``start_child``:

* with the stop signals blocked in the starting thread, so the child starts with them blocked — a Ctrl-C
  to the whole process group while the ranks import PyTorch would otherwise print one KeyboardInterrupt
  traceback per rank — and, first thing in the child (``_child_main``, torch-free), SIGINT and SIGHUP
  ignored and the signals unblocked: the parent decides when its children stop, and stops them with SIGTERM;
* bound to the parent: Linux's ``prctl(PR_SET_PDEATHSIG)`` sends the child ``death_signal`` when the parent
  dies, even by SIGKILL (elsewhere a watchdog thread polls ``getppid``); a parent that died before the
  child could ask is noticed at once. A fork server's child (the app's searches) is bound to the fork server,
  and watches the process that asked for it (``_watch_owner``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing import spawn

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
PR_SET_PDEATHSIG = 1
WATCHDOG_S = 0.5


class Stopped(KeyboardInterrupt):
    """A stop signal, raised where the run was, so it unwinds as for Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a process a signal ended."""
        return 128 + self.signum

    @property
    def message(self) -> str:
        """One line: "interrupted" (Ctrl-C), "interrupted by SIGTERM", "interrupted by SIGHUP"."""
        return "interrupted" if self.signum == signal.SIGINT else f"interrupted by {signal.Signals(self.signum).name}"


class _State:
    installed = False
    previous: dict[int, object] = {}
    received: int | None = None
    """The first stop signal since ``stop_signals()`` began; later ones are dropped."""
    raised = False
    shield = 0
    """Depth of ``shielded()`` blocks: while above 0, a stop waits."""


def _handler(signum: int, frame) -> None:
    if _State.received is not None:  # the stop is already under way: let its clean-up finish
        return
    _State.received = signum
    if _State.shield == 0:
        _State.raised = True
        raise Stopped(signum)


_command = {"whole_process": False}


def this_process_is_the_command() -> None:
    """``python -m engine`` says so first thing: the process's whole age is the command's (``command_age_s``)."""
    _command["whole_process"] = True


def command_age_s() -> float:
    """Seconds the running command has taken so far, its imports included: the process's age when it runs as
    ``python -m engine``; 0 when a longer-lived process (a test, the app) calls the command's function, whose
    process age says nothing about the command."""
    return process_age_s() if _command["whole_process"] else 0.0


def process_age_s() -> float:
    """Seconds since this process started (Linux: ``/proc/self/stat`` against ``/proc/uptime``; 0 elsewhere), so
    that a command's time limit can count its own imports."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            fields = stat.read().rsplit(")", 1)[1].split()
            started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks
            return max(0.0, float(uptime.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def defer_stop_signals() -> None:
    """Record stop signals from now on without raising (``python -m engine`` while it imports); the next
    ``stop_signals()`` raises one that came meanwhile."""
    if _in_main_thread() and not _State.installed:
        _State.previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
        for number in STOP_SIGNALS:
            signal.signal(number, _handler)
        _State.installed, _State.shield = True, 1


@contextlib.contextmanager
def stop_signals(ignore: tuple[int, ...] = ()) -> Iterator[None]:
    """Within the block, a stop signal raises ``Stopped`` (see [Note: stop signals]); ``ignore`` lists those to
    ignore instead. The previous handlers come back after. Main thread only (elsewhere: nothing changes)."""
    if not _in_main_thread():
        yield
        return
    if not _State.installed:
        _State.previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
        _State.received, _State.raised = None, False
    _State.installed, _State.shield = True, 0
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN if number in ignore else _handler)
    try:
        if _State.received is not None:  # came while deferred
            _State.raised = True
            raise Stopped(_State.received)
        yield
    finally:
        for number, handler in _State.previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        _State.installed, _State.previous, _State.received, _State.raised, _State.shield = False, {}, None, False, 0


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A stop signal that comes within the block is raised when it ends, not inside it."""
    _State.shield += 1
    try:
        yield
    finally:
        _State.shield -= 1
        if _State.shield == 0 and _State.received is not None and not _State.raised and _State.installed:
            _State.raised = True
            raise Stopped(_State.received)


def start_child(context, target, args: tuple, *, death_signal: int, name: str, daemon: bool = False):
    """Start ``target(*args)`` (a module-level function) in a new process of the multiprocessing ``context``,
    bound to this one (see [Note: stop signals]); returns the started process."""
    forked_by_server = getattr(context, "get_start_method", lambda: "")() == "forkserver"
    process = context.Process(
        target=_child_main,
        args=(os.getpid(), death_signal, target.__module__, target.__qualname__, args, forked_by_server),
        name=name,
        daemon=daemon,
    )
    blocks = hasattr(signal, "pthread_sigmask")
    if blocks and getattr(context, "get_start_method", lambda: "")() != "fork":
        from multiprocessing import resource_tracker

        # started now, not inside start(): starting it unblocks SIGINT and SIGTERM in this thread
        resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if blocks else None
    try:
        # shielded: a stop that came just before could otherwise be raised inside ``os.fork``'s at-fork hooks
        # (logging's ``_releaseLock``), where Python prints "Exception ignored" and drops it — and the handler,
        # which takes the first stop only, would drop every later one: the command ran on to its end
        with shielded(), main_script_left_out(target):
            process.start()
    except KeyboardInterrupt:  # the stop, raised as the shield ends: the child it started goes too
        if process.pid is not None:
            process.kill()
            process.join()
        raise
    finally:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return process


_starting = threading.local()
"""Per thread: whether the child being started leaves the main script out (``main_script_left_out``)."""
_preparation_data = spawn.get_preparation_data


def _preparation_data_for_our_children(name: str) -> dict:
    """multiprocessing's preparation data, less the main module while this thread starts a child of ours."""
    data = _preparation_data(name)
    if getattr(_starting, "main_left_out", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


# the spawn, fork-server start and fork-server child paths all read it from the module, at start time
spawn.get_preparation_data = _preparation_data_for_our_children


@contextlib.contextmanager
def main_script_left_out(target=None) -> Iterator[None]:
    """While this thread starts a child, the child does not run the parent's main module. multiprocessing has
    every spawned child (and a fork server, once) run it again, and Streamlit installs each page it runs as
    ``__main__`` — so each child would run the app's script in bare mode before its target (seconds, and
    warnings in the log). The target's own module is all a child needs; a target defined in the main module
    keeps it. Thread-local on purpose: swapping ``sys.modules["__main__"]`` would show other visitors' script
    runs a module without ``__file__`` meanwhile."""
    if target is not None and getattr(target, "__module__", "__main__") == "__main__":
        yield
        return
    before = getattr(_starting, "main_left_out", False)
    _starting.main_left_out = True
    try:
        yield
    finally:
        _starting.main_left_out = before


def bind_to_parent(parent: int, death_signal: int) -> None:
    """In a child: die by ``death_signal`` when process ``parent`` does (now, if it already has)."""
    bound = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            bound = libc.prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0) == 0
        except (OSError, AttributeError):
            bound = False
    if os.getppid() != parent:  # it died before we could ask
        os.kill(os.getpid(), death_signal)
        os._exit(128 + death_signal)
    if not bound:
        threading.Thread(target=_watch_parent, args=(parent, death_signal), daemon=True, name="parent-watch").start()


def _watch_parent(parent: int, death_signal: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_S)
    os.kill(os.getpid(), death_signal)
    os._exit(128 + death_signal)


def _watch_owner(owner: int, death_signal: int) -> None:
    """In a fork server's child: die by ``death_signal`` when ``owner`` (the process that asked for the child)
    does. The fork server, its parent, outlives the owner while any child holds the pipe it watches, so the
    parent's death would come only when the child's work ends."""
    try:
        import select

        with open(os.pidfd_open(owner), closefd=True) as handle:  # Linux ≥ 5.3: readable once it has ended
            select.select([handle], [], [])
    except (AttributeError, OSError):  # no pidfd here: poll
        while True:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                pass
            time.sleep(WATCHDOG_S)
    os.kill(os.getpid(), death_signal)
    os._exit(128 + death_signal)


def _child_main(parent: int, death_signal: int, module: str, name: str, args: tuple, forked_by_server: bool) -> None:
    """What ``start_child`` runs in the child, before importing the target (which may import PyTorch)."""
    _State.shield = 0  # a forked child inherits the shield its parent's ``start_child`` held while it started
    for number in STOP_SIGNALS:
        if number != getattr(signal, "SIGTERM", None):
            signal.signal(number, signal.SIG_IGN)  # also drops one that came while blocked
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if forked_by_server:  # its parent is the fork server: bound to it, and to the process that asked
        bind_to_parent(os.getppid(), death_signal)
        threading.Thread(target=_watch_owner, args=(parent, death_signal), daemon=True, name="owner-watch").start()
    else:
        bind_to_parent(parent, death_signal)
    target = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    target(*args)  # type: ignore[operator]
