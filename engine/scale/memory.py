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
from .costs import BYTES_PER_VALUE
from .layout import Layout
from .models import ModelSpec
from .operations import embedding_operations, layer_operations, output_operations, saved_bytes

OPTIMIZER_BYTES = 12
"""FP32 master weights, Adam's momentum and variance (Rajbhandari et al. 2020 §3.1; Megatron-LM's table)."""


# -- activations ------------------------------------------------------------------------------------------------
def layer_activation_bytes(model: ModelSpec, layout: Layout, *, statistics: bool = True) -> float:
    """One transformer layer's kept activations for one micro-batch on one GPU (``operations.saved_bytes``)."""
    return saved_bytes(layer_operations(model, layout), model, layout, statistics=statistics)


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
    per_stage = np.asarray(layers_per_stage, dtype=float) * layer_activation_bytes(model, layout)
    per_stage[0] += embedding_activation_bytes(model, layout)
    per_stage[-1] += output_activation_bytes(model, layout)
    return per_stage


def peak_activation_bytes(timeline: Timeline, schedule: Schedule, stage_bytes: np.ndarray) -> np.ndarray:
    """Most activation bytes each rank holds at once in the simulated step.

    The simulator counts memory in micro-batches through a rank's share (a stage holds 1/v of it, so F on
    stage s adds 1/v); each change, times v, is weighted with stage s's bytes and summed in the rank's order."""
    frame = timeline.frame
    ranks = frame["rank"].to_numpy()
    after = frame["memory_after"].to_numpy()
    change = (after - before_on_rank(after, ranks)) * schedule.num_chunks * stage_bytes[frame["stage"].to_numpy()]
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
    def of(cls, parameters: float, layout: Layout) -> ModelStateBytes:
        """Megatron-LM's bytes per parameter (the module docstring), each ZeRO stage dividing one more by DP."""
        zero, shard = layout.zero, float(layout.data_parallel)
        return cls(
            weights=BYTES_PER_VALUE * parameters / (shard if zero >= 3 else 1.0),
            gradients=layout.gradient_bytes * parameters / (shard if zero >= 2 else 1.0),
            optimizer=OPTIMIZER_BYTES * parameters / (shard if zero >= 1 else 1.0),
        )

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def stage_parameters(model: ModelSpec, layers_per_stage: tuple[int, ...]) -> list[int]:
    """Parameters on each stage: its layers, the embedding on the first, the final norm and output matrix on
    the last. A tied output matrix lives on the first stage; the last stage keeps a copy of it too (Megatron
    all-reduces the two copies' gradients) — counted in ``rank_parameters``, not here."""
    counts = [layers * model.layer_parameters for layers in layers_per_stage]
    counts[0] += model.embedding_parameters
    counts[-1] += model.output_parameters
    return counts


def stage_gpu_parameters(model: ModelSpec, layout: Layout, schedule: Schedule, per_stage: list[int]) -> list[float]:
    """Parameters one GPU holds of each stage (its share over TP), with the tied embedding's copy on the last
    stage when that stage is not on the first stage's rank (Megatron all-reduces the two copies' gradients)."""
    held = [float(count) for count in per_stage]
    if model.tied_embeddings and schedule.rank_of(schedule.num_stages - 1) != schedule.rank_of(0):
        held[-1] += model.vocab_size * model.hidden_size
    return [count / layout.tensor_parallel for count in held]


def rank_parameters(model: ModelSpec, layout: Layout, schedule: Schedule, per_stage: list[int]) -> list[float]:
    """Parameters one GPU of each pipeline rank holds: its stages' shares (``stage_gpu_parameters``)."""
    held = [0.0] * schedule.num_ranks
    for stage, count in enumerate(stage_gpu_parameters(model, layout, schedule, per_stage)):
        held[schedule.rank_of(stage)] += count
    return held
