"""What a visitor asks the Search page for, in one typed object (pure: no Streamlit here): sizes, placement,
costs (one F, I, W for all stages, or one per stage — a real run's measured costs arrive that way), a memory
budget and a time limit; its URL codec, widget keys, limits and conversion to the engine's ``SearchProblem``.

    /search?ranks=4&microbatches=8&costs=F=1,I=1,W=1&memory=4
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from app.frame import limits
from app.frame.safe_text import plain
from engine import Costs
from engine.costs import PER_STAGE_SEPARATOR, split_backward
from engine.ir import PLACEMENTS
from engine.options import Declared, Option, Text, choose, code_span, declared
from engine.search import SearchProblem
from engine.search import options as searched
from engine.search.frontier import default_budgets
from engine.search.problem import OBJECTIVES

COSTS = Text(lambda text: text if text.strip() else _empty(), str, "F=1,I=1,W=1, or per stage F=1:2:1:1,I=…,W=…")


COSTS_HELP = (
    "One micro-batch through one stage: F=1,I=1,W=1 for every stage, or per stage F=1:2:1:1,I=…,W=… (a real "
    "run's measured costs arrive that way)."
)


OBJECTIVE_TITLES = {"makespan": "the step from time 0 (makespan)", "period": "a repeated step (period, Zero Bubble)"}
OBJECTIVE_HELP = " · ".join(f"{name}: {words}" for name, words in OBJECTIVES.items())


def _empty() -> str:
    raise ValueError("no costs given")


@dataclass(frozen=True)
class SearchSettings(Declared):
    PREFIX = "sr"

    # the search's own declarations (engine.search.options, which the command line reads), narrowed for the
    # public server: the same keys, labels and kinds of bound
    num_ranks: int = declared(4, searched.RANKS.narrowed(high=limits.MAX_RANKS))
    num_microbatches: int = declared(8, searched.MICROBATCHES.narrowed(high=limits.MAX_MICROBATCHES))
    placement: str = declared("loop", searched.PLACEMENT)
    """"loop" (one stage per rank, or ``chunks`` of them) or "v" (two chunks in a V)."""
    chunks: str = declared("auto", searched.CHUNKS)  # the command line's own default differs: searched.CHUNKS says why
    """"auto" (every placement searched, the best kept) or v chunks per rank in a loop ("1"…"4")."""
    costs: str = declared("F=1,I=1,W=1", Option("costs", COSTS, "Costs F, I, W", COSTS_HELP, widget="text"))
    comm: float = declared(0.0, searched.COMM.narrowed(high=limits.MAX_COST))
    # a number box with fixed bounds: a slider whose maximum followed p would be a new widget at each p, and
    # Streamlit would reset the budget to its minimum (a change of p must not overwrite it)
    memory_budget: float = declared(4.0, searched.MEMORY.narrowed(high=limits.MAX_MEMORY_BUDGET))
    """Activation memory a rank may hold, in micro-batches of its share (1F1B peaks at p)."""
    objective: str = declared(
        "makespan",
        choose("objective", tuple(OBJECTIVES), "Minimise", OBJECTIVE_HELP, titles=OBJECTIVE_TITLES, widget="radio"),
    )
    """What the search minimises (``engine.search.problem.OBJECTIVES``)."""
    # 10 s, the command line's default: a search ends as soon as it is proven (4 × 8 in every space: 0.05 s), and
    # the Zero Bubble paper's 1.5B, p = 8, m = 32 row needs about 10 s to reach its ZB-2p (0.0087 at 5 s)
    time_limit_s: float = declared(10.0, searched.TIME_LIMIT.narrowed(low=1.0, high=limits.MAX_SEARCH_SECONDS))

    @classmethod
    def _after_query(cls, settings, query, problems):
        """A link's ``memory`` defaults to 1F1B's p for its ``ranks``; costs that do not fit its stages are refused."""
        if "memory" not in query:
            settings = replace(settings, memory_budget=float(settings.num_ranks))
        try:
            settings.engine_costs()
        except ValueError as error:
            problems.append(f"costs={code_span(settings.costs)}: {plain(error)}; using {cls().costs}")
            settings = replace(settings, costs=cls().costs)
        return settings, problems

    @property
    def every_space(self) -> bool:
        """``auto`` chunks: every placement searched (``engine.search.spaces``)."""
        return self.chunks == "auto"

    @property
    def loop_chunks(self) -> int | None:
        """The chunks per rank the engine is asked for: a number in a loop; None on a V (always 2) or with auto."""
        return None if self.every_space or self.placement == "v" else int(self.chunks)

    @property
    def num_stages(self) -> int:
        return self.num_ranks * PLACEMENTS[self.placement].chunks(self.loop_chunks)

    def engine_costs(self) -> Costs:
        """The costs as the engine reads them (ValueError in words for a bad costs text). With auto, one cost per
        kind: a stage is a different part of the model in each placement."""
        if self.every_space and PER_STAGE_SEPARATOR in self.costs:
            raise ValueError(
                "costs per stage need one placement and number of chunks: choose the chunks, or give one F, I, W"
            )
        return Costs.parse(self.costs, num_stages=self.num_stages, where="the search", comm=self.comm)

    def to_problem(self) -> SearchProblem:
        """The engine's search problem (ValueError with the arithmetic when it cannot be searched); with auto,
        the problem in its placement, which ``engine.search.spaces`` searches in every other too."""
        return SearchProblem(
            self.num_ranks,
            self.num_microbatches,
            self.engine_costs(),
            memory_budget=self.memory_budget,
            placement=self.placement,
            time_limit_s=self.time_limit_s,
            objective=self.objective,
            chunks=self.loop_chunks,
        )

    def frontier_budgets(self) -> tuple[float, ...]:
        """The budgets the frontier searches: every whole one from the least any schedule needs to 2p, or, when
        that is more than ``limits.MAX_FRONTIER_BUDGETS``, the ends, p (1F1B's peak), 2p − 1 (ZB-H2's) and whole
        numbers evenly between. Each is one search: all 2p at p = 32 would take over a minute. ValueError (with
        the arithmetic) when these settings cannot be searched."""
        every = default_budgets(self.to_problem())
        if len(every) <= limits.MAX_FRONTIER_BUDGETS:
            return every
        low, high = every[0], every[-1]
        step = (high - low) / (limits.MAX_FRONTIER_BUDGETS - 1)
        marks = (float(self.num_ranks), 2.0 * self.num_ranks - 1)
        between = (float(round(low + i * step)) for i in range(1, limits.MAX_FRONTIER_BUDGETS - 1))
        return tuple(sorted({low, high, *(b for b in (*marks, *between) if low < b < high)}))

    # -- from a real run ---------------------------------------------------------------------------------------
    @classmethod
    def from_measured(cls, num_ranks: int, num_microbatches: int, placement: str, table) -> SearchSettings:
        """The Real run page's "search with these measured costs": the per-stage (F, B, I, W) a run measured, in
        ms (a full backward split in half between I and W), at a budget of 1F1B's p."""
        forward, inputs, weights = split_backward(table)
        # three significant digits of the largest cost, every cost on that grid: the exact method needs a factor
        # of at most 1000 that makes each cost whole (engine.search.exact.MAX_SCALE), which 4 significant digits
        # of each cost on its own almost never have
        unit = 10.0 ** (math.floor(math.log10(max(forward + inputs + weights))) - 2)
        text = ",".join(
            f"{name}=" + ":".join(f"{max(round(value / unit), 1) * unit:.10g}" for value in values)
            for name, values in (("F", forward), ("I", inputs), ("W", weights))
        )
        chunks = str(PLACEMENTS[placement].chunks())  # the run's own placement: 1 in a loop, 2 on a V
        return cls(num_ranks, num_microbatches, placement, chunks, text, memory_budget=float(num_ranks))


SEARCH_KEYS = SearchSettings.url_keys()
