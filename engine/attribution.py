"""Why a step idles longer than the textbook says: each rank's idle time split into causes that add up to it.

[Note: idle attribution] The causes are differences between simulations of the *same* schedule, each adding
one departure from the textbook setting to the one before — so each part is something the page can show as
two timelines side by side, and the parts add up to the rank's idle time exactly (a telescoping sum):

    S0  textbook     equal stages (each the mean stage's work), F = I = W (B = 2F, F&B = F + B), free transfers
    S1  + imbalance      each stage's own total work per micro-batch, still split F = I = W
    S2  + cost ratios    each stage's own F, B, I, W (and F&B)
    S3  + transfers      the transfer time between ranks
    run + overhead       what was measured (a simulated step ends at S3, so its overhead is 0)

    schedule = idle(S0)     imbalance = idle(S1) − idle(S0)     cost ratios = idle(S2) − idle(S1)
    transfers = idle(S3) − idle(S2)     overhead = idle(run) − idle(S3)

where idle(X) is a rank's makespan minus its busy time in X. A part can be negative: a cost ratio that suits
the schedule (ZB-H1 with W > I fills more of the drain) makes the step *less* idle than the textbook's.
The per-micro-batch work of each stage is kept at every level, so the levels differ only in how that work is
shaped and spread, never in how much there is. With equal stages, F = I = W and no transfers, S0 is the run
itself and only "schedule" is non-zero: the family's closed form (``tests/engine/test_attribution.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .costs import PAIR_KEY, Costs, resolved
from .ir import Schedule
from .simulator import simulate, slot_times
from .timeline import Timeline

CAUSES = ("schedule", "imbalance", "cost ratios", "transfers", "overhead")
"""In the order they are added (see [Note: idle attribution])."""
LEVELS = ("textbook", "+ imbalance", "+ cost ratios", "+ transfers")
"""The simulations S0–S3, as the page names them."""
DEFINITIONS = {
    "schedule": "the idle time of the same schedule with equal stages, F = I = W and free transfers: the "
    "textbook bubble",
    "imbalance": "what each stage's own amount of work adds (an embedding on the first stage, an output layer on "
    "the last)",
    "cost ratios": "what each stage's own split of that work into F, B, I and W adds (W ≠ I for ZB-H1, say)",
    "transfers": "what waiting for activations and gradients to cross between ranks adds",
    "overhead": "the rest: measured minus the simulator's prediction from the measured costs (launches, "
    "bookkeeping, jitter)",
}
"""One sentence per cause, for the README, the glossary and the page."""
WHEN_NEGATIVE = {
    "imbalance": "the uneven stages idle less than even ones would: the heavier stages sit where the schedule had "
    "slack",
    "cost ratios": "this split of the work suits the schedule better than F = I = W with nothing gained from "
    "overlapping (ZB-H1 with W > I fills more of its drain; an overlapped pair shorter than F + B saves time)",
    "transfers": "waiting for a transfer moved work into a gap, so the step idles less than with free transfers",
    "overhead": "the run idled less than the simulation of its own measured costs: that simulation gives every "
    "action its stage's mean duration, so actions faster than their stage's mean, or a rank that started early, "
    "end sooner in the run than in the prediction",
}
"""Why a part can come out negative ([Note: idle attribution]): said beside it, so that it does not read as an
error. "schedule" never is (it is an idle time)."""


@dataclass(frozen=True)
class IdleAttribution:
    """Each rank's idle time, split by cause."""

    causes: tuple[str, ...]
    per_rank: np.ndarray
    """(ranks, causes): time units (simulated) or milliseconds (measured)."""
    idle: np.ndarray
    """Each rank's idle time in the run attributed; ``per_rank.sum(axis=1)`` equals it."""
    makespan: float
    level_makespans: tuple[float, ...]
    """The makespan of each simulation S0–S3 (``LEVELS``)."""
    level_idle: tuple[float, ...]
    """All ranks' idle time in each simulation S0–S3."""
    schedule: Schedule = field(repr=False)
    level_costs: tuple[Costs, ...] = field(repr=False)
    """The costs of S0–S3: the levels are timed as arrays; their Timelines are built only if asked for."""

    @cached_property
    def levels(self) -> tuple[Timeline, ...]:
        """The simulations S0–S3 as Timelines, for the page to show next to the run (built on first use)."""
        return tuple(simulate(self.schedule, costs, check=False) for costs in self.level_costs)

    def total(self, cause: str) -> float:
        """``cause``'s idle time summed over the ranks."""
        return float(self.per_rank[:, self.causes.index(cause)].sum())

    def negative(self) -> dict[str, str]:
        """The causes whose total is below zero, each with why it can be (``WHEN_NEGATIVE``)."""
        floor = -1e-9 * max(self.makespan, 1.0)
        return {cause: WHEN_NEGATIVE[cause] for cause in self.causes if self.total(cause) < floor}

    def as_dict(self) -> dict:
        """For ``--json``: per rank, each cause's time, and the total; ``negative``: why a total is below zero."""
        return {
            "causes": list(self.causes),
            "per_rank": [
                {cause: float(value) for cause, value in zip(self.causes, row, strict=True)} | {"idle": float(total)}
                for row, total in zip(self.per_rank, self.idle, strict=True)
            ],
            "total": {cause: float(value) for cause, value in zip(self.causes, self.per_rank.sum(axis=0), strict=True)},
            "levels_makespan": dict(zip(LEVELS, self.level_makespans, strict=True)),
            "negative": self.negative(),
        }


def attribute(
    schedule: Schedule, levels: list[Costs], run: Timeline, run_costs: Costs | None = None
) -> IdleAttribution:
    """Simulate ``schedule`` under each of the four cost levels (S0–S3) and split ``run``'s idle time by cause.
    A level equal to ``run_costs`` (what ``run`` was simulated with) is ``run`` itself, and one equal to an earlier
    level is not walked again: even costs make S0 = S1, no transfers S2 = S3."""
    walked: list[tuple[Costs, Any, float]] = []  # (costs, idle per rank, makespan): arrays only, no Timeline
    for costs in levels:
        if run_costs is not None and costs == run_costs:
            walked.append((costs, run.idle_per_rank(), run.makespan))
            continue
        earlier = next((level for level in walked if level[0] == costs), None)
        if earlier is None:
            times = slot_times(schedule, costs)
            earlier = (costs, times.idle_per_rank(schedule), times.makespan)
        walked.append(earlier)
    idle = np.array([level[1] for level in walked] + [run.idle_per_rank()])  # (5, ranks)
    parts = np.vstack([idle[0], np.diff(idle, axis=0)]).T  # telescoping: part k = idle(level k) − idle(level k−1)
    makespans = tuple(level[2] for level in walked)
    level_idle = tuple(float(row.sum()) for row in idle[:-1])
    return IdleAttribution(CAUSES, parts, idle[-1], run.makespan, makespans, level_idle, schedule, tuple(levels))


def attribute_simulated(schedule: Schedule, costs: Costs, timeline: Timeline) -> IdleAttribution:
    """The split of a simulated step (its overhead is 0: the run is S3 itself)."""
    actual = replace(costs, stage_costs=None)
    if costs.stage_costs is not None:
        return attribute(schedule, measured_levels(costs.stage_costs, costs), timeline)
    scale = np.asarray(costs.stage_scale or (1.0,) * schedule.num_stages, dtype=float)
    total = costs.forward + costs.backward  # one micro-batch's work through one rank's share, at scale 1
    imbalanced = _even_split(total, replace(actual, comm=0.0))  # S1: each stage its own work, F = I = W
    textbook = replace(_even_split(total * float(scale.mean()), imbalanced), stage_scale=None)  # S0
    levels = [textbook, imbalanced, replace(actual, comm=0.0), actual]
    return attribute(schedule, levels, timeline, run_costs=costs)


EVEN = ("F", "B", "I", "W")
"""The columns of an even split of one micro-batch's work: F = I = W, B = I + W (the rest by ``resolved``)."""


def measured_levels(rows: Sequence[Mapping[str, float]], costs: Costs) -> list[Costs]:
    """S0–S3 from measured per-stage durations (``Costs.stage_costs`` rows), ``costs`` the run's prediction
    costs (its transfer time and recomputation flag). S2 and S3 take the rows as they are, every kind."""
    table = np.array([[row[key] for key in EVEN] for row in rows], dtype=float)  # (stages, 4)
    work = table[:, 0] + np.where(table[:, 1] > 0, table[:, 1], table[:, 2] + table[:, 3])  # F + (B or I + W)
    share = work[:, None] * np.array([1, 2, 1, 1]) / 3  # F = I = W, B = I + W
    common: dict[str, Any] = dict(recompute=costs.recompute, w_memory_fraction=costs.w_memory_fraction)
    return [
        Costs.of(stage_costs=_rows(np.tile(share.mean(axis=0), (len(table), 1))), **common),
        Costs.of(stage_costs=_rows(share), **common),
        Costs.of(stage_costs=rows, **common),
        Costs.of(stage_costs=rows, comm=costs.comm, **common),
    ]


def _even_split(total: float, costs: Costs) -> Costs:
    """``costs`` with one micro-batch's work ``total`` split F = I = W (B = 2F), F&B = F + B."""
    third = total / 3
    return replace(costs, durations=resolved({"F": third, "I": third, "W": third, PAIR_KEY: total}))


def _rows(table: np.ndarray) -> list[dict[str, float]]:
    """Rows of an even split's table, keyed; the kinds it leaves out follow by ``resolved``'s rules."""
    return [dict(zip(EVEN, map(float, row), strict=True)) for row in table]
