"""Search for pipeline schedules: the shortest step under a memory budget.

* ``search(SearchProblem(...))``: an exact CP-SAT model for small instances (``engine.search.exact``), a
  Zero-Bubble-style greedy for large ones (``engine.search.heuristic``) with the hand-made families of the
  same placement as further candidates (``engine.search.seeds``), and lower bounds to say how far from the
  optimum a schedule can be (``engine.search.bounds``); every result is checked by the validator and timed
  by the simulator (``SearchResult``).
* ``frontier(...)``: the best step found for each budget, and the hand-made families' points beside it
  (the app's Search page).
* ``python -m engine search``: ``engine.search.cli``.

    >>> from engine import UNIT
    >>> result = search(SearchProblem(4, 8, UNIT, memory_budget=4))
    >>> result.makespan, result.status, max(result.peak_memory)
    (27.0, 'optimal', 4.0)

OR-Tools is imported only when the exact method runs.
"""

from .bounds import BOUND_NAMES, lower_bounds
from .frontier import FamilyPoint, Frontier, FrontierPoint, family_points, frontier
from .problem import SearchProblem
from .result import NOT_PROVEN, OPTIMAL, SearchResult
from .solve import SEARCH_METHODS, search

__all__ = [
    "BOUND_NAMES",
    "FamilyPoint",
    "Frontier",
    "FrontierPoint",
    "NOT_PROVEN",
    "OPTIMAL",
    "SEARCH_METHODS",
    "SearchProblem",
    "SearchResult",
    "family_points",
    "frontier",
    "lower_bounds",
    "search",
]
