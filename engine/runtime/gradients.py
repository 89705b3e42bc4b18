"""The gradient check: every parameter's gradient against the unsplit model's on the full batch.

Why they must match: the loss is a mean over samples, each micro-batch's loss is scaled by 1/m, and
gradients accumulate over the micro-batches before the (one) optimizer step — gradient accumulation — so
their sum is the full batch's gradient, whatever the schedule's order.
"""

from __future__ import annotations

import torch

from ..models import reference_gradients, stage_parameter_names, to_reference_name
from .config import RunPlan
from .stage import RankWorker


def gradient_errors(plan: RunPlan, worker: RankWorker, reference: dict[str, torch.Tensor]) -> dict[str, float]:
    """For each parameter on this rank: ‖g − g_ref‖ / ‖g_ref‖ against the unsplit model's full-batch gradient."""
    names = stage_parameter_names(list(plan.stage_layers))
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


__all__ = ["gradient_errors", "reference_gradients"]
