"""What another schedule would give this job: every family simulated with the costs the run measured.

The measured costs are per stage; a family with another number of stages per rank splits the model
differently, so each family is simulated with one rank's share — the mean over ranks of the sum of a rank's
stages' measured F, I and W (a full backward B measured alone is split I = W = B/2, the lab's default when the
split is unknown) — and the measured transfer time. The run's own schedule is simulated with the same costs,
so each family is compared with it like for like (the measured step is shown beside it, not divided by it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..costs import Costs
from ..schedules import FAMILIES, build_schedule
from ..simulator import simulate
from .imported import ImportedRun


@dataclass(frozen=True)
class FamilyRow:
    family: str
    title: str
    chunks: int | None
    step_ms: float | None
    """The family simulated with this run's measured costs; None when it cannot run these sizes."""
    step_change: float | None
    """(step − this schedule's simulated step) / this schedule's simulated step."""
    peak_memory_ratio: float | None
    """The busiest rank's peak activation memory over this schedule's (simulated, same costs)."""
    note: str = ""


def share_costs(run: ImportedRun) -> Costs:
    """One rank's share of the measured per-stage costs (see the module docstring)."""
    schedule = run.schedule
    totals = {key: 0.0 for key in ("F", "I", "W")}
    for row in run.stage_costs:
        split = row["I"] > 0 or row["W"] > 0
        totals["F"] += row["F"]
        totals["I"] += row["I"] if split else row["B"] / 2
        totals["W"] += row["W"] if split else row["B"] / 2
    per_rank = {key: value / schedule.num_ranks for key, value in totals.items()}
    return Costs.of(per_rank, comm=run.transfer_ms)


def family_table(run: ImportedRun) -> tuple[float, list[FamilyRow]]:
    """This schedule's own simulated step with the share costs, and one row per family."""
    costs = share_costs(run)
    own = simulate(run.schedule, costs, check=False)
    own_peak = max(own.peak_memory_per_rank(), default=0.0) or 1.0
    p, m = run.schedule.num_ranks, run.schedule.num_microbatches
    rows = []
    for name, family in FAMILIES.items():
        chunks = run.schedule.num_chunks if family.takes_chunks and run.schedule.num_chunks > 1 else None
        try:
            timeline = simulate(build_schedule(name, p, m, chunks), family.costs(costs.durations, comm=costs.comm))
        except ValueError as error:
            rows.append(FamilyRow(name, family.title, chunks, None, None, None, str(error).splitlines()[0][:160]))
            continue
        peak = max(timeline.peak_memory_per_rank(), default=0.0)
        rows.append(
            FamilyRow(
                name,
                family.title,
                family.chunks(chunks),
                timeline.makespan,
                timeline.makespan / own.makespan - 1 if own.makespan else None,
                peak / own_peak,
                "; ".join(family.size_notes(p, m))[:160],
            )
        )
    rows.sort(key=lambda row: (row.step_ms is None, row.step_ms if row.step_ms is not None else np.inf))
    return own.makespan, rows
