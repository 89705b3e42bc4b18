"""The costs the planner adds beside the layers' F, I, W — each against an arithmetic written out here: the
optimizer step, the tied embedding's all-reduce, blocking hand-offs with 2021 Megatron-LM's scatter/gather, a
GEMM's epilogue, and NCCL's share of a link."""

from __future__ import annotations

import dataclasses

import pytest

from engine.scale import plan
from engine.scale.costs import (
    embedding_reduction_seconds,
    optimizer_step_seconds,
    pipeline_transfer,
    with_blocking_exchanges,
)
from engine.scale.hardware import gpu_named
from engine.scale.layout import Layout
from engine.scale.model_presets import model_named
from engine.scale.operations import gemm
from engine.scale.roofline import kernel_seconds, wave_efficiency

A100 = gpu_named("a100")
HBM = 2_039e9 * 0.9  # the datasheet's HBM rate at the streaming share


def test_nccl_reaches_three_quarters_of_nvlink_one_way_and_nine_tenths_of_a_nic():
    assert A100.ring_bandwidth_intra == pytest.approx(600e9 / 2 * 0.75)  # 225 GB/s: nccl-tests' 200–230
    assert A100.ring_bandwidth_inter == pytest.approx(25e9 * 0.9)


@pytest.mark.parametrize(
    ("gradients", "zero", "per_parameter", "updated"),
    [("fp32", 0, 28 + 4 + 6, 1.0), ("bf16", 0, 28 + 4 + 6 + 6, 1.0), ("fp32", 1, 38, 1 / 8)],
)
def test_the_optimizer_step_streams_its_bytes_per_parameter(gradients, zero, per_parameter, updated):
    """Adam reads weight, gradient, m, v and writes weight, m, v (7 × 4 B); the clipping norm reads the gradient
    (4 B); the BF16 copy reads 4 and writes 2; 16-bit gradients are cast to FP32 first (2 + 4)."""
    layout = Layout(data_parallel=8, gradient_precision=gradients, zero=zero)
    assert optimizer_step_seconds(2e9, A100, layout) == pytest.approx(per_parameter * 2e9 * updated / HBM)


def test_a_tied_embedding_is_all_reduced_between_its_two_ranks_after_the_backward():
    gpt = model_named("megatron-76b")
    layout = Layout(tensor_parallel=8, pipeline_parallel=4, data_parallel=1, global_batch=8, gradient_precision="bf16",
                    family="1f1b", split="even", sequence_parallel=False)  # fmt: skip
    gradient = 2 * 51_200 * 10_240 / 8  # V × h / TP, 2 bytes
    assert embedding_reduction_seconds(gpt, A100, layout, 0, 3) == pytest.approx(gradient / (25e9 * 0.9))  # 2 nodes
    assert embedding_reduction_seconds(gpt, A100, layout, 0, 0) == 0  # the V: both ends on one rank
    assert embedding_reduction_seconds(model_named("llama3-405b"), A100, layout, 0, 3) == 0  # untied
    result = plan(gpt, A100, layout)
    ends = {end.rank: end for end in result.step_ends}
    meet = max(result.allreduce[0].end, result.allreduce[3].end)
    assert ends[0].embedding_start == ends[3].embedding_start == meet and ends[1].embedding == 0
    assert result.step_seconds == pytest.approx(max(end.end for end in result.step_ends))


def test_blocking_hand_offs_split_over_the_tp_group_and_sit_inside_the_passes():
    gpt = model_named("megatron-76b")
    layout = Layout(tensor_parallel=8, pipeline_parallel=4, data_parallel=1, global_batch=8, microbatch_size=2,
                    family="1f1b", split="even", sequence_parallel=False, p2p_overlap=False)  # fmt: skip
    whole = 2 * 2048 * 2 * 10_240  # s × b × h × 2 bytes
    transfer = pipeline_transfer(gpt, A100, layout, "loop")
    expected = whole / 8 / (25e9 * 0.9) + 7 / 8 * whole / (300e9 * 0.75)  # 1/t over each NIC, then all-gathered
    assert transfer.bytes == whole / 8 and transfer.seconds == pytest.approx(expected)
    overlapped = pipeline_transfer(gpt, A100, dataclasses.replace(layout, p2p_overlap=True), "loop")
    assert overlapped.bytes == whole and overlapped.seconds == pytest.approx(whole / (25e9 * 0.9))

    blocking, free = plan(gpt, A100, layout), plan(gpt, A100, dataclasses.replace(layout, p2p_overlap=True))
    assert blocking.costs.comm == 0  # nothing in flight between the passes
    for before, after in zip(free.stage_costs, blocking.stage_costs, strict=True):
        sends_on, sends_back = before.stage != 3, before.stage != 0
        assert after.forward == pytest.approx(before.forward + expected * sends_on)
        assert after.backward_input == pytest.approx(before.backward_input + expected * sends_back)
        assert after.breakdown["PP hand-offs"] == pytest.approx(expected * (sends_on + sends_back))
    assert with_blocking_exchanges(free.stage_costs, 0.0) == free.stage_costs
    assert transfer.seconds < overlapped.seconds / 4  # scatter/gather: 1/8 over the NIC beats the whole tensor


def test_a_gemm_pays_its_epilogue_the_product_written_after_the_math():
    """A 4096 × 8192 × k GEMM: math at the calibrated share (whole waves here), then 4096 × 8192 × 2 bytes at the
    HBM's rate; the epilogue is 1/k of the math per FLOP, so a long k hides it and a short one does not."""
    for k in (1_024, 16_384):
        kernel = gemm(4096, 8192, k)
        assert wave_efficiency(kernel.tiles, A100.sm_count) == pytest.approx(1.0, abs=0.07)
        math_seconds = 2 * 4096 * 8192 * k / (312e12 * A100.gemm_share * wave_efficiency(kernel.tiles, 108))
        epilogue = 4096 * 8192 * 2 / HBM
        assert kernel_seconds(kernel, A100) == pytest.approx(math_seconds + epilogue)
    short, long = (gemm(4096, 8192, k) for k in (1_024, 16_384))
    assert 4096 * 8192 * 2 / HBM / kernel_seconds(short, A100) > 10 * 4096 * 8192 * 2 / HBM / kernel_seconds(long, A100)


def test_where_the_time_goes_names_the_optimizer_and_the_hand_offs_of_a_2021_megatron_run():
    from engine.scale.presets import LAYOUT_PRESETS

    preset = LAYOUT_PRESETS["megatron-76b"]
    result = plan(preset.model, preset.gpu, preset.layout)
    shares = result.time_shares()
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["optimizer step"] > 0 and shares["embedding all-reduce"] > 0 and shares["PP hand-offs"] > 0
    assert not preset.layout.p2p_overlap and "megatron/p2p_communication.py" in preset.provenance["p2p_overlap"].words
