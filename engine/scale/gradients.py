"""The DP gradient reduction at the end of a step: when each pipeline rank's gradients are complete, and how long
their reduction over the data-parallel replicas takes (``costs.data_parallel_seconds``).

Without overlap a rank reduces all its gradients after its last action. With ``Layout.dp_overlap`` (Megatron's
overlap-grad-reduce, FSDP's bucketed reduce-scatter) each stage's gradients leave as soon as that stage's last
backward ends, one stage after another on the rank's network link; the step ends when the last reduction does.
"""

from __future__ import annotations

from ..ir import Schedule
from ..timeline import Timeline
from .costs import data_parallel_seconds
from .hardware import GpuSpec
from .layout import Layout
from .records import AllReduce

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
