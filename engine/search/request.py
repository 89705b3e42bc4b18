"""What one search asks for, each setting declared once with its default: ``SearchRequest``, from which
``python -m engine search`` derives its flags (``engine.search.cli``). The declarations and their bounds are
``engine.search.options``'s, which the Search page narrows for the public server."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import Declared, choose, declared
from .options import CHUNKS, COMM, COSTS, MEMORY, MICROBATCHES, PLACEMENT, RANKS, TIME_LIMIT
from .problem import OBJECTIVES
from .solve import SEARCH_METHODS

REQUIRED = ("num_ranks", "num_microbatches", "memory_budget")
"""What the command line must be given: the sizes and the budget have no default a search could assume."""


@dataclass(frozen=True)
class SearchRequest(Declared):
    """A search's settings under ``SearchProblem``'s names."""

    num_ranks: int = declared(4, RANKS)
    num_microbatches: int = declared(8, MICROBATCHES)
    placement: str = declared("loop", PLACEMENT)
    chunks: str | None = declared(None, CHUNKS)
    """None: the placement's own (1 in a loop, 2 on a V); "auto": every placement (``CHUNKS`` says why the
    command line does not start there)."""
    costs: str = declared("F=1,I=1,W=1", COSTS)
    comm: float = declared(0.0, COMM)
    memory_budget: float = declared(4.0, MEMORY)
    time_limit_s: float = declared(10.0, TIME_LIMIT)
    method: str = declared(
        "auto",
        choose(
            "method",
            SEARCH_METHODS,
            "Method",
            "auto: the greedy, then CP-SAT when the instance is small enough to "
            "prove; exact: CP-SAT; heuristic: the greedy alone",
        ),  # fmt: skip
    )
    objective: str = declared(
        "makespan",
        choose(
            "objective",
            OBJECTIVES,
            "Minimise",
            "makespan: one step from time 0; period: the longest rank span, a repeated step's cost (Zero Bubble)",
        ),  # fmt: skip
    )
