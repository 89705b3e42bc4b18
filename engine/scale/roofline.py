"""Seconds from FLOPs and bytes: every kernel on the GPU's roofline, every GEMM at the share of peak its shape allows.

The model, stated once:

* A kernel takes max(FLOPs ÷ achievable FLOP/s, bytes ÷ achievable HBM bandwidth) — the roofline (Williams,
  Waterman and Patterson, "Roofline", CACM 2009). A GEMM's bytes are its operands and its product, so a GEMM
  with a small dimension (attention's head size, a thin TP shard) falls on the memory side by itself.
* Achievable FLOP/s of a tensor-core kernel = peak × ``gemm_share`` × its wave efficiency. ``gemm_share`` is the
  GPU's one calibrated number (``engine.scale.calibration.calibrate``). The wave efficiency is NVIDIA's tile and
  wave quantization ("Matrix Multiplication Background User's Guide", §2.3 and §2.4): the output is cut into
  thread-block tiles, the tiles run in waves of one per SM, and a part-filled edge tile or last wave does no
  useful work: efficiency = useful output ÷ (waves × SMs × tile). Of the guide's tile shapes the best for the
  kernel is taken, as cuBLAS's heuristics choose among them.
* A tile's product is written to HBM after its main loop ends (the kernel's epilogue), while its SM does no math:
  with one tile per SM at a time, the product's bytes at the HBM's rate add to the math time rather than
  overlapping it. Per FLOP that is 1/k of the math (2mn bytes against 2mnk FLOPs), so it weighs on GEMMs with a
  short inner dimension k (a thin TP shard's output projection, a small model) and hardly at all on long ones.
* Element-wise kernels (norms, activations, residual adds, dropout, softmax without flash attention, the loss)
  move their bytes at ``HBM_SHARE`` of the datasheet bandwidth (``hardware``).
* Collectives are rings over NVLink inside a node and the network between nodes (``costs``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .hardware import GpuSpec
from .operations import BF16, Kernel, Operation

TILE_SHAPES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128))
"""Thread-block tiles, from the guide's most efficient (256 × 128) down; one tile per SM at a time."""


def wave_efficiency(tiles: tuple[int, int, int], sm_count: int) -> float:
    """Useful share of the tiles' waves for ``count`` outputs of rows × columns, the best over ``TILE_SHAPES``."""
    count, rows, columns = tiles
    best = 0.0
    for tile_rows, tile_columns in TILE_SHAPES:
        launched = count * math.ceil(rows / tile_rows) * math.ceil(columns / tile_columns)
        waves = math.ceil(launched / sm_count)
        best = max(best, count * rows * columns / (waves * sm_count * tile_rows * tile_columns))
    return best


def kernel_seconds(kernel: Kernel, gpu: GpuSpec) -> float:
    """One kernel on the roofline (see the module docstring)."""
    memory = kernel.bytes / gpu.hbm_bytes_per_second
    if kernel.flops == 0:
        return memory
    peak = gpu.fp8_peak_flops if kernel.fp8 else gpu.peak_flops
    if kernel.tiles is None:
        return max(kernel.flops / (peak * gpu.gemm_share * kernel.rate), memory)
    count, rows, columns = kernel.tiles
    share = gpu.gemm_share * kernel.rate * wave_efficiency(kernel.tiles, gpu.sm_count)
    epilogue = BF16 * count * rows * columns / gpu.hbm_bytes_per_second
    return max(kernel.flops / (peak * share) + epilogue, memory)


def kernels_seconds(kernels: Iterable[Kernel], gpu: GpuSpec) -> float:
    return math.fsum(kernel_seconds(kernel, gpu) for kernel in kernels)


def pass_seconds(operations: Iterable[Operation], gpu: GpuSpec, which: str) -> dict[str, float]:
    """Seconds of one pass ("forward", "input_gradient" or "weight_gradient") of ``operations``, by category."""
    seconds: dict[str, float] = {}
    for op in operations:
        seconds[op.category] = seconds.get(op.category, 0.0) + kernels_seconds(getattr(op, which), gpu)
    return seconds
