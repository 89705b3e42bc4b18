"""The gradient check: every parameter's gradient against the unsplit model's on the full batch.

Why they must match: the loss is a mean over samples, each micro-batch's loss is scaled by 1/m, and
gradients accumulate over the micro-batches before the (one) optimizer step — gradient accumulation — so
their sum is the full batch's gradient, whatever the schedule's order.

DualPipe holds two copies of each block (``engine.ir`` [Note: placement]), each seeing half the micro-batches:
each copy's gradient is half the sum, so the copies' gradients are summed, and both copies then hold the full
batch's gradient (as DeepSeek's example does before its check: ``p0.grad += p1all[...]``). Here in one process
(``sum_copies``); between ranks, ``engine.runtime.distributed.rank`` exchanges them with the mirror rank.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..ir import Schedule
from ..models import reference_gradients, stage_parameter_names, to_reference_name
from .config import RunPlan
from .stage import RankWorker


def gradient_errors(plan: RunPlan, worker: RankWorker, reference: dict[str, torch.Tensor]) -> dict[str, float]:
    """For each parameter on this rank: ‖g − g_ref‖ / ‖g_ref‖ against the unsplit model's full-batch gradient."""
    names = stage_parameter_names(list(plan.stage_layers), plan.schedule.copies)
    errors = {}
    for index, stage in worker.stages.items():
        for name, parameter in stage.named_parameters():
            global_name = to_reference_name(name, names[index])
            expected = reference[global_name]
            got = parameter.grad
            if got is None:
                errors[global_name] = float("inf")
                continue
            difference = (got.detach().cpu().to(expected.dtype) - expected).norm()
            errors[global_name] = float(difference / expected.norm().clamp_min(1e-30))
    return errors


def copy_groups(schedule: Schedule) -> list[tuple[int, ...]]:
    """The stages that hold the same block, one tuple per block (only DualPipe's hold two)."""
    length = schedule.route_length
    return [tuple(range(block, schedule.num_stages, length)) for block in range(length)] if schedule.copies > 1 else []


def sum_copies(stages: dict[int, nn.Module], schedule: Schedule) -> None:
    """Give every copy of a block the sum of the copies' gradients (all of them held in this process)."""
    for group in copy_groups(schedule):
        held = [list(stages[index].parameters()) for index in group]
        for parameters in zip(*held, strict=True):
            total = torch.stack([p.grad for p in parameters if p.grad is not None]).sum(0)
            for parameter in parameters:
                parameter.grad = total.clone()


__all__ = ["copy_groups", "gradient_errors", "reference_gradients", "sum_copies"]
