"""The one calibrated number per GPU, and the planner against the papers: ``calibrate`` finds the large-GEMM share
of peak (``GpuSpec.gemm_share``) at which the planner gives one published run's throughput exactly; every other
run of the same paper is then a prediction (``compare_with_paper``). Nothing else is fitted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .bounds import MIN_GEMM_SHARE
from .costs import step_flops
from .hardware import GpuSpec, gpu_named
from .plan import Plan, plan
from .presets import CALIBRATION_RUNS, LAYOUT_PRESETS, LayoutPreset

TOLERANCE = 1e-4
"""Bisection stops when the share is known to this (a 0.01 % change of a share moves a step time less)."""


def planned_tflops(result: Plan, preset: LayoutPreset) -> float:
    """The plan's TFLOP/s per GPU counted as the paper counts them (with or without the recomputed forward, the
    whole attention square or its causal half)."""
    model_flops, hardware_flops = step_flops(result.model, result.layout, preset.attention_counted)
    flops = hardware_flops if preset.counts_recomputation else model_flops
    return flops / result.num_gpus / result.step_seconds / 1e12


def plan_with_share(preset: LayoutPreset, share: float | None = None) -> Plan:
    """The preset planned on its GPU, with ``gemm_share`` replaced when given."""
    gpu = gpu_named(preset.gpu)
    if share is not None:
        gpu = dataclasses.replace(gpu, gemm_share=share)
    return plan(preset.model, gpu, preset.layout)


def calibrate(name: str) -> float:
    """The GEMM share at which the planner gives run ``name``'s published TFLOP/s per GPU (bisection: the planned
    throughput rises with the share). ValueError when no share in [5 %, 100 %] reaches it."""
    preset = LAYOUT_PRESETS[name]
    target = preset.reported_tflops_per_gpu
    low, high = MIN_GEMM_SHARE, 1.0
    for share in (low, high):
        reached = planned_tflops(plan_with_share(preset, share), preset)
        if (share == low and reached > target) or (share == high and reached < target):
            raise ValueError(
                f"{preset.title}: at a GEMM share of {share:.0%} the planner gives {reached:.1f} TFLOP/s per GPU, "
                f"{'above' if share == low else 'below'} the published {target:g}"
            )
    while high - low > TOLERANCE:
        middle = (low + high) / 2
        if planned_tflops(plan_with_share(preset, middle), preset) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class Comparison:
    """One published run next to the planner's figures for it."""

    preset: LayoutPreset
    result: Plan
    planned: float
    """TFLOP/s per GPU, counted as the paper counts."""

    @property
    def reported(self) -> float:
        return self.preset.reported_tflops_per_gpu

    @property
    def difference(self) -> float:
        """(planned − published) / published."""
        return self.planned / self.reported - 1

    @property
    def calibrates(self) -> bool:
        """True for the run the GPU's share was set from."""
        return CALIBRATION_RUNS.get(self.preset.gpu) == self.preset.name


def compare_with_paper(gpu: GpuSpec | None = None) -> list[Comparison]:
    """Every published run planned with its GPU's calibrated share (or ``gpu``'s, for runs on that GPU)."""
    rows = []
    for preset in LAYOUT_PRESETS.values():
        if gpu is not None and preset.gpu != gpu.name:
            continue
        result = plan(preset.model, gpu or preset.gpu, preset.layout)
        rows.append(Comparison(preset, result, planned_tflops(result, preset)))
    return rows
