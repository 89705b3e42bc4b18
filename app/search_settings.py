"""What a visitor asks the Search page for, in one typed object (pure: no Streamlit here): sizes, placement,
costs (one F, I, W for all stages, or one per stage — a real run's measured costs arrive that way), a memory
budget and a time limit; its URL codec, widget keys, limits and conversion to the engine's ``SearchProblem``.

    /search?ranks=4&microbatches=8&costs=F=1,I=1,W=1&memory=4
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from engine import Costs
from engine.search import SearchProblem
from engine.search.frontier import default_budgets

from . import limits
from .codec import choice, number, plain, shown, whole, written

SEARCH_KEYS = ("ranks", "microbatches", "placement", "costs", "comm", "memory", "time")
PLACEMENTS = ("loop", "v")
PREFIX = "sr"


@dataclass(frozen=True)
class SearchSettings:
    num_ranks: int = 4
    """p (URL ``ranks``)."""
    num_microbatches: int = 8
    """m (URL ``microbatches``)."""
    placement: str = "loop"
    """"loop" (one stage per rank) or "v" (two chunks in a V) (URL ``placement``)."""
    costs: str = "F=1,I=1,W=1"
    """F, I, W for every stage, or per stage "F=1:2:1:1,I=…,W=…" (URL ``costs``)."""
    comm: float = 0.0
    """Transfer time between ranks (URL ``comm``)."""
    memory_budget: float = 4.0
    """Activation memory a rank may hold, in micro-batches of its share (URL ``memory``; 1F1B peaks at p)."""
    time_limit_s: float = 5.0
    """How long the search may take (URL ``time``)."""

    @property
    def num_stages(self) -> int:
        return self.num_ranks * (2 if self.placement == "v" else 1)

    def engine_costs(self) -> Costs:
        """The costs as the engine reads them (ValueError in words for a bad costs text)."""
        return Costs.parse(self.costs, num_stages=self.num_stages, where="the search", comm=self.comm)

    def to_problem(self) -> SearchProblem:
        """The engine's search problem (ValueError with the arithmetic when it cannot be searched)."""
        return SearchProblem(
            self.num_ranks,
            self.num_microbatches,
            self.engine_costs(),
            memory_budget=self.memory_budget,
            placement=self.placement,
            time_limit_s=self.time_limit_s,
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

    # -- the address bar -----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        return {
            "ranks": str(self.num_ranks),
            "microbatches": str(self.num_microbatches),
            "placement": self.placement,
            "costs": self.costs,
            "comm": written(self.comm),
            "memory": written(self.memory_budget),
            "time": written(self.time_limit_s),
        }

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> tuple[SearchSettings, list[str]]:
        base = cls()
        problems: list[str] = []
        settings = replace(
            base,
            num_ranks=whole(query, "ranks", 1, limits.MAX_RANKS, base.num_ranks, problems),
            num_microbatches=whole(query, "microbatches", 1, limits.MAX_MICROBATCHES, base.num_microbatches, problems),
            placement=choice(query, "placement", PLACEMENTS, base.placement, problems),
            comm=number(query, "comm", limits.MAX_COST, base.comm, problems),
            time_limit_s=number(query, "time", limits.MAX_SEARCH_SECONDS, base.time_limit_s, problems),
        )
        settings = replace(
            settings,
            memory_budget=number(query, "memory", limits.MAX_MEMORY_BUDGET, float(settings.num_ranks), problems),
        )
        text = query.get("costs")
        if text is not None:
            try:
                replace(settings, costs=text).engine_costs()
                settings = replace(settings, costs=text)
            except ValueError as error:
                problems.append(f"costs={shown(text)}: {plain(error)}; using {settings.costs}")
        return settings, problems

    # -- the widgets ---------------------------------------------------------------------------------------
    @staticmethod
    def widget_key(name: str) -> str:
        return f"{PREFIX}_{name}"

    def widget_values(self) -> dict[str, object]:
        return {self.widget_key(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_widgets(cls, values: Mapping[str, object]) -> SearchSettings:
        given = {f.name: values[cls.widget_key(f.name)] for f in fields(cls) if cls.widget_key(f.name) in values}
        return cls(**given)  # type: ignore[arg-type]  # the widgets hold the fields' types

    # -- from a real run ---------------------------------------------------------------------------------------
    @classmethod
    def from_measured(cls, num_ranks: int, num_microbatches: int, placement: str, table) -> SearchSettings:
        """The Real run page's "search with these measured costs": the per-stage (F, B, I, W) a run measured, in
        ms (a full backward split in half between I and W), at a budget of 1F1B's p."""
        forward, full, backward_input, backward_weight = ([row[key] for row in table] for key in ("F", "B", "I", "W"))
        inputs = [i if i > 0 else b / 2 for i, b in zip(backward_input, full, strict=True)]
        weights = [w if w > 0 else b / 2 for w, b in zip(backward_weight, full, strict=True)]
        # three significant digits of the largest cost, every cost on that grid: the exact method needs a factor
        # of at most 1000 that makes each cost whole (engine.search.exact.MAX_SCALE), which 4 significant digits
        # of each cost on its own almost never have
        unit = 10.0 ** (math.floor(math.log10(max(forward + inputs + weights))) - 2)
        text = ",".join(
            f"{name}=" + ":".join(f"{max(round(value / unit), 1) * unit:.10g}" for value in values)
            for name, values in (("F", forward), ("I", inputs), ("W", weights))
        )
        return cls(num_ranks, num_microbatches, placement, text, memory_budget=float(num_ranks))
