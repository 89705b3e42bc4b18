"""Each stage's F, I and W on one GPU, the pipeline transfers between ranks, and the DP gradient reduction.

Legend as in ``models``; t = TP, c = CP, n = the ranks in a collective.

Compute: each stage's layers are ``layers.layer_operations`` timed on the roofline (``roofline``); the first
stage adds the embedding, the last the final norm, the output layer and the loss. Recomputation re-runs forward
work inside I (Korthikanti et al. 2022 §5): selective, the attention core; full, the whole layer (and its TP
collectives).

Communication inside a layer (Korthikanti et al. 2022 §4.2.2): TP does 2 all-reduces in the forward and 2 in the
backward (with sequence parallelism the same bytes, as all-gathers and reduce-scatters), each of the layer's
activation, T·h·2 bytes. With ``tp_overlap`` a collective hides behind its pass's GEMMs and only the excess shows.
CP (Llama 3 §3.3.2) all-gathers the keys and values in the forward and reduce-scatters their gradients in the
backward. Ring collectives over n GPUs at bandwidth β: all-reduce 2(n − 1)/n × bytes/β; all-gather or
reduce-scatter (n − 1)/n × bytes/β.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..costs import Durations, resolved
from .hardware import GpuSpec
from .layers import layer_operations
from .layout import Layout
from .models import LayerFlops, ModelSpec
from .operations import (
    BF16,
    CATEGORIES,
    Operation,
    Shapes,
    embedding_operations,
    output_operations,
)
from .roofline import pass_seconds

BYTES_PER_VALUE = BF16
"""BF16 activations and weights."""


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
    """The TP and CP collectives inside F + I that show (not hidden behind GEMMs), already counted in them."""
    breakdown: Mapping[str, float]
    """F + I + W by ``CATEGORIES``: where the stage's time goes."""

    @property
    def backward(self) -> float:
        """B = I + W."""
        return self.backward_input + self.backward_weight

    def row(self) -> Durations:
        """The simulator's ``Costs.stage_costs`` row: F, I, W (B = I + W, F&B = F + B by ``resolved``'s rules)."""
        return resolved({"F": self.forward, "I": self.backward_input, "W": self.backward_weight})


@dataclass(frozen=True)
class Passes:
    """Seconds of F, I and W by category, for one layer or one stage's extra operations."""

    forward: dict[str, float]
    input_gradient: dict[str, float]
    weight_gradient: dict[str, float]

    @classmethod
    def of(cls, operations: tuple[Operation, ...], gpu: GpuSpec, recomputed: tuple[Operation, ...] = ()) -> Passes:
        """The three passes; ``recomputed`` operations run their forward again inside I."""
        input_gradient = pass_seconds(operations, gpu, "input_gradient")
        for category, seconds in pass_seconds(recomputed, gpu, "forward").items():
            input_gradient[category] = input_gradient.get(category, 0.0) + seconds
        return cls(
            pass_seconds(operations, gpu, "forward"), input_gradient, pass_seconds(operations, gpu, "weight_gradient")
        )

    def add_collectives(self, category: str, forward: float, backward: float, overlap: bool) -> float:
        """Add a collective's seconds to F and I (hidden behind the pass's GEMMs with ``overlap``); what shows."""
        shown = 0.0
        for seconds, times in ((forward, self.forward), (backward, self.input_gradient)):
            exposed = max(0.0, seconds - times.get("GEMMs", 0.0)) if overlap else seconds
            times[category] = times.get(category, 0.0) + exposed
            shown += exposed
        return shown

    def totals(self) -> tuple[float, float, float]:
        return sum(self.forward.values()), sum(self.input_gradient.values()), sum(self.weight_gradient.values())


def layer_passes(model: ModelSpec, gpu: GpuSpec, layout: Layout, *, moe: bool = False) -> tuple[Passes, float]:
    """One layer's F, I, W by category (recomputation and collectives in), and the collectives' exposed seconds
    (``moe``: an MoE layer; its all-to-all is not here but in the simulator's ``Costs.expert_comm``)."""
    operations = layer_operations(model, layout, moe=moe)
    recomputed = {"none": (), "selective": tuple(op for op in operations if op.core), "full": operations}
    passes = Passes.of(operations, gpu, recomputed[layout.recompute])
    shapes = Shapes.of(model, layout)
    t, c = layout.tensor_parallel, layout.context_parallel
    activation = BF16 * shapes.tokens * model.hidden_size
    tp = 2 * all_reduce_seconds(activation, t, tensor_parallel_bandwidth(gpu, layout))
    keys_and_values = BF16 * 2 * shapes.keys * shapes.key_value
    cp = all_gather_seconds(keys_and_values, c, context_parallel_bandwidth(gpu, layout))
    full = layout.recompute == "full"
    shown = passes.add_collectives("TP communication", tp, tp * (2 if full else 1), layout.tp_overlap)
    shown += passes.add_collectives("CP communication", cp, cp * (2 if full else 1), False)
    return passes, shown


def moe_layers_per_stage(model: ModelSpec, layers_per_stage: tuple[int, ...], copies: int = 1) -> list[int]:
    """MoE layers on each stage: the layers past the first ``dense_layers`` (each copy's stages alike)."""
    blocks = layers_per_stage[: len(layers_per_stage) // copies]
    starts = [sum(blocks[:index]) for index in range(len(blocks))]
    per_block = [max(0, start + count - max(start, model.dense_layers)) if model.is_moe else 0
                 for start, count in zip(starts, blocks, strict=True)]  # fmt: skip
    return per_block * copies


def stage_costs(
    model: ModelSpec, gpu: GpuSpec, layout: Layout, layers_per_stage: tuple[int, ...]
) -> tuple[StageCosts, ...]:
    """F, I, W of every stage on one GPU (see the module docstring). With two copies (DualPipe) each copy's first
    stage holds the embedding and its last the output layer and the MTP modules."""
    layer, layer_comm = layer_passes(model, gpu, layout)
    moe_layer, moe_comm = layer_passes(model, gpu, layout, moe=True) if model.is_moe else (layer, layer_comm)
    one_collective = all_reduce_seconds(
        BF16 * Shapes.of(model, layout).tokens * model.hidden_size,
        layout.tensor_parallel,
        tensor_parallel_bandwidth(gpu, layout),
    )
    first = Passes.of(embedding_operations(model, layout), gpu)
    first_comm = first.add_collectives("TP communication", one_collective, 0.0, False)  # vocabulary-parallel lookup
    last = Passes.of(output_operations(model, layout), gpu)
    last_comm = last.add_collectives("TP communication", 0.0, one_collective, False)  # the output layer's input
    blocks = len(layers_per_stage) // layout.copies
    moe_counts = moe_layers_per_stage(model, layers_per_stage, layout.copies)
    mtp = model.mtp_modules  # each an MoE layer and one more output head (DeepSeek-V3 §2.2), on the last stage
    rows = []
    for stage, count in enumerate(layers_per_stage):
        moe = moe_counts[stage]
        parts = [(layer, count - moe), (moe_layer, moe)]
        comm = (count - moe) * layer_comm + moe * moe_comm
        if stage % blocks == 0:
            parts.append((first, 1))
            comm += first_comm
        if stage % blocks == blocks - 1:
            parts += [(last, 1 + mtp), (moe_layer, mtp)]
            comm += (1 + mtp) * last_comm + mtp * moe_comm
        forward, input_gradient, weight_gradient = (
            math.fsum(passes.totals()[index] * times for passes, times in parts) for index in range(3)
        )
        breakdown = dict.fromkeys(CATEGORIES, 0.0)
        for passes, times in parts:
            for pass_ in (passes.forward, passes.input_gradient, passes.weight_gradient):
                for category, value in pass_.items():
                    breakdown[category] += value * times
        rows.append(
            StageCosts(stage, count, forward, input_gradient, weight_gradient, comm, MappingProxyType(breakdown))
        )
    return tuple(rows)


def step_flops(model: ModelSpec, layout: Layout, attention_share: float = 1.0) -> tuple[float, float]:
    """FLOPs of one training step over the global batch: (model, hardware).

    Model FLOPs count a forward and a backward (3 passes), what MFU divides by (PaLM's definition, used by
    the Llama 3 paper); hardware FLOPs add the recomputed forward work (Narayanan et al.'s Eq. 3 counts it:
    with full recomputation and a GPT-style model the two agree exactly). ``attention_share`` counts that share
    of the s × s square (0.5: only the causal half a causal kernel computes)."""
    s, batch = layout.sequence(model), layout.global_batch
    whole = model.stack_flops(batch, s)  # every layer; an MoE layer's active experts only
    layers = LayerFlops(whole.weights, whole.attention * attention_share)
    model_flops = 3 * (layers.forward + model.logits_flops(batch, s))
    return model_flops, model_flops + recomputed_flops(layers, layout.recompute)


# -- transfers between ranks and the DP gradient reduction -------------------------------------------------------
@dataclass(frozen=True)
class Transfer:
    """One hand-off between pipeline ranks (an activation forward or its gradient backward)."""

    bytes: float
    """s/c × b × h × 2 bytes, divided by TP with sequence parallelism."""
    hop_seconds: tuple[float, ...]
    """By r: the time between rank r and rank r + 1 (mod p): NVLink when both sit in one node, else the network."""
    link: str
    """"NVLink", "inter-node", "NVLink and inter-node", or "none" (one rank)."""

    @property
    def seconds(self) -> float:
        """The slowest hop's time."""
        return max(self.hop_seconds, default=0.0)


def scatter_gather(layout: Layout) -> bool:
    """True when a hand-off is split over the TP group (Narayanan et al. 2021 §4.1, the scatter/gather
    optimisation of 2021 Megatron-LM, which blocked on its exchanges): each of the t GPUs sends 1/t of the
    activation over its own link and the receiving group all-gathers it over NVLink. With sequence parallelism
    each GPU holds only its 1/t already, and nothing is gathered."""
    return not layout.p2p_overlap and layout.tensor_parallel > 1 and not layout.sequence_parallel


def pipeline_transfer(model: ModelSpec, gpu: GpuSpec, layout: Layout, placement: str) -> Transfer:
    """The activation of one micro-batch between neighbouring ranks, each hop over its own link (with
    ``scatter_gather``, 1/t of it, then the all-gather inside the receiving node)."""
    t = layout.tensor_parallel
    divisor = t if layout.sequence_parallel or scatter_gather(layout) else 1
    whole = BYTES_PER_VALUE * layout.sequence_per_gpu(model) * layout.microbatch_size * model.hidden_size
    size = whole / divisor
    hops = pipeline_hops(layout, placement)
    if not hops:
        return Transfer(size, (), "none")
    p = layout.pipeline_parallel
    inside = [same_node(first, (first + 1) % p, gpu, layout) for first in range(p)]
    used = {inside[first] for first, _ in hops}
    link = " and ".join(name for flag, name in ((True, "NVLink"), (False, "inter-node")) if flag in used)
    gather = all_gather_seconds(whole, t, gpu.ring_bandwidth_intra) if scatter_gather(layout) else 0.0
    seconds = tuple(size / (gpu.ring_bandwidth_intra if flag else gpu.ring_bandwidth_inter) + gather for flag in inside)
    return Transfer(size, seconds, link)


def with_blocking_exchanges(rows: tuple[StageCosts, ...], exchange: float) -> tuple[StageCosts, ...]:
    """The stages' costs when every hand-off blocks both ranks (``Layout.p2p_overlap`` off): 2021 Megatron-LM
    exchanged after each pass (send the output on, receive the next input or gradient, then wait), so every F but
    the last stage's and every I but the first stage's takes the slowest hop's ``exchange`` seconds more, shown as
    "PP hand-offs"."""
    last = len(rows) - 1
    changed = []
    for row in rows:
        forward = exchange if row.stage != last else 0.0
        backward = exchange if row.stage != 0 else 0.0
        breakdown = dict(row.breakdown)
        breakdown["PP hand-offs"] = breakdown.get("PP hand-offs", 0.0) + forward + backward
        changed.append(
            dataclasses.replace(
                row,
                forward=row.forward + forward,
                backward_input=row.backward_input + backward,
                breakdown=MappingProxyType(breakdown),
            )
        )
    return tuple(changed)


def data_parallel_seconds(parameters_on_gpu: float, gpu: GpuSpec, layout: Layout) -> float:
    """One GPU's gradient reduction over DP, as rings (Rajbhandari et al. 2020 §7): ZeRO-0 all-reduces the
    gradients, 2(n − 1)/n × G bytes; ZeRO-1 and -2 (and Megatron's distributed optimizer) reduce-scatter them and
    all-gather the updated BF16 weights, (n − 1)/n × (G + 2Ψ); ZeRO-3 all-gathers the weights once more for the
    backward, (n − 1)/n × (G + 4Ψ). G = Ψ × the gradient's bytes (FP32 by default, as Megatron and Llama 3 reduce)."""
    n, bandwidth = layout.data_parallel, data_parallel_bandwidth(gpu, layout)
    gradients = layout.gradient_bytes * parameters_on_gpu
    if layout.zero == 0:
        return all_reduce_seconds(gradients, n, bandwidth)
    weights = BYTES_PER_VALUE * parameters_on_gpu * (2 if layout.zero == 3 else 1)
    return all_gather_seconds(gradients + weights, n, bandwidth)


# -- after the pipeline: the tied embedding's gradient and the optimizer step -------------------------------------
def embedding_reduction_seconds(model: ModelSpec, gpu: GpuSpec, layout: Layout, first: int, last: int) -> float:
    """A tied embedding's gradient summed between the two pipeline ranks that hold it: the first stage's word
    embedding and the last stage's output layer are one V × h matrix (÷ TP) on ranks ``first`` and ``last``, and
    Megatron-LM all-reduces its gradient between them after the backward (Narayanan et al. 2021 §3.3's
    "embedding group"; megatron's allreduce of word-embedding gradients), a ring of two. Zero when the matrix is
    not tied or both ends sit on one rank (the V shape)."""
    if not model.tied_embeddings or first == last:
        return 0.0
    gradient = layout.gradient_bytes * model.vocab_size * model.hidden_size / layout.tensor_parallel
    inside = same_node(first, last, gpu, layout)
    return all_reduce_seconds(gradient, 2, gpu.ring_bandwidth_intra if inside else gpu.ring_bandwidth_inter)


def copies_reduction_seconds(parameters_on_gpu: float, gpu: GpuSpec, layout: Layout, rank: int, mirror: int) -> float:
    """DualPipe's two copies of each block sit on ranks r and p − 1 − r; before the optimizer step each GPU sums
    its gradients with its mirror's, an all-reduce of two over NVLink or the network (``Layout.gradient_bytes``
    per parameter)."""
    inside = same_node(rank, mirror, gpu, layout)
    gradients = layout.gradient_bytes * parameters_on_gpu
    return all_reduce_seconds(gradients, 2, gpu.ring_bandwidth_intra if inside else gpu.ring_bandwidth_inter)


OPTIMIZER_BYTES = {
    "Adam's update": 28,  # reads the FP32 weight, gradient, m and v (16 B), writes the weight, m and v (12 B)
    "the gradient's norm, for clipping": 4,  # reads the FP32 gradient
    "the BF16 copy of the weight": 6,  # reads the FP32 weight, writes 2 bytes
}
"""HBM bytes the optimizer step moves per parameter it updates, kernel by kernel: mixed-precision Adam with FP32
master weights (Micikevicius et al. 2018; Megatron-LM's optimizer: fused multi-tensor Adam, the clipping norm,
the copy back to the model's 16-bit weights). Every kernel streams, so the step is memory-bound."""
GRADIENT_CAST_BYTES = 6
"""16-bit gradients are first copied into FP32 main gradients (2021 Megatron-LM's FP16 optimizer): read 2, write 4."""


def optimizer_bytes_per_parameter(layout: Layout) -> int:
    """``OPTIMIZER_BYTES`` summed, with the gradients' cast when they are 16-bit."""
    cast = GRADIENT_CAST_BYTES if layout.gradient_bytes < 4 else 0
    return sum(OPTIMIZER_BYTES.values()) + cast


def optimizer_step_seconds(parameters_on_gpu: float, gpu: GpuSpec, layout: Layout) -> float:
    """One GPU's optimizer step over the parameters it updates (with ZeRO ≥ 1 its 1/DP shard), at the HBM's
    streaming rate (``GpuSpec.hbm_bytes_per_second``)."""
    updated = parameters_on_gpu / (layout.data_parallel if layout.zero >= 1 else 1)
    return optimizer_bytes_per_parameter(layout) * updated / gpu.hbm_bytes_per_second
