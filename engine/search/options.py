"""The search's settings, declared once (``engine.options``): the command line's flags are typed and bounded by
these, and the Search page narrows them (``app/search_settings.py``: the public server draws fewer ranks, fewer
micro-batches and shorter searches). A value outside a bound is refused with the bound, in one line."""

from __future__ import annotations

from ..limits import MAX_MICROBATCHES, MAX_RANKS
from ..options import real, whole

MAX_SEARCH_PAIRS = 16_384
"""Stages × micro-batches a search takes: 32 ranks × 256 micro-batches on a V (64 stages), the Search page's
largest, where the greedy alone takes about a second; the simulator's own bound is 8× more."""
MAX_SEARCH_COST = 1e6
"""The longest an action or a transfer may take, in the search's units: costs are relative, and above this the
exact model's ticks and the greedy's windows leave the range their arithmetic is exact in (``1e308`` overflowed)."""
MAX_SEARCH_CHUNKS = 4
"""The most chunks per rank a loop search takes (Megatron's interleaving is used with 2 to 4 in practice)."""
MAX_TIME_LIMIT_S = 3600.0
"""The longest a single search may be given."""
MIN_TIME_LIMIT_S = 0.1
"""The shortest: the greedy's first answer and the final check need about this much at small sizes."""

RANKS = whole("ranks", 1, MAX_RANKS, "Ranks (devices), p", "pipeline ranks (devices), p", widget="slider")
MICROBATCHES = whole(
    "microbatches", 1, MAX_MICROBATCHES, "Micro-batches, m", "micro-batches per step, m", widget="slider"
)
COMM = real(
    "comm",
    0.0,
    MAX_SEARCH_COST,
    "Transfer between ranks",
    "Time from the end of an action to its output's arrival on another rank.",
    step=0.25,
)
MEMORY = real(
    "memory",
    0.0,
    2.0 * MAX_RANKS,
    "Memory budget per rank (micro-batches of its share)",
    "budget: activation memory a rank may hold, in micro-batches of its share (1F1B peaks at p)",
    step=0.5,
)
TIME_LIMIT = real(
    "time",
    MIN_TIME_LIMIT_S,
    MAX_TIME_LIMIT_S,
    "Time limit (s)",
    "how long the search may take, in seconds (on the command line, counted from the command's start)",
    widget="slider",
    step=1.0,
)
