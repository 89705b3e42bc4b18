"""Where each rank runs: one GPU per rank when there are enough, otherwise the CPU."""

from __future__ import annotations

import os

import torch

from .config import RunConfig


def choose_devices(config: RunConfig) -> list[torch.device]:
    """One device per rank: a GPU each when there are enough (auto), otherwise the CPU."""
    available = gpu_count()
    if config.device == "cpu" or (config.device == "auto" and available < config.num_ranks):
        return [torch.device("cpu")] * config.num_ranks
    if available == 0:
        raise ValueError("--device cuda asked for, but no CUDA device is visible")
    if config.backend == "distributed" and available < config.num_ranks and "LOCAL_RANK" not in os.environ:
        raise ValueError(f"distributed on cuda needs one GPU per rank: {config.num_ranks} ranks, {available} GPUs")
    return [torch.device(f"cuda:{rank % available}") for rank in range(config.num_ranks)]


def gpu_count() -> int:
    """CUDA devices this process sees (0 without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def device_label(devices: list[torch.device]) -> str:
    kinds = sorted({d.type for d in devices})
    return "cpu" if kinds == ["cpu"] else ",".join(str(d) for d in devices)
