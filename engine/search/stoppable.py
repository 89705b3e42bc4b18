"""A CP-SAT solve that stops on time and on a stop signal (``exact._solve`` builds the model and reads the
answer; this module only runs the solver).

[Note: a solver that stops on time] CP-SAT runs in a thread of its own while the calling thread waits. Its time
limit alone overran by up to 2 s here (7.2 s for a 5 s search), and a Ctrl-C reached Python only when the solve
returned (its own SIGINT handler, switched off by the caller, made the command finish and write its output as
if nothing happened). So: at the deadline, or when a stop signal or Ctrl-C interrupts the wait, the solver is
told to stop; whatever it has not finished within ``STOP_GRACE_S`` is abandoned, and the last solution its
callback recorded is the answer. An interrupt is raised again once the solver is told.

A process that ran CP-SAT must not end by a normal interpreter exit after an interrupt: OR-Tools' objects and
threads torn down by the interpreter's finalisation (a stopped solver still unwinding, a solver kept alive by
the interrupt's traceback) abort it now and then under load ("terminate called without an active exception",
status −6 instead of 143, or a hang until killed). So ``python -m engine`` asks ``ran_a_solver`` and, when it
did, flushes its output and ends with ``os._exit``: its files are already written and closed (atomically).
"""

from __future__ import annotations

import threading

STOP_GRACE_S = 0.25
"""After its deadline, CP-SAT is asked to stop and given this long; a sub-solver that does not look at the
stop flag in time (its large-neighbourhood searches can run a second or more on a slow machine) is left to
end on its own, and the best solution it had reported stands."""

_STARTED: list[threading.Thread] = []
"""Every solver thread this process started."""


def solve_until(solver, model, callback, wait_s: float) -> int | None:
    """``solver.solve(model, callback)`` for at most ``wait_s`` (then told to stop, given ``STOP_GRACE_S``):
    its status, or None when it was abandoned. A ``KeyboardInterrupt`` (Ctrl-C, a stop signal) during the wait
    stops the solver the same way and is raised again."""
    answer: dict[str, int] = {}
    done = threading.Event()  # not Thread.is_alive: a join interrupted by a signal can leave it saying False

    def run() -> None:
        try:
            answer["status"] = solver.solve(model, callback)
        finally:
            done.set()

    worker = threading.Thread(target=run, name="cp-sat", daemon=True)
    _STARTED.append(worker)
    try:
        worker.start()  # inside: an interrupt can land while start() waits for the thread to run
        done.wait(max(0.0, wait_s))
    finally:  # the deadline, or an interrupt on its way up
        if not done.is_set():
            solver.stop_search()
            done.wait(STOP_GRACE_S)  # still running after it: abandoned, its last reported solution stands
    return answer.get("status")


def ran_a_solver() -> bool:
    """Whether this process started CP-SAT (see the module's note on how such a process must end)."""
    return bool(_STARTED)
