"""Step 3 of ``engine.traces.imported``: which profiled steps to read — the one asked for, else every
``ProfilerStep#N`` found on every rank — and each rank's window for it."""

from __future__ import annotations

import numpy as np

from .names import STEP, read_label
from .reading import RankTrace, TraceError

Windows = dict[int, tuple[float, float]]


def steps_to_read(by_rank: dict[int, RankTrace], wanted: int | None) -> list[tuple[int | None, Windows]]:
    """The profiled steps to read, each with every rank's window (µs): the one asked for, else every
    ``ProfilerStep#N`` on every rank (those with labelled actions on every rank, when any has), in order; the
    whole trace when it marks no step."""
    found = {rank: _profiler_steps(trace) for rank, trace in by_rank.items()}
    if not any(found.values()):
        if wanted is not None:
            raise TraceError(f"step {wanted} asked for, but the traces mark no ProfilerStep#N")
        return [(None, {rank: (-np.inf, np.inf) for rank in by_rank})]
    common = set.intersection(*(set(steps) for steps in found.values()))
    if not common:
        listed = "; ".join(f"rank {rank} has {', '.join(map(str, sorted(steps))) or 'none'}" for rank, steps in
                           sorted(found.items()))  # fmt: skip
        raise TraceError(f"the ranks' ProfilerStep#N do not line up: {listed}")
    if wanted is not None:
        if wanted not in common:
            raise TraceError(
                f"step {wanted} is not on every rank; steps on every rank: {', '.join(map(str, sorted(common)))}"
            )
        return [(wanted, {rank: steps[wanted] for rank, steps in found.items()})]
    every: list[tuple[int | None, Windows]] = [
        (step, {rank: steps[step] for rank, steps in found.items()}) for step in sorted(common)
    ]
    complete = [(step, windows) for step, windows in every if all(
        _has_actions(by_rank[rank], windows[rank]) for rank in by_rank)]  # fmt: skip
    return complete or every


def _profiler_steps(trace: RankTrace) -> dict[int, tuple[float, float]]:
    steps = {}
    for event in trace.events:
        match = STEP.fullmatch(event.name)
        if match is not None:
            steps[int(match.group(1))] = (event.start, event.end)
    return steps


def _has_actions(trace: RankTrace, window: tuple[float, float]) -> bool:
    return any(window[0] <= e.start <= window[1] and read_label(e.name).compute is not None for e in trace.events)
