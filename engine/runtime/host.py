"""This machine, described without importing PyTorch (a server page that only shows these numbers must not
load it): CPU cores and the GPUs a run could use.

``visible_gpus`` counts NVIDIA devices the driver exposes (``/proc/driver/nvidia/gpus``), narrowed by
``CUDA_VISIBLE_DEVICES``, and 0 when the installed PyTorch is a CPU build (its version ends in "+cpu"), since
such a build cannot use them. The runtime itself asks PyTorch (``devices.gpu_count``) when it runs.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


def cpu_count() -> int:
    return os.cpu_count() or 1


def visible_gpus() -> int:
    """GPUs a run on this machine could use; 0 without an NVIDIA driver or with a CPU build of PyTorch."""
    try:
        if metadata.version("torch").endswith("+cpu"):
            return 0
    except metadata.PackageNotFoundError:
        return 0
    try:
        present = sum(1 for _ in NVIDIA_GPUS.iterdir())
    except OSError:
        return 0
    chosen = os.environ.get("CUDA_VISIBLE_DEVICES")
    if chosen is None:
        return present
    listed = [part for part in chosen.split(",") if part.strip()]
    return min(present, len(listed))
