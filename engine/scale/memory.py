"""Bytes on one GPU: weights, gradients and optimizer states as Megatron-LM keeps them (with ZeRO), and the
activations the layer's operations keep (``operations``) times what the simulated schedule holds in flight.

Model states per parameter Ψ one GPU holds (its stages' parameters over TP), Megatron-LM's default
(``docs/api-guide/dist_optimizer.md``: "bf16 param, fp32 grads", 18 bytes; "we always use fp32 main
parameters"): BF16 weights 2Ψ, FP32 main gradients 4Ψ (BF16: 2Ψ), FP32 master weights, Adam's momentum and
variance 12Ψ. ZeRO over N_d = DP replicas (Rajbhandari et al. 2020 §5): stage 1 divides the optimizer states by
N_d (Megatron's distributed optimizer: 6 + 12/d bytes, as its table says), stage 2 also the gradients, stage 3
also the weights.

Activations per transformer layer and micro-batch: what its operations keep for the backward (``operations``,
checked against torch's own saved tensors in ``tests/engine/runtime/test_saved_tensors.py``). For a GPT-3 layer
without flash attention it is Korthikanti et al. 2022's Table 2 (sₗ = s/c the tokens of a sequence on one GPU):

    none,      TP + sequence parallel    sₗbh·34/t + 5·a·sₗ·s·b/t
    none,      TP only                   sₗbh·(10 + 24/t) + 5·a·sₗ·s·b/t
    selective, TP + sequence parallel    sₗbh·34/t
    selective, TP only                   sₗbh·(10 + 24/t)
    full                                 2·sₗbh (/t with sequence parallelism, which splits the kept input)

plus, beyond the table, the norms' per-token statistics. Outside the layers (§4.3): the embedding's dropout mask
on the first stage; the final norm's and the output layer's inputs and the FP32 logits on the last.

The schedule decides how many micro-batches each stage holds at once: the simulator's memory model (F adds a
stage's activations, I frees all but what W still needs, W or B frees the rest) is read from the simulated
timeline and weighted with each stage's bytes. Not counted: the layer being recomputed, communication and
temporary buffers, fragmentation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..ir import Schedule
from ..timeline import Timeline, before_on_rank
from .costs import BYTES_PER_VALUE, moe_layers_per_stage
from .layers import layer_operations
from .layout import Layout
from .models import ModelSpec
from .operations import embedding_operations, output_operations, saved_bytes

OPTIMIZER_BYTES = 12
"""FP32 master weights, Adam's momentum and variance (Rajbhandari et al. 2020 §3.1; Megatron-LM's table)."""


# -- activations ------------------------------------------------------------------------------------------------
def layer_activation_bytes(model: ModelSpec, layout: Layout, *, statistics: bool = True, moe: bool = False) -> float:
    """One transformer layer's kept activations for one micro-batch on one GPU (``operations.saved_bytes``)."""
    return saved_bytes(layer_operations(model, layout, moe=moe), model, layout, statistics=statistics)


def embedding_activation_bytes(model: ModelSpec, layout: Layout) -> float:
    """The first stage's extra per micro-batch: the embedding's dropout mask, if the model has dropout (§4.3)."""
    return math.fsum(op.saved for op in embedding_operations(model, layout))


def output_activation_bytes(model: ModelSpec, layout: Layout) -> float:
    """The last stage's extra per micro-batch: the final norm's and the output layer's inputs, and the FP32
    logits 4·sₗ·b·V/t (§4.3)."""
    return math.fsum(op.saved for op in output_operations(model, layout))


def stage_activation_bytes(model: ModelSpec, layout: Layout, layers_per_stage: tuple[int, ...]) -> np.ndarray:
    """Bytes each stage keeps for one micro-batch: its layers' activations, plus the embedding's on the first
    stage and the output layer's on the last."""
    moe = np.asarray(moe_layers_per_stage(model, layers_per_stage, layout.copies), dtype=float)
    per_stage = (np.asarray(layers_per_stage, dtype=float) - moe) * layer_activation_bytes(model, layout)
    moe_layer = 0.0
    if model.is_moe:
        moe_layer = layer_activation_bytes(model, layout, moe=True)
        per_stage += moe * moe_layer
    blocks = len(layers_per_stage) // layout.copies
    for copy in range(layout.copies):
        per_stage[copy * blocks] += embedding_activation_bytes(model, layout)
        per_stage[(copy + 1) * blocks - 1] += (1 + model.mtp_modules) * output_activation_bytes(model, layout)
        if model.mtp_modules:
            per_stage[(copy + 1) * blocks - 1] += model.mtp_modules * moe_layer
    return per_stage


def peak_activation_bytes(timeline: Timeline, schedule: Schedule, stage_bytes: np.ndarray) -> np.ndarray:
    """Most activation bytes each rank holds at once in the simulated step.

    The simulator counts memory in micro-batches through a rank's share (a stage holds 1/v of it, so F on
    stage s adds 1/v; DualPipe's stages are each a whole share); each change, over the stage's share, is weighted
    with stage s's bytes and summed in the rank's order."""
    frame = timeline.frame
    ranks = frame["rank"].to_numpy()
    after = frame["memory_after"].to_numpy()
    change = (after - before_on_rank(after, ranks)) / schedule.stage_share * stage_bytes[frame["stage"].to_numpy()]
    held = pd.Series(change).groupby(ranks).cumsum().to_numpy()
    peaks = np.zeros(schedule.num_ranks)
    np.maximum.at(peaks, ranks, held)
    return peaks


# -- model states -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelStateBytes:
    """Weights, gradients and optimizer states one GPU holds, bytes."""

    weights: float
    gradients: float
    optimizer: float

    @classmethod
    def of(cls, parameters: float, layout: Layout, experts: float = 0.0) -> ModelStateBytes:
        """Megatron-LM's bytes per parameter (the module docstring), each ZeRO stage dividing one more by DP.
        ``experts``: of ``parameters``, the routed experts', whose replicas are the expert-data-parallel group,
        TP × DP × CP / EP GPUs (Megatron-LM's distributed optimizer shards expert states over it)."""
        zero, shard = layout.zero, float(layout.data_parallel)
        expert_shard = layout.tensor_parallel * layout.data_parallel * layout.context_parallel / layout.expert_parallel

        def held(level: int, bytes_per: float) -> float:
            if zero < level:
                return bytes_per * parameters
            return bytes_per * ((parameters - experts) / shard + experts / expert_shard)

        return cls(
            weights=held(3, BYTES_PER_VALUE),
            gradients=held(2, layout.gradient_bytes),
            optimizer=held(1, OPTIMIZER_BYTES),
        )

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def stage_parameters(model: ModelSpec, layers_per_stage: tuple[int, ...], copies: int = 1) -> list[int]:
    """Parameters on each stage: its layers (an MoE layer with every expert), the embedding on the first, the
    final norm, output matrix and MTP modules on the last (of each copy). A tied output matrix lives on the first
    stage; the last stage keeps a copy of it too (Megatron all-reduces the two copies' gradients) — counted in
    ``rank_parameters``, not here."""
    moe = moe_layers_per_stage(model, layers_per_stage, copies)
    counts = [(layers - routed) * model.layer_parameters + routed * model.moe_layer_parameters
              for layers, routed in zip(layers_per_stage, moe, strict=True)]  # fmt: skip
    blocks = len(layers_per_stage) // copies
    for copy in range(copies):
        counts[copy * blocks] += model.embedding_parameters
        counts[(copy + 1) * blocks - 1] += model.output_parameters + model.mtp_modules * model.mtp_parameters
    return counts


def stage_expert_parameters(model: ModelSpec, layers_per_stage: tuple[int, ...], copies: int = 1) -> list[int]:
    """Of each stage's parameters, the routed experts' (MTP modules' included)."""
    moe = moe_layers_per_stage(model, layers_per_stage, copies)
    blocks = len(layers_per_stage) // copies
    mtp = [model.mtp_modules if stage % blocks == blocks - 1 else 0 for stage in range(len(layers_per_stage))]
    return [(routed + extra) * model.experts * model.expert_parameters for routed, extra in zip(moe, mtp, strict=True)]


def stage_gpu_parameters(
    model: ModelSpec, layout: Layout, schedule: Schedule, per_stage: list[int], experts: list[int] | None = None
) -> list[float]:
    """Parameters one GPU holds of each stage (its share over TP; of the routed experts, ``experts``, E/EP whole
    experts), with the tied embedding's copy on the last stage when that stage is not on the first stage's rank
    (Megatron all-reduces the two copies' gradients)."""
    routed = experts or [0] * len(per_stage)
    held = [float(count - expert) for count, expert in zip(per_stage, routed, strict=True)]
    if model.tied_embeddings and schedule.rank_of(schedule.num_stages - 1) != schedule.rank_of(0):
        held[-1] += model.vocab_size * model.hidden_size
    return [count / layout.tensor_parallel + expert / layout.expert_parallel
            for count, expert in zip(held, routed, strict=True)]  # fmt: skip


def stage_gpu_expert_parameters(layout: Layout, per_stage_experts: list[int]) -> list[float]:
    """Routed-expert parameters one GPU holds of each stage: E/EP experts of each MoE layer, whole (no TP)."""
    return [count / layout.expert_parallel for count in per_stage_experts]


def rank_parameters(
    model: ModelSpec, layout: Layout, schedule: Schedule, per_stage: list[int], experts: list[int] | None = None
) -> list[float]:
    """Parameters one GPU of each pipeline rank holds: its stages' shares (``stage_gpu_parameters``)."""
    held = [0.0] * schedule.num_ranks
    for stage, count in enumerate(stage_gpu_parameters(model, layout, schedule, per_stage, experts)):
        held[schedule.rank_of(stage)] += count
    return held
