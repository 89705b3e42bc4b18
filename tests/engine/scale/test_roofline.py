"""Time and activation bytes from a layer's operations (engine.scale.operations, roofline, costs), each against a
calculation written out here: the roofline by hand, the collectives as rings, Korthikanti et al.'s Table 2, the
pipeline's hops over NVLink or the network, the DP reduction with ZeRO."""

import dataclasses
import math

import pytest

from engine.scale import GPU_PRESETS, MODEL_PRESETS, GpuSpec, Layout
from engine.scale.costs import all_reduce_seconds, data_parallel_seconds, pipeline_transfer, stage_costs
from engine.scale.flash_rates import backward_rate, causal_rate
from engine.scale.hardware import HBM_SHARE
from engine.scale.layers import layer_operations
from engine.scale.memory import layer_activation_bytes
from engine.scale.models import custom_model
from engine.scale.roofline import wave_efficiency

H100 = GPU_PRESETS["h100"]


def one_sm_gpu(**changes) -> GpuSpec:
    """A GPU with one SM: every GEMM whose sides are multiples of 256 fills its tiles exactly (waves = tiles)."""
    return dataclasses.replace(H100, sm_count=1, **changes)


def roofline(flops: float, num_bytes: float, gpu: GpuSpec, product: float = 0.0) -> float:
    """A tensor-core kernel: the math, then its ``product``'s bytes written (the epilogue), or its bytes moved."""
    hbm = gpu.hbm_gb_s * 1e9 * HBM_SHARE
    return max(flops / (gpu.peak_flops * gpu.gemm_share) + product / hbm, num_bytes / hbm)


NVLINK_RING, NETWORK = 0.75, 0.9
"""NCCL's share of a link (nccl-tests' bus bandwidth: ≈ 200–230 of the A100's 300 GB/s one way; 85–96 % of a NIC)."""


def test_wave_efficiency_is_tile_and_wave_quantization():
    assert wave_efficiency((1, 256, 128), 1) == 1.0
    assert wave_efficiency((1, 512, 512), 8) == 1.0  # 8 tiles of 256 × 128 on 8 SMs: one full wave
    # 768 × 384 on 8 SMs: 9 tiles of 256 × 128 take two waves (9/16), 18 of 128 × 128 three (18/24), 36 of
    # 128 × 64 five (36/40): the best is 0.9
    assert wave_efficiency((1, 256 * 3, 128 * 3), 8) == pytest.approx(36 / 40)
    assert wave_efficiency((1, 100, 128), 1) == pytest.approx(100 * 128 / (128 * 128))  # an edge tile 100 of 128


def test_a_llama_layer_forward_by_hand():
    """One Llama-style layer, TP 1: every kernel's roofline time written out and summed."""
    h, f, a, k, s, b = 1024, 4096, 16, 4, 2048, 1
    d, kv = h // a, 4 * (h // a)
    model = custom_model(num_layers=2, hidden_size=h, ffn_hidden_size=f, num_attention_heads=a, num_kv_heads=k,
                         vocab_size=32_000, seq_length=s)  # fmt: skip
    layout = Layout(tensor_parallel=1, pipeline_parallel=2, data_parallel=1, global_batch=2, family="1f1b",
                    split="even", recompute="none")  # fmt: skip
    gpu = one_sm_gpu()
    T = s * b

    def gemm(m, n, kk):
        return roofline(2 * m * n * kk, 2 * (m * kk + kk * n + m * n), gpu, product=2 * m * n)

    def stream(num_bytes):
        return num_bytes / (gpu.hbm_gb_s * 1e9 * HBM_SHARE)

    gemms = gemm(T, h + 2 * kv, h) + gemm(T, h, h) + gemm(T, 2 * f, h) + gemm(T, h, f)
    flash_flops = 4 * T * s * h * 0.5  # Q·Kᵀ and P·V over the causal half
    flash_tiles = wave_efficiency((b * a, T, d), 1)
    causal = 521 / 625  # FlashAttention-3, Figure 5, sequence 2k: causal ÷ unmasked TFLOP/s
    flash = max(
        flash_flops / (gpu.peak_flops * gpu.gemm_share * flash_tiles * causal) + stream(2 * b * a * T * d),  # + output
        stream(2 * 2 * T * h + 2 * 2 * T * kv + 4 * T * a),
    )
    memory_bound = (
        2 * stream(2 * 2 * T * h)  # two RMSNorms: read and write T·h
        + stream(2 * 2 * T * (h + kv))  # rotary embedding on Q and K
        + stream(2 * T * 2 * f + 2 * T * f)  # SwiGLU: read gate and up, write one
        + 2 * stream(3 * 2 * T * h)  # two residual adds: read two, write one
    )
    first = stage_costs(model, gpu, layout, (1, 1))[0]  # layer 0 and the embedding
    last = stage_costs(model, gpu, layout, (1, 1))[1]  # layer 1 and the output side
    embedding = stream(2 * 2 * T * h)
    assert first.forward == pytest.approx(gemms + flash + memory_bound + embedding, rel=1e-12)
    assert first.breakdown["GEMMs"] > first.breakdown["attention"] > 0 and first.communication == 0
    # the last stage: the final norm, the output GEMM over the vocabulary, the cross-entropy's FP32 logits
    output = stream(2 * 2 * T * h) + gemm(T, 32_000, h) + stream((2 + 4) * T * 32_000)
    assert last.forward == pytest.approx(gemms + flash + memory_bound + output, rel=1e-12)


def test_backward_is_two_gemms_per_product_and_recomputation_reruns_the_forward():
    model = custom_model(num_layers=2, hidden_size=1024, num_attention_heads=16, vocab_size=32_000, seq_length=2048)
    layout = Layout(tensor_parallel=1, pipeline_parallel=2, data_parallel=1, global_batch=2, family="1f1b",
                    split="even", recompute="none")  # fmt: skip
    gpu = one_sm_gpu()
    plain = stage_costs(model, gpu, layout, (1, 1))[0]
    # W: each weight gradient Xᵀ·dY of m×n by n×k has the forward's FLOPs; at 1 SM and these sizes, its time too
    assert plain.breakdown["GEMMs"] == pytest.approx(3 * plain.backward_weight, rel=0.02)
    selective = stage_costs(model, gpu, dataclasses.replace(layout, recompute="selective"), (1, 1))[0]
    full = stage_costs(model, gpu, dataclasses.replace(layout, recompute="full"), (1, 1))[0]
    # flash: backward 2.5 × the forward's math (FlashAttention-2) at 501/625 of its rate (FlashAttention-3, Figures
    # 5 and 6, sequence 2k); each kernel then writes its output (epilogue)
    epilogue = 2 * 16 * 2048 * 64 / (gpu.hbm_gb_s * 1e9 * HBM_SHARE)  # b·a × T × d, 2 bytes
    core = (plain.breakdown["attention"] - 2 * epilogue) / (1 + 2.5 * 625 / 501) + epilogue
    assert selective.backward_input - plain.backward_input == pytest.approx(core, rel=1e-9)
    layer_forward = plain.forward - stage_costs(model, gpu, layout, (0, 2))[0].forward  # minus the embedding alone
    assert full.backward_input - plain.backward_input == pytest.approx(layer_forward, rel=1e-9)


def test_tensor_parallel_collectives_inside_a_layer():
    model = custom_model(num_layers=8, hidden_size=1024, num_attention_heads=16, vocab_size=32_000, seq_length=2048,
                         style="gpt")  # fmt: skip
    layout = Layout(tensor_parallel=4, pipeline_parallel=2, data_parallel=1, global_batch=2, family="1f1b",
                    split="even")  # fmt: skip
    s, b, h, t = 2048, 1, 1024, 4
    one = 2 * (t - 1) / t * (2 * s * b * h) / (H100.nvlink_gb_s / 2 * 1e9 * NVLINK_RING)  # ring over NVLink, one way
    first, last = stage_costs(model, H100, layout, (4, 4))
    assert last.communication == pytest.approx(4 * (2 * one + 2 * one) + one)  # + the output layer's backward
    assert first.breakdown["TP communication"] == pytest.approx(first.communication)
    hidden = stage_costs(model, H100, dataclasses.replace(layout, tp_overlap=True), (4, 4))[1]
    assert hidden.communication < last.communication  # hidden behind each pass's GEMMs where they are longer


def test_pipeline_transfers_per_hop():
    model = MODEL_PRESETS["llama3-405b"]
    across_nodes = pipeline_transfer(model, H100, Layout(), "loop")  # TP 8: every pipeline rank is a node
    assert across_nodes.bytes == 8192 * 1 * 16384 * 2 / 8
    assert across_nodes.link == "inter-node"
    assert across_nodes.seconds == pytest.approx(across_nodes.bytes / (50e9 * NETWORK))
    small = Layout(tensor_parallel=4, pipeline_parallel=4, data_parallel=1, global_batch=8, split="even")
    mixed = pipeline_transfer(model, H100, small, "loop")  # ranks 0, 1 in node 0; ranks 2, 3 in node 1
    nvlink, network = mixed.bytes / (450e9 * NVLINK_RING), mixed.bytes / (50e9 * NETWORK)
    assert (
        mixed.hop_seconds == pytest.approx((nvlink, network, nvlink, network)) and mixed.link == "NVLink and inter-node"
    )
    no_sp = pipeline_transfer(model, H100, Layout(sequence_parallel=False), "loop")
    assert no_sp.bytes == 8 * across_nodes.bytes


def test_hops_reach_the_simulator():
    """Two ranks in a node and two in the next: a micro-batch's activation waits its own hop's time."""
    from engine.scale import plan

    model = custom_model(num_layers=8, hidden_size=1024, num_attention_heads=16, vocab_size=32_000, seq_length=2048)
    layout = Layout(tensor_parallel=4, pipeline_parallel=4, data_parallel=1, global_batch=4, family="gpipe",
                    split="even")  # fmt: skip
    result = plan(model, H100, layout)
    transfers = result.timeline.transfers
    for (src, dst), seconds in {(0, 1): result.transfer.hop_seconds[0], (1, 2): result.transfer.hop_seconds[1]}.items():
        hop = transfers[(transfers["from_rank"] == src) & (transfers["to_rank"] == dst)]
        assert (hop["arrive"] - hop["depart"]).to_numpy() == pytest.approx(seconds)


def test_data_parallel_reduction_is_rings():
    psi, n, bw = 3e9, 64, 50e9 * NETWORK
    layout = Layout()  # ZeRO-2, FP32 gradients
    assert data_parallel_seconds(psi, H100, layout) == pytest.approx(63 / 64 * (4 * psi + 2 * psi) / bw)
    plain = dataclasses.replace(layout, zero=0)
    assert data_parallel_seconds(psi, H100, plain) == pytest.approx(2 * 63 / 64 * 4 * psi / bw)
    full = dataclasses.replace(layout, zero=3)
    assert data_parallel_seconds(psi, H100, full) == pytest.approx(63 / 64 * (4 * psi + 4 * psi) / bw)
    bf16 = dataclasses.replace(layout, zero=3, gradient_precision="bf16")  # Rajbhandari §7: ZeRO-3 is 1.5 × DP
    assert data_parallel_seconds(psi, H100, bf16) == pytest.approx(
        1.5 * data_parallel_seconds(psi, H100, dataclasses.replace(plain, gradient_precision="bf16"))
    )
    assert all_reduce_seconds(1e9, 1, 1e9) == 0 and n == 64


# -- activations: Korthikanti et al. 2022 Table 2 ----------------------------------------------------------------------
@pytest.mark.parametrize("t", [1, 8])
def test_activation_bytes_are_table_2(t):
    """A GPT-3 layer with the paper's assumptions (no flash attention, dropout) and without the per-token
    statistics the paper leaves out; full recomputation keeps the layer input, split by TP with SP."""
    model = MODEL_PRESETS["gpt3-175b"]
    s, b, h, a = 2048, 1, 12_288, 96
    assert 5 * a * s / h == 80  # §5: "for GPT-3 ... 5as/h = 80"
    table_2 = {
        ("none", True): s * b * h * (34 / t + 5 * a * s / (h * t)),
        ("none", False): s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
        ("selective", True): s * b * h * 34 / t,
        ("selective", False): s * b * h * (10 + 24 / t),
        ("full", True): 2 * s * b * h / t,
        ("full", False): 2 * s * b * h,
    }
    for (recompute, sp), expected in table_2.items():
        layout = Layout(tensor_parallel=t, recompute=recompute, sequence_parallel=sp, split="even",
                        flash_attention=False)  # fmt: skip
        assert layer_activation_bytes(model, layout, statistics=False) == pytest.approx(expected, rel=1e-12)
    layout = Layout(tensor_parallel=1, flash_attention=False)
    assert layer_activation_bytes(model, layout, statistics=False) == s * b * h * (34 + 80)  # Eq. 1
    # the statistics: two LayerNorms' mean and 1/σ in FP32 per token
    assert layer_activation_bytes(model, layout) - s * b * h * (34 + 80) == 2 * 2 * 4 * s * b


def test_a_llama_layer_keeps_what_its_operations_save():
    """Llama 3 405B, TP 8 with SP, flash attention, per token: norms' inputs and 1/rms (SP-split), the QKV and
    MLP inputs (SP-split), Q, K, V, the attention output and its FP32 log-sum-exp, SwiGLU's input 2f/t, the MLP
    output GEMM's input f/t; CP splits the tokens."""
    model = MODEL_PRESETS["llama3-405b"]
    h, f, a, d, t = 16_384, 53_248, 128, 128, 8
    layout = Layout(context_parallel=4, data_parallel=16, global_batch=512, seq_length=32_768)
    tokens = 32_768 // 4
    per_token = 4 * (2 * h / t) + 2 * 4 / t + 2 * (h / t + 2 * d) + 2 * h / t + 4 * a / t + 2 * 2 * f / t + 2 * f / t
    assert layer_activation_bytes(model, layout) == pytest.approx(tokens * per_token)
    assert math.isclose(per_token * t / h, 4 * 2 + 2 + 2 + 6 * f / h, rel_tol=0.01)  # ≈ 31.5 h per token over t


def test_flash_attention_rates_read_the_flashattention3_figures():
    """The causal and backward rates are the paper's bars divided (Figures 5 and 6, H100, head size 128), between
    two lengths a straight line in log2 of the length, held beyond the figures' ends."""
    assert causal_rate(4096) == pytest.approx(579 / 638)
    assert backward_rate(4096) == pytest.approx(542 / 638)
    between = 2**12.5  # halfway from 4k to 8k on the log axis
    assert causal_rate(between) == pytest.approx(((579 + 602) / 2) / ((638 + 646) / 2))
    assert backward_rate(between) == pytest.approx(((542 + 559) / 2) / ((638 + 646) / 2))
    assert causal_rate(131_072) == pytest.approx(616 / 648) and causal_rate(128) == pytest.approx(292 / 467)
    # the backward of a causal kernel pays both: a layer's attention backward at 4k takes 2.5 / (0.91 · 0.85) of the
    # unmasked forward's time per FLOP
    model = custom_model(num_layers=2, hidden_size=1024, num_attention_heads=16, vocab_size=32_000, seq_length=4096)
    layout = Layout(tensor_parallel=1, pipeline_parallel=2, data_parallel=1, global_batch=2, family="1f1b")
    core = next(op for op in layer_operations(model, layout) if op.name == "flash attention")
    (forward,), (backward,) = core.forward, core.input_gradient
    assert backward.flops / backward.rate == pytest.approx(2.5 * forward.flops / forward.rate * 638 / 542)
