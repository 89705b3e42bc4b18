"""Seconds from FLOPs and bytes: each stage's F, I and W on one GPU, the pipeline transfer, the DP all-reduce.

Legend as in ``models``: l, h, f, a, k, d, V, s, b; t = TP, c = CP, n = the ranks in a collective.

Compute. A stage's FLOPs (its layers; the output layer's on the last stage; the embedding lookup and the
loss have no matrix products and count nothing, as in Narayanan et al.'s GEMM count) are split over its t·c
GPUs and run at peak × efficiency. Per layer and micro-batch, with W_f the weight products and A_f the
attention scores of the forward (``ModelSpec.layer_flops``):

    F = W_f + A_f          I = W_f + 2·A_f (+ recomputation)          W = W_f          B = I + W = 2F

(the input gradient of a product X·M costs one product, its weight gradient another; the attention scores
have no weights, so both operands' gradients land in I). Recomputation re-runs forward work inside I
(Korthikanti et al. 2022 §5): full, the whole forward W_f + A_f; selective, the attention core A_f.

Communication inside a layer (Korthikanti et al. 2022 §4.2.2): TP does 2 all-reduces in the forward and 2
in the backward (with sequence parallelism the same bytes, as all-gathers and reduce-scatters), each of the
layer's activation, 2·(s/c)·b·h bytes; full recomputation repeats the forward's 2. CP (Llama 3 §3.3.2)
all-gathers the keys and values in the forward and reduce-scatters their gradients in the backward. Ring
collectives over n GPUs at bandwidth β: all-reduce 2(n − 1)/n × bytes/β; all-gather or reduce-scatter
(n − 1)/n × bytes/β. None of it is overlapped with compute here: a pessimistic bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..costs import Durations, resolved
from .hardware import GpuSpec
from .layout import Layout
from .models import LayerFlops, ModelSpec

BYTES_PER_VALUE = 2
"""BF16 activations, weights and gradients."""


def all_reduce_seconds(num_bytes: float, ranks: int, bandwidth: float) -> float:
    """Ring all-reduce: 2(n − 1)/n × bytes / bandwidth (a reduce-scatter then an all-gather)."""
    return 0.0 if ranks <= 1 else 2 * (ranks - 1) / ranks * num_bytes / bandwidth


def all_gather_seconds(num_bytes: float, ranks: int, bandwidth: float) -> float:
    """Ring all-gather or reduce-scatter of ``num_bytes`` in all: (n − 1)/n × bytes / bandwidth."""
    return 0.0 if ranks <= 1 else (ranks - 1) / ranks * num_bytes / bandwidth


# -- where groups sit: GPUs numbered [TP, CP, PP, DP] (Llama 3 §3.3.2) -----------------------------------------
def tensor_parallel_bandwidth(gpu: GpuSpec, layout: Layout) -> float:
    """NVLink when a TP group fits in a node, else the network."""
    inside = layout.tensor_parallel <= gpu.gpus_per_node
    return gpu.ring_bandwidth_intra if inside else gpu.ring_bandwidth_inter


def context_parallel_bandwidth(gpu: GpuSpec, layout: Layout) -> float:
    """NVLink when a TP × CP block fits in a node, else the network."""
    inside = layout.tensor_parallel * layout.context_parallel <= gpu.gpus_per_node
    return gpu.ring_bandwidth_intra if inside else gpu.ring_bandwidth_inter


def data_parallel_bandwidth(gpu: GpuSpec, layout: Layout) -> float:
    """NVLink only when the whole job fits in one node (DP is outermost), else the network."""
    return gpu.ring_bandwidth_intra if layout.gpus_used <= gpu.gpus_per_node else gpu.ring_bandwidth_inter


def pipeline_hops(layout: Layout, placement: str) -> list[tuple[int, int]]:
    """The pairs of pipeline ranks a hand-off crosses: r → r+1, plus p−1 → 0 when looped chunks wrap round."""
    p = layout.pipeline_parallel
    hops = [(rank, rank + 1) for rank in range(p - 1)]
    if placement == "loop" and layout.num_chunks > 1 and p > 1:
        hops.append((p - 1, 0))
    return hops


def same_node(first_rank: int, second_rank: int, gpu: GpuSpec, layout: Layout) -> bool:
    """True when every GPU of both pipeline ranks (t·c GPUs each, first replica) sits in one node."""
    block, per_node = layout.tensor_parallel * layout.context_parallel, gpu.gpus_per_node
    nodes = {(block * rank) // per_node for rank in (first_rank, second_rank)}
    nodes |= {(block * (rank + 1) - 1) // per_node for rank in (first_rank, second_rank)}
    return len(nodes) == 1


# -- compute ----------------------------------------------------------------------------------------------------
def recomputed_flops(layer: LayerFlops, recompute: str) -> float:
    """Forward work a backward re-runs first (Korthikanti et al. 2022 §5): full recomputation the whole
    forward; selective the attention core (the scores and their product with V); none nothing."""
    return {"none": 0.0, "selective": layer.attention, "full": layer.forward}[recompute]


@dataclass(frozen=True)
class StageCosts:
    """One stage's durations on one GPU for one micro-batch, in seconds (communication included)."""

    stage: int
    """Stage index (0 = the embedding's)."""
    layers: int
    """Transformer layers on it."""
    forward: float
    """F."""
    backward_input: float
    """I (with any recomputation)."""
    backward_weight: float
    """W."""
    communication: float
    """The TP and CP collectives inside F + I, already counted in them."""

    @property
    def backward(self) -> float:
        """B = I + W."""
        return self.backward_input + self.backward_weight

    def row(self) -> Durations:
        """The simulator's ``Costs.stage_costs`` row: F, I, W (B = I + W, F&B = F + B by ``resolved``'s rules)."""
        return resolved({"F": self.forward, "I": self.backward_input, "W": self.backward_weight})


def stage_costs(
    model: ModelSpec, gpu: GpuSpec, layout: Layout, efficiency: float, layers_per_stage: tuple[int, ...]
) -> tuple[StageCosts, ...]:
    """F, I, W of every stage on one GPU (see the module docstring for each formula)."""
    t, c, b = layout.tensor_parallel, layout.context_parallel, layout.microbatch_size
    s = layout.sequence(model)
    layer = model.layer_flops(b, s)  # forward of one layer on one micro-batch, whole (not yet split)
    logits = model.logits_flops(b, s)
    extra = recomputed_flops(layer, layout.recompute)
    rate = t * c * gpu.peak_flops * efficiency  # FLOP/s of the stage's t·c GPUs together

    # collectives of one layer, one micro-batch
    activation = BYTES_PER_VALUE * (s // c) * b * model.hidden_size
    tp_one = all_reduce_seconds(activation, t, tensor_parallel_bandwidth(gpu, layout))
    kv_per_gpu = max(model.num_kv_heads // t, 1) * model.head_size
    keys_and_values = BYTES_PER_VALUE * 2 * s * b * kv_per_gpu
    cp_one = all_gather_seconds(keys_and_values, c, context_parallel_bandwidth(gpu, layout))
    forward_comm = 2 * tp_one + cp_one
    backward_comm = 2 * tp_one + cp_one + (forward_comm if layout.recompute == "full" else 0.0)

    last = len(layers_per_stage) - 1
    rows = []
    for stage, count in enumerate(layers_per_stage):
        output = logits if stage == last else 0.0
        forward = count * layer.forward + output
        backward_input = count * (layer.weights + 2 * layer.attention + extra) + output
        backward_weight = count * layer.weights + output
        communication = count * (forward_comm + backward_comm)
        rows.append(
            StageCosts(
                stage=stage,
                layers=count,
                forward=forward / rate + count * forward_comm,
                backward_input=backward_input / rate + count * backward_comm,
                backward_weight=backward_weight / rate,
                communication=communication,
            )
        )
    return tuple(rows)


def step_flops(model: ModelSpec, layout: Layout) -> tuple[float, float]:
    """FLOPs of one training step over the global batch: (model, hardware).

    Model FLOPs count a forward and a backward (3 passes), what MFU divides by (PaLM's definition, used by
    the Llama 3 paper); hardware FLOPs add the recomputed forward work (Narayanan et al.'s Eq. 3 counts it:
    with full recomputation and a GPT-style model the two agree exactly)."""
    s, batch = layout.sequence(model), layout.global_batch
    layer = model.layer_flops(batch, s)
    model_flops = 3 * (model.num_layers * layer.forward + model.logits_flops(batch, s))
    return model_flops, model_flops + model.num_layers * recomputed_flops(layer, layout.recompute)


# -- transfers between ranks and the DP all-reduce ---------------------------------------------------------------
@dataclass(frozen=True)
class Transfer:
    """One hand-off between pipeline ranks (an activation forward or its gradient backward)."""

    bytes: float
    """s/c × b × h × 2 bytes, divided by TP with sequence parallelism."""
    seconds: float
    """Over the slowest hop: the simulator takes one transfer time for all."""
    link: str
    """"NVLink", "inter-node", or "none" (one rank)."""


def pipeline_transfer(model: ModelSpec, gpu: GpuSpec, layout: Layout, placement: str) -> Transfer:
    """The activation of one micro-batch between neighbouring ranks: NVLink when both ranks sit in one node,
    else the network; the slowest hop stands for all (the simulator has one transfer time)."""
    divisor = layout.tensor_parallel if layout.sequence_parallel else 1
    size = BYTES_PER_VALUE * layout.sequence_per_gpu(model) * layout.microbatch_size * model.hidden_size / divisor
    hops = pipeline_hops(layout, placement)
    if not hops:
        return Transfer(size, 0.0, "none")
    if all(same_node(a, b, gpu, layout) for a, b in hops):
        return Transfer(size, size / gpu.ring_bandwidth_intra, "NVLink")
    return Transfer(size, size / gpu.ring_bandwidth_inter, "inter-node")


def data_parallel_seconds(parameters_on_gpu: float, gpu: GpuSpec, layout: Layout) -> float:
    """The gradient all-reduce over DP at the end of the step: ring, 2(n − 1)/n × 2 bytes × parameters /
    bandwidth. ZeRO-1 and -2 move the same bytes as a reduce-scatter and an all-gather; ZeRO-3 also
    all-gathers the weights, 1.5× in all (Rajbhandari et al. 2020 §7)."""
    factor = 1.5 if layout.zero == 3 else 1.0
    gradient_bytes = BYTES_PER_VALUE * parameters_on_gpu
    return factor * all_reduce_seconds(gradient_bytes, layout.data_parallel, data_parallel_bandwidth(gpu, layout))
