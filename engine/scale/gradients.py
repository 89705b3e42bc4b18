"""The end of a step: when each pipeline rank's gradients are complete, how long their reduction over the
data-parallel replicas takes (``costs.data_parallel_seconds``), then the tied embedding's and DualPipe's copies'
sums and the optimizer step (``step_ends``).

Without overlap a rank reduces all its gradients after its last action. With ``Layout.dp_overlap`` (Megatron's
overlap-grad-reduce, FSDP's bucketed reduce-scatter) each stage's gradients leave as soon as that stage's last
backward ends, one stage after another on the rank's network link; the step ends when the last reduction does.
"""

from __future__ import annotations

from ..ir import Schedule
from ..timeline import Timeline
from .costs import (
    copies_reduction_seconds,
    data_parallel_seconds,
    embedding_reduction_seconds,
    optimizer_step_seconds,
)
from .hardware import GpuSpec
from .layout import Layout
from .models import ModelSpec
from .records import AllReduce, StepEnd

GRADIENT_KINDS = ("B", "W")
"""The actions after which a stage's weight gradients are complete."""


def gradient_reductions(
    timeline: Timeline, schedule: Schedule, gpu: GpuSpec, layout: Layout, stage_parameters: list[float]
) -> tuple[AllReduce, ...]:
    """Each pipeline rank's DP reduction: from when its first stage's gradients leave to when its last arrive."""
    frame = timeline.frame
    last_end = frame.groupby("rank")["end"].max()
    grads = frame[frame["kind"].isin(GRADIENT_KINDS)]
    complete = grads.groupby("stage")["end"].max()
    reductions = []
    for rank in range(schedule.num_ranks):
        stages = [stage for stage in range(schedule.num_stages) if schedule.rank_of(stage) == rank]
        rank_end = float(last_end.get(rank, 0.0))
        ready = {stage: (float(complete.get(stage, rank_end)) if layout.dp_overlap else rank_end) for stage in stages}
        clock = start = min(ready.values(), default=rank_end)
        for stage in sorted(stages, key=ready.__getitem__):
            clock = max(clock, ready[stage]) + data_parallel_seconds(stage_parameters[stage], gpu, layout)
        held = sum(stage_parameters[stage] for stage in stages)
        reductions.append(AllReduce(rank, start, clock, layout.gradient_bytes * held))
    return tuple(reductions)


def step_ends(
    model: ModelSpec,
    gpu: GpuSpec,
    layout: Layout,
    schedule: Schedule,
    reductions: tuple[AllReduce, ...],
    parameters: list[float],
) -> tuple[StepEnd, ...]:
    """Each rank's end of step (``StepEnd``) after its DP reduction: the tied embedding's two ranks meet once both
    have reduced, DualPipe's mirror ranks likewise to sum their copies, then each rank's optimizer step over the
    ``parameters`` one of its GPUs holds."""
    first, last = schedule.rank_of(0), schedule.rank_of(schedule.num_stages - 1)
    embedding = embedding_reduction_seconds(model, gpu, layout, first, last)
    meet = max(reductions[first].end, reductions[last].end)
    p = schedule.num_ranks
    ends = []
    for reduction in reductions:
        r = reduction.rank
        start = meet if embedding and r in (first, last) else reduction.end
        mirror = p - 1 - r
        copies = 0.0
        if layout.copies == 2 and mirror != r:  # wait for the mirror, then sum the two copies' gradients
            start = max(start, reductions[mirror].end)
            copies = copies_reduction_seconds(parameters[r], gpu, layout, r, mirror)
        ends.append(
            StepEnd(
                rank=r,
                reduced=reduction.end,
                embedding_start=start,
                embedding=embedding if r in (first, last) else 0.0,
                optimizer=optimizer_step_seconds(parameters[r], gpu, layout),
                copies=copies,
            )
        )
    return tuple(ends)
