"""The settings ``python -m engine simulate`` takes, and the ones several commands share (ranks, micro-batches,
chunks, the schedule family), each declared once (``engine.options``) with the engine's bounds
(``engine.limits``). ``simulate``'s flags derive from ``SimulateSettings``; ``run``'s, ``search``'s and
``trace``'s from their own settings classes (``engine.runtime.settings``, ``engine.search.request``,
``engine.traces.settings``), ``plan``'s from ``engine.scale.request.PlanRequest``.

A field's default is the flag's; None where the command decides without it (no ``--schedule`` with
``--from-csv``, no ``--chunks`` for a family that does not interleave).
"""

from __future__ import annotations

from dataclasses import dataclass

from .limits import MAX_CHUNKS, MAX_MICROBATCHES, MAX_RANKS
from .options import Declared, amount, choose, declared, toggle, verbatim, whole
from .schedules import FAMILIES

RANKS = whole("ranks", 1, MAX_RANKS, "Ranks (devices), p", "pipeline ranks (devices), p", widget="slider")
MICROBATCHES = whole(
    "microbatches", 1, MAX_MICROBATCHES, "Micro-batches, m", "micro-batches per step, m", widget="slider"
)
CHUNKS = whole(
    "chunks",
    1,
    MAX_CHUNKS,
    "Chunks per rank, v",
    "model chunks per rank, v (the families that interleave: "
    + ", ".join(name for name, family in FAMILIES.items() if family.takes_chunks)
    + ")",
)
SCHEDULE = choose(
    "schedule", FAMILIES, "Schedule", "schedule family", titles={name: f.title for name, f in FAMILIES.items()}
)
TRANSFER = amount("comm", "Transfer between ranks", "transfer time between ranks")
EXPERT_COMM = amount(
    "expert_comm",
    "All-to-all inside each F and B",
    "communication inside each forward and each backward (an expert all-to-all's dispatch and combine, per "
    "micro-batch through one rank's share); an overlapped F&B pair hides each half's under the other's compute",
)
RECOMPUTE = toggle(
    "recompute", "Recompute activations", "keep only each stage's inputs and re-run the forward before each backward"
)


@dataclass(frozen=True)
class SimulateSettings(Declared):
    """What ``simulate`` takes: a family and its sizes (or a CSV's schedule, ``--from-csv``) and the costs."""

    schedule: str | None = declared(None, SCHEDULE)
    ranks: int | None = declared(None, RANKS)
    microbatches: int | None = declared(None, MICROBATCHES)
    chunks: int | None = declared(None, CHUNKS)
    costs: str = declared("F=1,B=2", verbatim("costs", "Costs", 'durations per rank share: "F=1,B=2" or "F=1,I=1,W=1"'))
    comm: float = declared(0.0, TRANSFER)
    expert_comm: float = declared(0.0, EXPERT_COMM)
    shared_links: bool = declared(
        False, toggle("shared_links", "Shared links", "a transfer occupies its link: one at a time per direction")
    )
    stage_scale: str | None = declared(
        None,
        verbatim("stage_scale", "Stage multipliers", "cost multiplier per stage, for imbalance", metavar="S0,S1,..."),
    )
    recompute: bool = declared(False, RECOMPUTE)
