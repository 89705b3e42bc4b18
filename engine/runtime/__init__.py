"""The real pipeline runtime: the same schedules, executed on toy models, timed and checked."""

from __future__ import annotations

from .result import RunResult
from .setup import RunConfig
from .stage import ActionFailed


def run(config: RunConfig, *, progress: bool = False) -> RunResult:
    """Run ``config`` on its backend and return the measured timeline, the prediction and the checks."""
    if config.backend == "emulated":
        from .emulated import run_emulated

        return run_emulated(config, progress=progress)
    from .distributed import run_distributed

    return run_distributed(config, progress=progress)


def run_many(configs: list[RunConfig], *, progress: bool = False) -> list[RunResult]:
    """Several runs; distributed ones share one set of processes (they must have the same number of ranks)."""
    if all(config.backend == "distributed" for config in configs):
        from .distributed import run_distributed_many

        return run_distributed_many(configs, progress=progress)
    return [run(config, progress=progress) for config in configs]


__all__ = ["ActionFailed", "RunConfig", "RunResult", "run", "run_many"]
