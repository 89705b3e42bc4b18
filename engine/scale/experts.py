"""Mixture of experts and multi-head latent attention on one GPU: the operations of an MoE layer's FFN and of
MLA's projections, and the expert all-to-all one micro-batch's tokens take to their experts and back.

Legend as in ``operations``; E routed experts, k of them per token, S shared experts, f_e one expert's width,
e = EP, T = b·s/c a micro-batch's tokens on one GPU.

Experts (DeepSeek-V3 report §2.1.2; Megatron-LM's MoE layer): the router scores every token against the E experts
(a T × E GEMM, BF16 as the report keeps the gating), each token goes to its k best, the E/e experts on a GPU run
as one grouped GEMM over the tokens sent to them, the S shared experts run on every token, and the outputs are
summed back by the router's weights. Tokens are assumed spread evenly over the experts (DeepSeek-V3's
auxiliary-loss-free balancing; Megatron-Bridge's published MoE runs force the balance): each GPU receives T·k
tokens, T·k·e/E for each of its experts. FLOPs are therefore the active experts', whatever e.

The all-to-all (``all_to_all``): dispatch sends each token to the GPUs of its experts, combine brings the
weighted outputs back. DeepEP (deepseek-ai/DeepEP, the kernels DeepSeek-V3 trained with) sends a token once to
every node it reaches and forwards it inside the node over NVLink; a token reaches at most ``node_limit`` nodes
(4 for DeepSeek-V3), at most k, at most the nodes an EP group spans. Dispatch moves FP8 values with one FP32
scale per 128 (h·(1 + 4/128) bytes a token and node; BF16 without FP8), combine BF16 (2h). The backward mirrors
it (report §3.3.2: the gradient before the down-projection is dispatched in FP8, the combine kept in BF16).
Speeds are DeepEP's measured bandwidths, counted as DeepEP counts them (tests/test_internode.py: every
(token, node) pair, the local node included, × the bytes of one token).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .hardware import BYTES_PER_GB, GpuSpec
from .layout import Layout
from .models import ModelSpec
from .operations import (
    BF16,
    CAUSAL_SHARE,
    FP8_TILE_BYTES,
    FP32,
    Operation,
    Shapes,
    flash_attention,
    gemm,
    linear,
    norm,
    stream,
)

DEEPEP_NETWORK_SHARE = {"dispatch": 46 / 50, "combine": 45 / 50}
"""Share of the NIC's ~50 GB/s (400 Gb/s CX7 InfiniBand) DeepEP's normal kernels reach across nodes, measured on
H800s at EP 64 with DeepSeek-V3's pre-training setting (4,096 tokens, hidden 7,168, top-4 groups, top-8 experts,
FP8 dispatch, BF16 combine): 46 and 45 GB/s (deepseek-ai/DeepEP README, first release, "Normal kernels" table)."""
DEEPEP_NVLINK_SHARE = {"dispatch": 153 / 200, "combine": 158 / 200}
"""Inside one node (EP 8), the same table: 153 and 158 GB/s over the H800's NVLink, one-way 400/2 = 200 GB/s
(there DeepEP counts every (token, GPU) pair: tests/test_intranode.py's recv_x)."""
E5M6_SHARE = 12 / 16
"""DeepSeek-V3 keeps the attention output (the input of the linear after it) in its own 12-bit E5M6 format
(report §3.3.2), 12 of BF16's 16 bits."""
COMMUNICATION_SMS = 20
"""SMs DeepSeek-V3 gives the all-to-all while it runs under the other micro-batch's compute (report §3.2.2: "only
20 SMs are sufficient to fully utilize the bandwidths of IB and NVLink"): an overlapped F&B computes on the rest."""


def moe_operations(model: ModelSpec, layout: Layout, sh: Shapes) -> list[Operation]:
    """An MoE layer's FFN on one GPU: router, the routed experts' grouped GEMMs, SwiGLU, the shared experts, the
    weighted sum. Kept: the router's input, the dispatched tokens, each SwiGLU's input, the down-projections'
    inputs (as Megatron-LM keeps them)."""
    T, h, f_e, t = sh.tokens, sh.hidden, model.expert_ffn_size, layout.tensor_parallel
    local = model.experts // layout.expert_parallel
    # the EP group's TP peers split the micro-batch's tokens between them before the dispatch (Megatron-LM with
    # expert TP 1): T/t tokens leave each GPU, T·k/t arrive at its E/e experts
    routed = T * model.experts_per_token / t
    each = routed / local
    shared = model.shared_experts * f_e / t  # the shared experts split over TP like a dense MLP
    split_input = BF16 * sh.split_tokens * h
    # DeepSeek-V3 §3.2.3 recomputes every RMSNorm in the backward: with selective recomputation the norm's output,
    # the router's and shared experts' input, is not kept
    selective = layout.recompute == "selective"
    normed = 0.0 if selective else split_input
    operations = [
        linear("router", T / t, model.experts, h, saved=normed),
        Operation("routed experts in (gate and up)", "GEMMs", (gemm(each, 2 * f_e, h, local),),
                  (gemm(each, h, 2 * f_e, local),), (gemm(h, 2 * f_e, each, local),), saved=BF16 * routed * h),
        _swiglu("expert SwiGLU", routed, f_e, layout.fp8),
        Operation("routed experts out", "GEMMs", (gemm(each, h, f_e, local),), (gemm(each, f_e, h, local),),
                  (gemm(f_e, h, each, local),), saved=0.0 if selective else BF16 * routed * f_e),
        Operation("unpermute and weighted sum", "memory-bound", (stream(BF16 * (routed + T / t) * h),),
                  (stream(BF16 * (routed + T / t) * h),)),
    ]  # fmt: skip
    # the received tokens sorted into each local expert's rows for the grouped GEMM (Megatron-LM's permute;
    # DeepGEMM's contiguous layout): read and written once, FP8 with FP8 dispatch; its backward moves BF16 gradients
    dispatched = routed * h * (FP8_TILE_BYTES if layout.fp8 else BF16)
    operations.insert(1, Operation("permute to the experts", "memory-bound", (stream(2 * dispatched),),
                                   (stream(2 * BF16 * routed * h),)))  # fmt: skip
    if selective:  # §3.3.2: the SwiGLU's output is recomputed from its kept input; §3.2.3: so is the RMSNorm
        again = _swiglu("expert SwiGLU", routed, f_e, layout.fp8)
        operations += [recomputed(again), recomputed(norm("norm 2", model, sh))]
    if shared:
        operations[1:1] = [
            linear("shared experts in", T, 2 * shared, h, saved=0.0),
            _swiglu("shared SwiGLU", T, shared, layout.fp8),
            linear("shared experts out", T, h, shared, saved=BF16 * T * shared),
        ]
    return operations


def recomputed(op: Operation) -> Operation:
    """``op``'s forward run again inside the input gradient (I), keeping nothing."""
    return Operation(f"{op.name}, recomputed", op.category, (), op.forward)


def _swiglu(name: str, tokens: float, width: float, fp8: bool) -> Operation:
    """SwiGLU on ``tokens`` × 2·``width``: keeps its input (fused: ``fused_bias_swiglu``), in FP8 with FP8
    training (DeepSeek-V3 report §3.3.2: the SwiGLU's inputs cached in FP8, its output recomputed)."""
    given = BF16 * tokens * 2 * width
    return Operation(name, "memory-bound", (stream(given + BF16 * tokens * width),),
                     (stream(2 * given + BF16 * tokens * width),), saved=given / 2 if fp8 else given)  # fmt: skip


def mla_operations(model: ModelSpec, layout: Layout, sh: Shapes) -> list[Operation]:
    """Multi-head latent attention (DeepSeek-V2 §2.1): Q down to q_c and up to a·(d + d_r); the keys' and values'
    latent kv_c and one shared rotary key d_r; up to a·(d + d_v); flash attention over d + d_r wide queries and
    keys and d_v wide values; the output projection a·d_v → h. Heads split over TP."""
    T, h, t = sh.tokens, sh.hidden, layout.tensor_parallel
    a = model.num_attention_heads / t
    q_c, kv_c, d_r = model.q_lora_rank, model.kv_lora_rank, model.rope_head_dim
    qk, v = a * model.query_key_head, a * model.value_head
    split_input = BF16 * sh.split_tokens * h
    b, keys = sh.sequences, sh.keys / sh.sequences
    work = 2.0 * T * keys * (qk + v) * CAUSAL_SHARE  # Q·Kᵀ over d + d_r, P·V over d_v
    statistics = FP32 * T * a
    moved = BF16 * (2 * T * qk + 2 * sh.keys * (qk + v)) + statistics
    tiles = (int(b * a), int(T / b), model.value_head)
    output = BF16 * T * v * (E5M6_SHARE if layout.fp8 else 1.0)
    # not recomputed (DeepSeek-V3 recomputes the up-projections, not the core): it keeps its output and log-sum-exp
    forward, backward = flash_attention(work, moved, 2 * moved, tiles)
    core = Operation("flash attention (MLA)", "attention", (forward,), (backward,), saved=output + statistics,
                     statistics=statistics)  # fmt: skip
    # selective recomputation re-runs the up-projections from the kept latents and the RMSNorm before them
    # (DeepSeek-V3 §3.2.3); the core keeps what it keeps
    up = dataclasses.replace
    normed = 0.0 if layout.recompute == "selective" else split_input
    again = [recomputed(norm("norm 1", model, sh))] if layout.recompute == "selective" else []
    return [
        *again,
        linear("Q down", T, q_c, h, saved=normed + BF16 * T * q_c),  # the latents stay kept
        up(linear("Q up", T, qk, q_c, saved=0.0), core=True),
        linear("KV down", T, kv_c + d_r, h, saved=BF16 * T * (kv_c + d_r)),  # the same input as Q down
        up(linear("KV up", T, a * (model.head_size + model.value_head), kv_c, saved=0.0), core=True),
        Operation("Q, K, V for the core", "memory-bound", (stream(BF16 * T * (qk + qk + v)),),
                  (stream(BF16 * T * (qk + qk + v)),), saved=BF16 * T * (qk + qk + v), core=True),
        core,
        linear("output projection", T, h, v, saved=0.0),
    ]  # fmt: skip


@dataclass(frozen=True)
class AllToAll:
    """One MoE layer's expert all-to-all for one micro-batch on one GPU: forward (dispatch + combine); the
    backward moves the same bytes."""

    tokens: float
    """T/t: the micro-batch's tokens this GPU sends (its TP peers send the others)."""
    nodes: int
    """Where each token is sent: min(node limit, k, the nodes an EP group spans) across nodes; inside one node,
    min(k, EP) GPUs."""
    dispatch_bytes: float
    combine_bytes: float
    dispatch_seconds: float
    combine_seconds: float
    link: str
    """"NVLink" or "InfiniBand"."""

    @property
    def seconds(self) -> float:
        """One direction (the forward's dispatch and combine; the backward's take as long)."""
        return self.dispatch_seconds + self.combine_seconds


def ep_nodes(layout: Layout, gpu: GpuSpec) -> int:
    """Nodes one EP group spans: its e GPUs (each TP × CP apart... laid out as neighbours, as DeepSeek-V3 and
    Megatron-LM place them), e·t·c / GPUs per node, at least 1."""
    return max(1, math.ceil(layout.expert_parallel * layout.tensor_parallel * layout.context_parallel
                            / gpu.gpus_per_node))  # fmt: skip


def all_to_all(model: ModelSpec, gpu: GpuSpec, layout: Layout) -> AllToAll | None:
    """The all-to-all of one MoE layer and micro-batch (the module docstring); None without experts or EP."""
    if not model.is_moe or layout.expert_parallel == 1:
        return None
    T = layout.microbatch_size * layout.sequence_per_gpu(model) / layout.tensor_parallel  # TP peers split them
    h = model.hidden_size
    spanned = ep_nodes(layout, gpu)
    limit = model.node_limit or model.experts_per_token
    # across nodes a token is sent once a node; inside one node once a GPU (DeepEP's two counts)
    nodes = (
        min(limit, model.experts_per_token, spanned)
        if spanned > 1
        else min(model.experts_per_token, layout.expert_parallel)
    )
    dispatch = T * nodes * h * (FP8_TILE_BYTES if layout.fp8 else BF16)
    combine = T * nodes * h * BF16
    if spanned == 1:
        rate, shares, link = gpu.nvlink_gb_s / 2, DEEPEP_NVLINK_SHARE, "NVLink"
    else:
        rate, shares, link = gpu.internode_gb_s, DEEPEP_NETWORK_SHARE, "InfiniBand"
    rate *= BYTES_PER_GB
    return AllToAll(T, nodes, dispatch, combine, dispatch / (rate * shares["dispatch"]),
                    combine / (rate * shares["combine"]), link)  # fmt: skip


def compute_gpu(gpu: GpuSpec, layout: Layout, exchange: AllToAll | None) -> GpuSpec:
    """The GPU the layers compute on: all its SMs, but for an all-to-all overlapped with compute (DualPipe,
    DualPipeV), which keeps ``COMMUNICATION_SMS`` of them: peak and SMs scaled to the rest."""
    if exchange is None or not layout.family_spec.overlaps_forward_backward:
        return gpu
    left = (gpu.sm_count - COMMUNICATION_SMS) / gpu.sm_count
    return dataclasses.replace(
        gpu, sm_count=gpu.sm_count - COMMUNICATION_SMS, peak_tflops=gpu.peak_tflops * left,
        fp8_peak_tflops=None if gpu.fp8_peak_tflops is None else gpu.fp8_peak_tflops * left,
    )  # fmt: skip
