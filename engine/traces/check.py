"""The order read, checked against the schedule it claims to be: a family's generator, or a CSV the user
gives. The first difference is drawn on the rank × step grid with ``<-- here``; a reference that cannot be built
for these sizes is said in words."""

from __future__ import annotations

from ..ir import Overlap, Schedule
from ..pytorch_csv import read_csv


def check_order(schedule: Schedule, expected: str) -> str | None:
    """The first difference between the order read and the schedule it claims to be (a family's name, or a CSV
    text), drawn on the read schedule's grid with ``<-- here``; None when they are equal. A reference that cannot
    be built for these sizes is said in words, not raised: the run itself was read."""
    from ..schedules import FAMILIES, build_schedule

    try:
        if expected in FAMILIES:
            family = FAMILIES[expected]
            chunks = schedule.num_chunks if family.takes_chunks else None
            reference = build_schedule(expected, schedule.num_ranks, schedule.num_microbatches, chunks)
        elif "," not in expected and "\n" not in expected:
            return f"cannot check against {expected!r}: not a family (choose from {', '.join(FAMILIES)}) or a CSV"
        else:
            reference = read_csv(expected).schedule
    except ValueError as error:
        return f"cannot check against {expected[:40]!r}: {str(error).splitlines()[0]}"
    if (reference.num_ranks, reference.num_stages) != (schedule.num_ranks, schedule.num_stages):
        return (
            f"{schedule.num_ranks} ranks and {schedule.num_stages} stages read; {expected[:40]} has "
            f"{reference.num_ranks} ranks and {reference.num_stages} stages"
        )
    for rank, (read, wanted) in enumerate(zip(schedule.ranks, reference.ranks, strict=True)):
        for step, (got, want) in enumerate(zip(read, wanted, strict=False)):
            if not _same(got, want):
                return schedule.grid(mark={rank: step}, notes={rank: f"{expected} has {want} here"}, max_rows=12)
        if len(read) != len(wanted):
            step = max(min(len(read), len(wanted)) - 1, 0)
            note = f"{len(read)} actions, {expected} has {len(wanted)}"
            return schedule.grid(mark={rank: step}, notes={rank: note}, max_rows=12)
    return None


def comparable(schedule: Schedule, expected: str) -> bool:
    """Whether ``check_order`` compared orders (rather than saying why it could not)."""
    said = check_order(schedule, expected)
    return said is None or "<-- here" in said


def _same(a, b) -> bool:
    if isinstance(a, Overlap) or isinstance(b, Overlap):
        return str(a) == str(b)
    return a == b
