"""The one calibrated number per GPU, and the planner against the papers: ``calibrate`` finds the large-GEMM share
of peak (``GpuSpec.gemm_share``) at which the planner gives one published run's throughput exactly; every other
run of the same paper is then a prediction (``compare_with_paper``). Nothing else is fitted.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..limits import MIN_GEMM_SHARE
from .costs import step_flops
from .hardware import GPU_PRESETS, GpuSpec, gpu_named
from .plan import Plan, plan
from .presets import CALIBRATION_RUNS, LAYOUT_PRESETS, LayoutPreset

TOLERANCE = 1e-4
"""Bisection stops when the share is known to this (a 0.01 % change of a share moves a step time less)."""


def planned_tflops(result: Plan, preset: LayoutPreset) -> float:
    """The plan's TFLOP/s per GPU counted as the paper counts them (with or without the recomputed forward, the
    whole attention square or its causal half)."""
    if preset.is_moe:  # an MoE run published tokens/s: the planned tokens/s, in the published run's TFLOP/s terms
        assert preset.reported_tokens_per_gpu is not None
        tokens = result.tokens_per_second / result.num_gpus
        return tokens / preset.reported_tokens_per_gpu * preset.reported_tflops_per_gpu
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
        """(planned − published) / published: TFLOP/s, or tokens/s for an MoE run."""
        if self.preset.is_moe:
            assert self.preset.reported_tokens_per_gpu is not None
            return self.result.tokens_per_second / self.result.num_gpus / self.preset.reported_tokens_per_gpu - 1
        return self.planned / self.reported - 1

    @property
    def calibrates(self) -> bool:
        """True for the run the GPU's share was set from."""
        return CALIBRATION_RUNS.get(self.preset.gpu) == self.preset.name


def compare_with_paper(gpu: GpuSpec | None = None, moe: bool | None = None) -> list[Comparison]:
    """Every published run planned with its GPU's calibrated share (or ``gpu``'s, for runs on that GPU); ``moe``:
    only the MoE runs (True) or only the dense ones (False)."""
    rows = []
    for preset in LAYOUT_PRESETS.values():
        if (gpu is not None and preset.gpu != gpu.name) or (moe is not None and preset.is_moe != moe):
            continue
        result = plan(preset.model, gpu or preset.gpu, preset.layout)
        rows.append(Comparison(preset, result, planned_tflops(result, preset)))
    return rows


@dataclass(frozen=True)
class ErrorBand:
    """How far the planner has been from the published runs on one GPU: the spread of (planned − published) /
    published TFLOP/s per GPU over the runs the lab ships for that GPU, the calibrating run left out (it is exact
    by construction). A planned step then reads as "a run like the published ones would take between …"."""

    gpu: str
    """The GPU's title."""
    low: float
    high: float
    """The smallest and largest planner error over the runs (+0.05: the planner 5 % faster than the run)."""
    runs: tuple[str, ...]
    """The runs' titles."""
    moe: bool = False
    """True for the MoE runs' band: errors in tokens/s per GPU, no run calibrating."""

    def step_seconds(self, planned: float) -> tuple[float, float]:
        """The step a run like the published ones would take: a planner ``error`` faster means × (1 + error)."""
        return planned * (1 + self.low), planned * (1 + self.high)

    def rate(self, planned: float) -> tuple[float, float]:
        """A throughput (tokens/s, MFU) a run like the published ones would reach: ÷ (1 + error)."""
        return planned / (1 + self.high), planned / (1 + self.low)

    def words(self) -> str:
        if self.moe:
            return (
                f"the planner against {len(self.runs)} published mixture-of-experts run(s): {self.low:+.1%} … "
                f"{self.high:+.1%} (tokens/s per GPU, planned against published; none of them calibrates anything)"
            )
        return (
            f"the planner against {len(self.runs)} published run(s) on {self.gpu}: {self.low:+.1%} … {self.high:+.1%} "
            "(TFLOP/s per GPU, planned against published; the calibrating run left out)"
        )

    def summary(self, result: Plan) -> dict:
        """The band in ``--json``: the errors and the planned figures' ranges."""
        return {
            "gpu": self.gpu,
            "runs": list(self.runs),
            "error_low": self.low,
            "error_high": self.high,
            "step_seconds": list(self.step_seconds(result.step_seconds)),
            "tokens_per_second": list(self.rate(result.tokens_per_second)),
            "mfu": list(self.rate(result.mfu)),
        }


@functools.cache
def error_band(gpu_name: str) -> ErrorBand | None:
    """The band of ``gpu_name`` from every published run on it the lab ships (None: no run but the calibrating
    one, or none at all). Computed from ``compare_with_paper``, so it moves when the model does."""
    gpu = gpu_named(gpu_name)
    rows = [row for row in compare_with_paper(gpu, moe=False) if not row.calibrates]
    if not rows:
        return None
    errors = [row.difference for row in rows]
    return ErrorBand(gpu.title, min(errors), max(errors), tuple(row.preset.title for row in rows))


def band_of(result: Plan) -> ErrorBand | None:
    """The band that applies to a plan: its GPU's, when the GPU is a preset at its own share and the costs are the
    roofline's (a custom GPU or measured costs are not what the published runs test)."""
    preset = GPU_PRESETS.get(result.gpu.name)
    if preset is None or preset != result.gpu or result.measured is not None:
        return None
    return moe_band() if result.model.is_moe else error_band(result.gpu.name)


@functools.cache
def moe_band() -> ErrorBand:
    """The band of an MoE plan: the planner's tokens/s error over every published MoE run the lab ships (each GPU
    at its own share; none of them calibrates anything)."""
    rows = compare_with_paper(moe=True)
    errors = [row.difference for row in rows]
    return ErrorBand("MoE runs", min(errors), max(errors), tuple(row.preset.title for row in rows), moe=True)
