"""The one calibrated number per GPU (engine.scale.calibration): each preset GPU's GEMM share is what one published
run gives when recomputed here, and every other run of the same paper is a prediction the planner is held to."""

import pytest

from engine.scale import GPU_PRESETS, LAYOUT_PRESETS
from engine.scale.calibration import calibrate, compare_with_paper, planned_tflops
from engine.scale.costs import step_flops
from engine.scale.presets import CALIBRATION_RUNS, PAPER, LayoutPreset

SHARE_DIGITS = 0.002
"""The constants in engine/scale/hardware.py are written to three decimals."""


@pytest.mark.slow
@pytest.mark.parametrize("gpu, run", list(CALIBRATION_RUNS.items()))
def test_each_gpus_share_is_its_calibration_runs(gpu, run):
    assert calibrate(run) == pytest.approx(GPU_PRESETS[gpu].gemm_share, abs=SHARE_DIGITS)
    assert f"{LAYOUT_PRESETS[run].reported_tflops_per_gpu:g} TFLOP/s" in GPU_PRESETS[gpu].gemm_share_source


@pytest.fixture(scope="module")
def comparisons():
    return compare_with_paper()


def test_every_published_run_is_compared_and_the_calibration_runs_match(comparisons):
    assert {row.preset.name for row in comparisons} == set(LAYOUT_PRESETS)
    for row in comparisons:
        if row.calibrates:
            assert row.difference == pytest.approx(0, abs=0.01)


def test_the_other_runs_are_predicted_within_15_percent(comparisons):
    """The closing figure: every dense run of each paper from its GPU's one number (benchmarks/scale.py prints
    them; the MoE runs, which calibrate nothing, are tests/engine/scale/test_moe.py's)."""
    misses = {
        row.preset.name: f"{row.difference:+.1%}"
        for row in comparisons
        if not row.preset.is_moe and abs(row.difference) > 0.15
    }
    assert not misses


def test_flops_are_counted_as_each_paper_counts():
    narayanan, llama = LAYOUT_PRESETS["megatron-1t"], LAYOUT_PRESETS["llama3-405b-128k"]
    assert narayanan.counts_recomputation and narayanan.attention_counted == 1.0  # Eq. 3
    assert not llama.counts_recomputation and llama.attention_counted == 0.5
    from engine.scale import plan

    result = plan(llama.model, llama.gpu, llama.layout)
    model_flops, _ = step_flops(result.model, result.layout, 0.5)
    assert planned_tflops(result, llama) == pytest.approx(model_flops / result.num_gpus / result.step_seconds / 1e12)


@pytest.mark.parametrize("name", list(LAYOUT_PRESETS))
def test_every_preset_says_where_each_value_comes_from(name):
    preset: LayoutPreset = LAYOUT_PRESETS[name]
    for setting in ("model", "gpu", "tp", "pp", "dp", "global_batch", "microbatch_size", "family", "recompute",
                    "zero", "flash_attention", "gradient_precision", "dp_overlap", "p2p_overlap",
                    "sequence_parallel"):  # fmt: skip
        assert setting in preset.provenance, setting
        assert preset.provenance[setting].words
    assert sum(value.origin == PAPER for value in preset.provenance.values()) >= 5
