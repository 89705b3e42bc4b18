"""Real runs for the app: one at a time per server process, each in its own child process (its memory goes
back to the system when it ends, and a run past its limit is ended), results kept per visitor.

A real measurement is neither pure nor deterministic, so it never goes into ``st.cache_data``
(DESIGN.md habit 13): each visitor's last result lives in their own ``st.session_state``.
"""

from __future__ import annotations

from app.server.admission import REAL_RUNS
from engine.runtime import RunConfig, budget
from engine.runtime.budget import estimate, human_bytes
from engine.runtime.isolated import run_isolated

TIME_LIMIT_S = 300.0
"""A real run started from the page is ended after this long."""


def memory_check(config: RunConfig) -> tuple[str, str | None]:
    """(a line saying what the run will use, or the refusal with the arithmetic)."""
    needed = estimate(config)
    room = budget.allowance()
    line = (
        f"Estimated memory: {human_bytes(needed.total)} of the {human_bytes(room.allowed)} a run may use here "
        f"({room.reason})."
    )
    if needed.total > room.allowed:
        return line, (
            f"This run would need about {human_bytes(needed.total)} ({needed.describe()}), more than the "
            f"{human_bytes(room.allowed)} a run may use here ({room.reason}): choose fewer blocks, a narrower "
            f"hidden width, fewer micro-batches or fewer ranks."
        )
    return line, None


def run_one(config: RunConfig, *, progress, waiting) -> object:
    """Run ``config`` once no other run of this server is in progress (``app.server.admission.REAL_RUNS``: the others
    wait in arrival order, told their place through ``waiting(text)``, or are refused when the queue is full)."""
    with REAL_RUNS.admitted(f"{config.family} on {config.num_ranks} ranks", tell=waiting):
        return run_isolated(config, progress=progress, time_limit_s=TIME_LIMIT_S)
