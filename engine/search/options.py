"""The search's settings, each declared once (``engine.options``) with its bounds (``engine.limits``, the one
home of bounds): the command line's flags are typed and bounded by these (``engine.search.request.SearchRequest``
gives them their defaults), and the Search page narrows them (``app/views/search/settings.py``: the public server
draws fewer ranks, fewer micro-batches and shorter searches). A value outside a bound is refused with the bound,
in one line."""

from __future__ import annotations

from dataclasses import replace

from ..limits import MAX_RANKS, MAX_SEARCH_CHUNKS, MAX_SEARCH_COST, MAX_TIME_LIMIT_S, MIN_TIME_LIMIT_S
from ..options import choose, real, verbatim
from ..settings import MICROBATCHES as MICROBATCHES  # the engine's, which every command takes
from ..settings import RANKS as RANKS
from .problem import SEARCHED_PLACEMENTS

PLACEMENT = choose(
    "placement",
    SEARCHED_PLACEMENTS,
    "Placement",
    "Where each stage lives: a loop (stage s on rank s mod p, one stage per rank or several) or a V; auto chunks "
    "search both.",
    titles={"loop": "a loop: stage s on rank s mod p", "v": "a V: two chunks per rank"},
    widget="radio",
)
CHUNK_CHOICES = ("auto", *(str(v) for v in range(1, MAX_SEARCH_CHUNKS + 1)))
CHUNKS = choose(
    "chunks",
    CHUNK_CHOICES,
    "Chunks per rank",
    "How many model chunks each rank holds in a loop (Megatron's interleaving, with the backward split); a V "
    "always has 2. auto searches one stage per rank, the V and loops of 2 to 4 chunks within the time limit and "
    "keeps the best, so 'optimal' is said of the space it was proven in, with what the others reached. On the "
    "command line, without --chunks: the placement's own (1 in a loop, 2 on a V).",
    titles={"auto": "auto: every placement, the best kept", "1": "1 (one stage per rank)"}
    | {str(v): f"{v} in a loop" for v in range(2, MAX_SEARCH_CHUNKS + 1)},
    widget="radio",
)
"""The Search page starts at auto; the command line at the placement's own chunks, because auto searches every
placement: it would set ``--placement`` aside, refuse per-stage ``--costs`` and skip, rather than refuse with its
arithmetic, a space the ``--method`` cannot take (``SearchRequest``)."""
COSTS = verbatim(
    "costs",
    "Costs F, I, W",
    'durations per rank share: "F=1,I=1,W=1", or per stage "F=1:1:2:1,I=1:1:2:1,W=1:1:1:1"',
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
TIME_LIMIT = replace(
    real(
        "time",
        MIN_TIME_LIMIT_S,
        MAX_TIME_LIMIT_S,
        "Time limit (s)",
        "how long the search may take, in seconds (on the command line, counted from the command's start)",
        widget="slider",
        step=1.0,
    ),
    flag="--time-limit",
)
