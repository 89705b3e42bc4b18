"""Bounds on the numbers a plan accepts, with what is accepted said in every refusal.

The plan is arithmetic on sizes, so almost any size computes; the bounds are there to refuse nonsense (NaN, a
negative bandwidth, 10⁹ layers) in words before it turns into an overflow or an hour-long simulation.
Whole numbers reuse ``engine.limits.whole_number``; this module adds the one check it lacks, for reals.
"""

from __future__ import annotations

import math

MAX_LAYERS = 10_000
MAX_HIDDEN = 1_048_576
MAX_FFN = 8 * MAX_HIDDEN
MAX_HEADS = 65_536
MAX_VOCAB = 16_777_216
MAX_SEQUENCE = 16_777_216
MAX_PARALLEL = 65_536
"""Largest TP, CP or DP degree."""
MAX_GLOBAL_BATCH = 16_777_216
"""Sequences per step."""
MAX_GPUS_PER_NODE = 1_024
MAX_SMS = 4_096
MAX_PEAK_TFLOPS = 1_000_000.0
MAX_MEMORY_GB = 1_000_000.0
MAX_BANDWIDTH_GB_S = 1_000_000.0
# The least that makes physical sense for a GPU one would plan a pipeline on: below these the step time is a
# number with hundreds of digits, not a plan (a 2012 Kepler K20 had 3.5 TFLOP/s, 5 GB and 208 GB/s).
MIN_PEAK_TFLOPS = 1.0
MIN_MEMORY_GB = 1.0
MIN_BANDWIDTH_GB_S = 1.0
MIN_GEMM_SHARE = 0.05
"""Below 5 % of peak no GEMM worth planning runs."""


def real_number(label: str, value, low: float, high: float, *, low_open: bool = True) -> float:
    """``value`` as a float if it is a finite number in (low, high] (or [low, high] with ``low_open=False``);
    otherwise ValueError saying what is accepted."""
    accepted = f"a finite number {'>' if low_open else '≥'} {low:g} and ≤ {high:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{label} must be {accepted}, got {value!r}")
    if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
        raise ValueError(f"{label} must be {accepted}, got {value!r}")
    return float(value)
