"""The real pipeline runtime: the same schedules, executed on toy models, timed and checked.

Importing this package imports nothing else (PEP 562: the names below load on first use), so the command line
can install its signal handlers first; PyTorch loads with the backends, on the first run.

    python -m engine run  →  RunConfig (checks the input, builds the plan once)
                          →  run(): emulated.run_emulated | distributed.run_distributed
                                    both through execute.execute, with their own transport and clock
                          →  result.assemble: measured Timeline + prediction → RunResult
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "BACKENDS": "config",
    "DEVICES": "config",
    "RunConfig": "config",
    "RunPlan": "config",
    "ActionFailed": "errors",
    "RunFailed": "errors",
    "Progress": "progress",
    "no_progress": "progress",
    "GRADIENT_TOLERANCE": "result",
    "RunResult": "result",
}
"""Each public name this module does not define → the submodule that does."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # what type checkers see: the same names, imported eagerly (``as``: re-exported)
    from .config import BACKENDS as BACKENDS
    from .config import DEVICES as DEVICES
    from .config import RunConfig as RunConfig
    from .config import RunPlan as RunPlan
    from .errors import ActionFailed as ActionFailed
    from .errors import RunFailed as RunFailed
    from .progress import Progress as Progress
    from .progress import no_progress as no_progress
    from .result import GRADIENT_TOLERANCE as GRADIENT_TOLERANCE
    from .result import RunResult as RunResult


def run(config: RunConfig, *, progress: Progress | None = None) -> RunResult | None:
    """Run ``config`` on its backend and return the measured timeline, the prediction and the checks
    (None on a torchrun rank other than 0)."""
    from .budget import check_budget
    from .progress import no_progress

    progress = progress or no_progress

    check_clock(config)
    check_budget(config)  # refuse, with the arithmetic, a run this machine cannot hold
    if config.backend == "emulated":
        from .emulated import run_emulated

        return run_emulated(config, progress=progress)
    from .distributed import run_distributed

    return run_distributed(config, progress=progress)


def check_clock(config: RunConfig) -> None:
    """Refuse, saying why, a clock this machine cannot give (``--clock instructions`` where Linux refuses the
    hardware counter)."""
    from .clocks import INSTRUCTIONS

    if config.clock == INSTRUCTIONS:
        from .perf import unavailable

        reason = unavailable()
        if reason is not None:
            raise ValueError(f"--clock instructions is not available here: {reason}")


def run_many(configs: list[RunConfig], *, progress: Progress | None = None) -> list[RunResult]:
    """Several runs; distributed ones share one set of processes (they must have the same number of ranks)."""
    from .progress import no_progress

    progress = progress or no_progress
    if all(config.backend == "distributed" for config in configs):
        from .budget import check_budget
        from .distributed import run_distributed_many

        for config in configs:
            check_clock(config)
            check_budget(config)

        return run_distributed_many(configs, progress=progress)
    results = []
    for config in configs:
        result = run(config, progress=progress)
        # None comes only to a torchrun rank other than 0, and torchrun starts one run per launch (``run``)
        assert result is not None, "run_many is not for torchrun launches"
        results.append(result)
    return results


__all__ = [
    "ActionFailed",
    "BACKENDS",
    "DEVICES",
    "GRADIENT_TOLERANCE",
    "Progress",
    "RunConfig",
    "RunFailed",
    "RunPlan",
    "RunResult",
    "no_progress",
    "run",
    "run_many",
]
