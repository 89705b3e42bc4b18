"""The real pipeline runtime: the same schedules, executed on toy models, timed and checked.

Importing this package does not import PyTorch: the backends load on the first run.

    python -m engine run  →  RunConfig (checks the input, builds the plan once)
                          →  run(): emulated.run_emulated | distributed.run_distributed
                                    both through execute.execute, with their own transport and clock
                          →  result.assemble: measured Timeline + prediction → RunResult
"""

from __future__ import annotations

from .clocks import INSTRUCTIONS
from .config import BACKENDS, DEVICES, RunConfig, RunPlan
from .errors import ActionFailed, RunFailed
from .progress import Progress, no_progress
from .result import GRADIENT_TOLERANCE, RunResult


def run(config: RunConfig, *, progress: Progress = no_progress) -> RunResult | None:
    """Run ``config`` on its backend and return the measured timeline, the prediction and the checks
    (None on a torchrun rank other than 0)."""
    from .budget import check_budget

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
    if config.clock == INSTRUCTIONS:
        from .perf import unavailable

        reason = unavailable()
        if reason is not None:
            raise ValueError(f"--clock instructions is not available here: {reason}")


def run_many(configs: list[RunConfig], *, progress: Progress = no_progress) -> list[RunResult]:
    """Several runs; distributed ones share one set of processes (they must have the same number of ranks)."""
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
