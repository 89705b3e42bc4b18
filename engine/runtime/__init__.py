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


__all__ = ["ActionFailed", "RunConfig", "RunResult", "run"]
