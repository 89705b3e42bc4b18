"""The distributed backend: one process per rank with torch.distributed — gloo on CPU, NCCL when every rank
has its own GPU — started here with ``torch.multiprocessing`` (``launcher.py``) or by ``torchrun`` across
nodes. Each rank runs its own list (``rank.py``); rank 0 assembles the result (``gather.py``)."""

from __future__ import annotations

import os
from dataclasses import replace

from ..config import RunConfig
from ..progress import Progress, no_progress
from ..result import RunResult
from .launcher import check_message_order, core_warning, run_distributed_many
from .rank import run_rank, torchrun_main


def under_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or (
        "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ
    )


def run_distributed(config: RunConfig, *, progress: Progress = no_progress) -> RunResult | None:
    """One distributed run: started here, or this process's share of a torchrun launch (None on ranks > 0)."""
    if under_torchrun():
        check_message_order(config)
        result = torchrun_main(config)
        if result is None:
            return None
        return replace(result, notes=tuple(core_warning(config)) + result.notes)
    return run_distributed_many([config], progress=progress)[0]


__all__ = ["run_distributed", "run_distributed_many", "run_rank", "under_torchrun"]
