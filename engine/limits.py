"""What the engine accepts, in one place, with the arithmetic in every refusal: the schedules' sizes, a plan's
sizes at real scale, and the check for each kind of number. (The public app narrows some of these further for one
visitor, in ``app/frame/limits.py``, each narrowing checked against the bound here.)

The work of a schedule grows with ranks × micro-batches × chunks — the number of (stage, micro-batch)
pairs, each with one forward and one backward (two actions when the backward is split). ``MAX_PAIRS``
bounds that product so the slowest family (ZB-H2, three actions a pair) builds, checks and simulates in a
few seconds and well under 1 GB on a 2-core machine (``benchmarks/simulate.py --limits`` measures it).
"""

from __future__ import annotations

import math

MAX_RANKS = 256
MAX_MICROBATCHES = 16384
MAX_CHUNKS = 64
MAX_SQUEEZED_RANKS = 128
"""V-Half and V-Min squeeze their warm-up and cool-down slot by slot, work that grows about as p³: about
5 s at 128 ranks on the 2-core reference machine, 20–30 s at 256, so they stop at 128."""
MAX_PAIRS = 131_072
"""p × m × v: (stage, micro-batch) pairs in one schedule."""
MAX_CSV_BYTES = 8 * 1024 * 1024
"""A schedule CSV larger than this is refused before it is parsed."""
MAX_CSV_CELLS = 8 * MAX_PAIRS
"""Cells (actions, communication actions and idle steps) in one CSV."""


def whole_number(label: str, value, low: int, high: int, who: str = "") -> int:
    """``value`` if it is an int in [low, high]; otherwise ValueError saying what is accepted."""
    prefix = f"{who}: " if who else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{prefix}{label} must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{prefix}{label} must be from {low} to {high}, got {value}")
    return value


def check_pairs(num_ranks: int, num_microbatches: int, num_chunks: int, who: str = "") -> None:
    """Refuse a schedule whose ranks × micro-batches × chunks exceeds ``MAX_PAIRS``, showing the product."""
    pairs = num_ranks * num_microbatches * num_chunks
    if pairs > MAX_PAIRS:
        prefix = f"{who}: " if who else ""
        raise ValueError(
            f"{prefix}{num_ranks} ranks × {num_microbatches} micro-batches × {num_chunks} chunk(s) = "
            f"{pairs:,} (stage, micro-batch) pairs; the lab simulates up to {MAX_PAIRS:,}"
        )


SIMULATE_BYTES_PER_ACTION = 640
"""Memory one action costs while a schedule is built, checked and simulated (its slots, the walk's arrays, the
timeline's rows): measured as the slope between ZB-H2 at 128 and 256 ranks × 512 micro-batches (230 and 343 MB
above the imports: 0.57 KB an action), rounded up."""
SIMULATE_COMPILER_BYTES = 128 * 1024 * 1024
"""Numba's compiler, loaded for the fast walk once a process walks ``fast_walk.FIRST_USE_SLOTS`` slots
(the same fit's intercept, about 118 MB, rounded up)."""


def simulate_bytes(num_pairs: int, *, compiled: bool) -> int:
    """An upper estimate of the memory simulating ``num_pairs`` (stage, micro-batch) pairs takes above the
    imports: three actions a pair (a split backward), and the compiler when the fast walk loads it
    (``tests/engine/test_cli.py`` checks it against a measured run)."""
    return 3 * num_pairs * SIMULATE_BYTES_PER_ACTION + (SIMULATE_COMPILER_BYTES if compiled else 0)


# -- a schedule search (engine.search) ------------------------------------------------------------------------------
MAX_SEARCH_PAIRS = 16_384
"""Stages × micro-batches a search takes: 32 ranks × 256 micro-batches on a V (64 stages), the Search page's
largest, where the greedy alone takes about a second; the simulator's own bound is 8× more."""
MAX_SEARCH_COST = 1e6
"""The longest an action or a transfer may take, in the search's units: costs are relative, and above this the
exact model's ticks and the greedy's windows leave the range their arithmetic is exact in (``1e308`` overflows)."""
MAX_SEARCH_CHUNKS = 4
"""The most chunks per rank a loop search takes (Megatron's interleaving is used with 2 to 4 in practice)."""
MAX_TIME_LIMIT_S = 3600.0
"""The longest a single search may be given."""
MIN_TIME_LIMIT_S = 0.1
"""The shortest: the greedy's first answer and the final check need about this much at small sizes."""


# -- a plan at real scale (engine.scale) ---------------------------------------------------------------------------
# The plan is arithmetic on sizes, so almost any size computes; these bounds refuse nonsense (NaN, a negative
# bandwidth, 10⁹ layers) in words before it turns into an overflow or an hour-long simulation.
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
