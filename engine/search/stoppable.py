"""A CP-SAT solve that stops on time and on a stop signal, and leaves nothing running behind it
(``exact._solve`` builds the model and reads the answer; this module only runs the solver).

[Note: a solver that stops on time]
CP-SAT's own time limit overruns by up to 2 s on a busy 2-core machine (7.2 s for a 5 s search), and once told
to stop (``stop_search``) it can take up to 1.8 s more to return: a large-neighbourhood sub-solver looks at the
stop flag only between its chunks. A solve in a thread of the caller's process can therefore be either on time
or joined, not both — and a solver thread left running when the interpreter exits aborts it ("terminate called
without an active exception", status 134).

So the solve runs in a forked child process (``solve_until``): the model is already built, so the fork carries
it for free (no pickling; OR-Tools' objects do not pickle). The child reports each solution the callback
records through a pipe, and its final status; the caller waits until its deadline, then tells the child to
stop, gives it ``STOP_GRACE_S``, and kills it if it has not finished. Either way the child is reaped before
``solve_until`` returns or raises: no thread and no process outlives the call, on success, at the time limit,
on an exception or on a stop signal (Ctrl-C, SIGTERM), which is raised again once the child is gone. The
child ignores the stop signals the terminal sends its whole process group: its parent decides when it stops,
and it dies with its parent (``lifetime.start_child``).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runtime.lifetime import start_child

STOP_GRACE_S = 0.25
"""After its deadline, CP-SAT is asked to stop and given this long; a child that has not finished by then is
killed, and the best solution it had reported stands."""
_FORK = mp.get_context("fork")
"""Fork: the child gets the built model and solver as they are (nothing pickled), and starts in milliseconds."""


@dataclass
class Solve:
    """What a stoppable solve gave: CP-SAT's status (None when it was stopped by a kill, its status unknown), its
    final ``best_objective_bound`` (None with it), and each report the callback sent, in order."""

    status: int | None = None
    final_bound: float | None = None
    reports: list[Any] = field(default_factory=list)


class SolveInterrupted(KeyboardInterrupt):
    """A stop signal or Ctrl-C during the solve: the interrupt, and what the solve had reported before it. The
    child is gone by the time this is raised."""

    def __init__(self, stop: KeyboardInterrupt, solve: Solve):
        super().__init__(str(stop))
        self.stop = stop
        self.solve = solve


def solve_until(solver, model, make_callback: Callable[[Callable[[Any], None]], Any], wait_s: float) -> Solve:
    """``solver.solve(model, make_callback(report))`` in a child process for at most ``wait_s`` seconds (then told
    to stop and given ``STOP_GRACE_S``, then killed). ``make_callback(report)`` runs in the child and returns
    CP-SAT's solution callback; each ``report(item)`` it makes (a picklable item) is in the answer's ``reports``.
    A ``KeyboardInterrupt`` during the wait stops the child the same way and is raised as ``SolveInterrupted``."""
    receiver, sender = _FORK.Pipe(duplex=False)
    control_reader, control = _FORK.Pipe(duplex=False)
    outcome = Solve()
    child = start_child(
        _FORK,
        _solve_in_child,
        (solver, model, make_callback, sender, control_reader),
        death_signal=signal.SIGKILL,
        name="pplab-cp-sat",
    )
    sender.close()  # the child holds the writing end: a read sees the end once the child is gone
    control_reader.close()
    deadline = time.monotonic() + max(0.0, wait_s)
    try:
        _receive(receiver, outcome, deadline)
    except KeyboardInterrupt as stop:
        _stop(child, control, receiver, outcome)
        raise SolveInterrupted(stop, outcome) from None
    except BaseException:
        _stop(child, control, receiver, outcome)
        raise
    late = _stop(child, control, receiver, outcome)
    if late is not None:  # came while the finished solve was reaped: the command must still stop
        raise SolveInterrupted(late, outcome) from None
    return outcome


def _receive(receiver, outcome: Solve, until: float) -> bool:
    """Read the child's messages into ``outcome`` until it says it is done (True) or ``until`` (False)."""
    while True:
        left = until - time.monotonic()
        if left <= 0 or not receiver.poll(left):
            return False
        try:
            kind, payload = receiver.recv()
        except (EOFError, OSError):  # the child is gone without a last word
            return True
        if kind == "report":
            outcome.reports.append(payload)
        elif kind == "failed":  # the solve raised in the child: the same error here, in one line
            raise RuntimeError(f"CP-SAT's process failed: {payload}")
        else:
            outcome.status, outcome.final_bound = payload
            return True


def _stop(child, control, receiver, outcome: Solve) -> KeyboardInterrupt | None:
    """Tell the child to stop, take what it sends within the grace, kill it if it is still there, and reap it.
    An interrupt meanwhile does not cut this short (the child must not outlive the call); it is returned, so that a
    stop that came while a finished solve was reaped is not lost (the stop handler drops later signals)."""
    finished = outcome.status is not None
    caught: KeyboardInterrupt | None = None
    try:
        if not finished:
            try:
                control.send("stop")
            except OSError:  # the child has already closed its end: it is on its way out
                pass
            _receive(receiver, outcome, time.monotonic() + STOP_GRACE_S)
    except KeyboardInterrupt as stop:
        caught = stop
    finally:
        reaped = _reap(child)
        caught = caught or reaped
        control.close()
        receiver.close()
    return caught


def _reap(child) -> KeyboardInterrupt | None:
    """Wait for the child: it has finished or been told to stop, so a short wait, then a kill. Returns the
    interrupt that came meanwhile, if one did."""
    caught: KeyboardInterrupt | None = None
    while True:
        try:
            child.join(timeout=STOP_GRACE_S if child.exitcode is None else 0)
            if child.exitcode is None:
                child.kill()
                child.join()
            return caught
        except KeyboardInterrupt as stop:  # an interrupt: still reap (kill at once)
            caught = caught or stop
            child.kill()


def _solve_in_child(solver, model, make_callback, channel, control) -> None:
    """In the child: solve, reporting through ``channel``; a message (or the parent's end closing) on
    ``control`` asks CP-SAT to stop. Ends with the final status and bound."""

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the parent stops it through ``control``, or kills it

    def listen() -> None:
        try:
            control.recv()
        except (EOFError, OSError):
            pass
        solver.stop_search()

    threading.Thread(target=listen, daemon=True, name="cp-sat-stop").start()
    try:
        status = solver.solve(model, make_callback(lambda item: channel.send(("report", item))))
        channel.send(("done", (int(status), float(solver.best_objective_bound))))
    except Exception as error:  # noqa: BLE001 - said by the parent, not printed here as a traceback
        channel.send(("failed", f"{type(error).__name__}: {error}"))
    channel.close()
