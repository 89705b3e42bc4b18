"""Mixture of experts in the planner (engine.scale.experts): DeepSeek-V3's sizes, the expert all-to-all, expert
parallelism's memory, DualPipe's two copies, and the published layout planned end to end — each against a hand
calculation from the published figures."""

import json

import pytest

from engine.cli import main
from engine.scale import GPU_PRESETS, LAYOUT_PRESETS, MODEL_PRESETS, Layout, plan
from engine.scale.costs import copies_reduction_seconds
from engine.scale.experts import all_to_all, compute_gpu
from engine.scale.layers import layer_operations
from engine.scale.memory import ModelStateBytes
from engine.scale.roofline import kernel_seconds, wave_efficiency

V3 = MODEL_PRESETS["deepseek-v3"]
H, HEADS, VOCAB = 7_168, 128, 129_280  # config_671B.json: dim, n_heads, vocab_size


def test_deepseek_v3_has_671b_parameters_and_37b_active_as_its_report_says():
    attention = (H * 1_536 + 1_536 * HEADS * (128 + 64) + H * (512 + 64) + 512 * HEADS * (128 + 128)
                 + HEADS * 128 * H)  # fmt: skip
    norms = 2 * H + 1_536 + 512  # two RMSNorms and MLA's two latent norms
    expert = 3 * H * 2_048
    dense = attention + 3 * H * 18_432 + norms
    moe = attention + 256 * H + 257 * expert + norms  # router, 256 routed + 1 shared
    main_model = 3 * dense + 58 * moe + 2 * VOCAB * H + H  # embedding, output, final norm
    assert V3.parameter_count() - V3.mtp_parameters == main_model
    assert round(main_model / 1e9) == 671  # the report's 671B
    active = main_model - 58 * (256 - 8) * expert
    assert V3.active_parameter_count() == active and round(active / 1e9, 1) == 37.6  # "37B activated"
    flops = V3.stack_flops(1, 4_096)  # forward: 2 × tokens × the active matrices, every layer
    assert flops.weights == pytest.approx(2 * 4_096 * (3 * (dense - norms) + 58 * (moe - norms - 248 * expert)))


def test_the_all_to_all_is_deepeps_measured_bandwidth_times_the_bytes_it_counts():
    layout = LAYOUT_PRESETS["deepseek-v3"].layout
    exchange = all_to_all(V3, GPU_PRESETS["h800"], layout)
    # 4,096 tokens, each to at most 4 of the 8 nodes EP 64 spans; FP8 dispatch (1 + 4/128 bytes a value) at 46 of
    # the NIC's 50 GB/s, BF16 combine at 45 (DeepEP's README, EP 64 on H800s)
    assert exchange.nodes == 4 and exchange.link == "InfiniBand"
    assert exchange.dispatch_seconds == pytest.approx(4_096 * 4 * H * (1 + 4 / 128) / 46e9)
    assert exchange.combine_seconds == pytest.approx(4_096 * 4 * H * 2 / 45e9)


def test_expert_states_shard_over_the_expert_data_parallel_group():
    layout = Layout(tensor_parallel=1, pipeline_parallel=16, data_parallel=128, expert_parallel=64, zero=1,
                    global_batch=15_360, family="dualpipe", num_gpus=2_048)  # fmt: skip
    states = ModelStateBytes.of(10.0, layout, experts=6.0)
    assert states.weights == 20 and states.gradients == 40  # ZeRO-1 shards neither
    assert states.optimizer == pytest.approx(12 * (4 / 128 + 6 / (128 / 64)))  # experts' replicas: 128 / 64 = 2


def test_a_layout_that_cannot_hold_the_experts_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"TP × DP × CP = 1 × 128 × 1 = 128: 128 = 42×3 \+ 2"):
        Layout(tensor_parallel=1, pipeline_parallel=16, data_parallel=128, expert_parallel=3, global_batch=15_360)
    with pytest.raises(ValueError, match="no routed experts"):
        plan("llama3-8b", "h100", Layout(tensor_parallel=1, pipeline_parallel=1, data_parallel=8, expert_parallel=2,
                                          global_batch=64))  # fmt: skip


def test_deepseek_v3_as_trained_fits_and_names_its_all_to_all(capsys):
    assert main(["plan", "--layout-preset", "deepseek-v3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["fits"] and summary["capacity_bytes"] == 80e9
    moe = summary["moe"]
    layer = 4_096 * 4 * H * ((1 + 4 / 128) / 46e9 + 2 / 45e9)  # dispatch + combine, as above
    assert moe["all_to_all_layer_seconds"] == pytest.approx(layer)
    # a stage's share: (58 MoE layers + the MTP module's) per copy over the 16 stages of each copy
    assert moe["all_to_all_stage_seconds"] == pytest.approx(layer * (58 + 1) / 16)
    hidden, total = moe["all_to_all_hidden_seconds"], moe["all_to_all_step_seconds"]
    assert moe["all_to_all_hidden_fraction"] == pytest.approx(hidden / total) and 0 < hidden < total
    # DualPipe: rank 0 holds block 0 and block 15 (the two copies' ends), their parameters on one GPU
    blocks = summary["parameters_per_stage"]
    assert summary["stages_per_rank"][0] == [0, 31] and blocks[0] == blocks[16] and blocks[15] == blocks[31]
    # the report's 180K H800 GPU-hours per trillion tokens, 1,543 tokens/s a GPU: within the 10 % (docs/plan.md)
    per_gpu = summary["tokens_per_second"] / summary["layout"]["gpus"]
    assert per_gpu == pytest.approx(1e12 / (180_000 * 3_600), rel=0.10)
    others = [run for run in summary["band"]["runs"] if "as trained" not in run]
    assert len(others) >= 2 and summary["band"]["error_low"] <= per_gpu / 1_543.2 - 1 + 1e-6


def test_one_gpus_moe_layer_runs_the_active_experts_flops_and_mlas_core_in_fp8_and_bf16():
    layout = LAYOUT_PRESETS["deepseek-v3"].layout
    operations = {op.name: op for op in layer_operations(V3, layout, moe=True)}
    tokens = 4_096  # one 4K sequence, no TP
    routed = sum(k.flops for name in ("routed experts in (gate and up)", "routed experts out")
                 for k in operations[name].forward)  # fmt: skip
    assert routed == pytest.approx(2 * tokens * 8 * 3 * H * 2_048)  # each token's 8 experts, wherever they sit
    core = operations["flash attention (MLA)"].forward[0]
    assert core.flops == pytest.approx(2 * tokens * tokens * HEADS * (192 + 128) / 2) and not core.fp8  # causal half
    up = operations["routed experts in (gate and up)"].forward[0]
    gpu = GPU_PRESETS["h800"]
    count, rows, columns = up.tiles
    epilogue = 2 * count * rows * columns / (3_352e9 * 0.9)  # the BF16 product written at the HBM's streaming rate
    expected = up.flops / (1_979e12 * gpu.gemm_share * wave_efficiency(up.tiles, 132)) + epilogue
    assert up.fp8 and kernel_seconds(up, gpu) == pytest.approx(expected)


def test_fp8_linear_layers_pay_for_their_quantization_as_the_report_describes_the_workflow():
    """Report §3.3 and §3.5.2: X is cast to FP8 for Fprop (BF16 read, FP8 and a scale per 128 written), dY once
    for Dgrad and once transposed for Wgrad, and X read back, transposed and re-quantized for Wgrad. An input is
    cast once: KV down shares Q down's; the experts' tokens are cast once before the dispatch."""
    layout = LAYOUT_PRESETS["deepseek-v3"].layout
    operations = layer_operations(V3, layout, moe=True)
    casts = [op for op in operations if op.name.startswith("FP8 casts of ")]
    tile = 1 + 4 / 128
    T, routed = 4_096, 4_096 * 8
    q, kv = HEADS * 192, HEADS * (128 + 128)
    # (rows of X cast for Fprop, X's width, rows of dY and X for the backward, dY's width), by hand
    linears = {
        "Q down": (T, H, T, 1_536),
        "Q up": (T, 1_536, T, q),
        "KV down": (0, H, T, 576),  # Q down's input, already cast
        "KV up": (T, 512, T, kv),
        "output projection": (T, HEADS * 128, T, H),
        "shared experts in": (0, H, T, 4_096),  # the dispatch's cast covers it
        "shared experts out": (T, 2_048, T, H),
        "routed experts in (gate and up)": (T, H, routed, 4_096),  # cast before the dispatch: T rows, not T·k
        "routed experts out": (routed, 2_048, routed, H),
    }
    assert sorted(op.name.removeprefix("FP8 casts of ") for op in casts) == sorted(linears)
    forward = sum(rows * width * (2 + tile) for rows, width, _, _ in linears.values())
    backward = sum(rows * out * (2 + 2 * tile) for _, _, rows, out in linears.values())
    weight = sum(rows * width * 2 * tile for _, width, rows, _ in linears.values())
    assert sum(k.bytes for op in casts for k in op.forward) == pytest.approx(forward)
    assert sum(k.bytes for op in casts for k in op.input_gradient) == pytest.approx(backward)
    assert sum(k.bytes for op in casts for k in op.weight_gradient) == pytest.approx(weight)
    assert all(op.category == "memory-bound" and not any(k.flops for k in op.forward) for op in casts)
    # BF16 layers have none
    bf16 = layer_operations(V3, Layout(**{**layout.__dict__, "fp8": False}), moe=True)
    assert not [op for op in bf16 if op.name.startswith("FP8 casts")]


def test_dualpipes_overlap_leaves_112_sms_and_its_copies_meet_before_the_step():
    layout = LAYOUT_PRESETS["deepseek-v3"].layout
    gpu = GPU_PRESETS["h800"]
    left = compute_gpu(gpu, layout, all_to_all(V3, gpu, layout))
    assert left.sm_count == 112 and left.fp8_peak_tflops == pytest.approx(1_979 * 112 / 132)
    # ranks 0 and 15 are 16 ranks × 1 GPU apart, two nodes: a ring of two over InfiniBand at 90 % of 50 GB/s
    assert copies_reduction_seconds(1e9, gpu, layout, 0, 15) == pytest.approx(4e9 / (50e9 * 0.9))
    result = plan("deepseek-v3", gpu, layout)
    assert sum(result.time_shares().values()) == pytest.approx(1.0)
    assert all(end.copies > 0 for end in result.step_ends)
