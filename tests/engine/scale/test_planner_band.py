"""The planner says how sure it is — each plan's step, throughput and MFU with the spread of the
planner's error over the published runs on the same GPU, computed from the runs the lab ships."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.scale import LAYOUT_PRESETS
from engine.scale.calibration import band_of, error_band, planned_tflops
from engine.scale.plan import plan
from engine.scale.presets import CALIBRATION_RUNS


@pytest.mark.parametrize("gpu", ["a100", "h100"])
def test_the_band_is_the_spread_of_the_errors_over_that_gpus_published_runs(gpu):
    errors = {}
    for name, preset in LAYOUT_PRESETS.items():  # planned again here, independently of compare_with_paper
        if preset.gpu == gpu and CALIBRATION_RUNS[gpu] != name and not preset.is_moe:
            result = plan(preset.model, preset.gpu, preset.layout)
            errors[preset.title] = planned_tflops(result, preset) / preset.reported_tflops_per_gpu - 1
    band = error_band(gpu)
    assert band is not None and set(band.runs) == set(errors)
    assert band.low == pytest.approx(min(errors.values())) and band.high == pytest.approx(max(errors.values()))
    assert band.low <= band.high


def test_a_plans_figures_are_bracketed_as_a_run_like_the_published_ones_would_show_them():
    preset = LAYOUT_PRESETS["megatron-76b"]
    result = plan(preset.model, preset.gpu, preset.layout)
    band = band_of(result)
    low, high = band.step_seconds(result.step_seconds)
    assert low == pytest.approx(result.step_seconds * (1 + band.low))
    assert high == pytest.approx(result.step_seconds * (1 + band.high))
    fewer, more = band.rate(result.mfu)
    assert fewer * (1 + band.high) == pytest.approx(result.mfu) and more * (1 + band.low) == pytest.approx(result.mfu)
    # the 76B run itself is one of the runs: its published throughput lies in the band's throughput range
    reported_share = preset.reported_tflops_per_gpu / planned_tflops(result, preset)
    assert fewer <= result.mfu * reported_share + 1e-12 <= more + 1e-12


def test_a_gpu_without_published_runs_has_no_band_and_says_so(capsys):
    assert error_band("b200") is None
    code = main(["plan", "--layout-preset", "llama3-405b-as-trained", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["band"]["gpu"] == "H100 SXM" and len(summary["band"]["runs"]) == 2
    low, high = summary["band"]["step_seconds"]
    assert low <= summary["step_seconds"] * (1 + summary["band"]["error_high"]) + 1e-9 and low <= high
