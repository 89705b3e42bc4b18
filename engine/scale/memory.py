"""Bytes on one GPU: weights, gradients and optimizer states (with ZeRO), and activations (Korthikanti et al.
2022) times the micro-batches the simulated schedule keeps in flight.

Legend as in ``models``; t = TP, c = CP, sₗ = s/c the tokens of a sequence on one GPU.

Model states (Rajbhandari et al. 2020, "ZeRO", §3.1): mixed-precision Adam keeps, per parameter Ψ, BF16
weights (2Ψ), BF16 gradients (2Ψ) and FP32 master weights, momentum and variance (KΨ, K = 12): 16Ψ bytes.
ZeRO over N_d = DP replicas (§5): stage 1 divides the optimizer states by N_d (4Ψ + 12Ψ/N_d), stage 2 also
the gradients (2Ψ + 14Ψ/N_d), stage 3 also the weights (16Ψ/N_d). Ψ here is what one GPU holds: its
stages' parameters divided by TP.

Activations per transformer layer and micro-batch, bytes (Korthikanti et al. 2022, Table 2), written with
sₗ for s and the attention scores' s² as sₗ·s (each GPU's queries against every key):

    none,      TP + sequence parallel    sₗbh·34/t + 5·a·sₗ·s·b/t
    none,      TP only                   sₗbh·(10 + 24/t) + 5·a·sₗ·s·b/t
    selective, TP + sequence parallel    sₗbh·34/t
    selective, TP only                   sₗbh·(10 + 24/t)
    full                                 2·sₗbh   (only the layer's input; the table does not divide it by t)

With t = c = 1 the first row is Eq. 1, sbh(34 + 5as/h). The table is derived for a GPT-3 layer (GeLU MLP of
4h, multi-head attention, dropout); for Llama 3's SwiGLU and grouped-query attention it is an estimate.
Outside the layers (§4.3): the embedding's dropout mask sₗbh/t on the first stage; the final norm's and the
output projection's inputs, 4·sₗbh/t, and the FP32 logits, 4·sₗ·b·V/t, on the last (without sequence
parallelism the two inputs are not divided by t).

The schedule decides how many micro-batches each stage holds at once: the simulator's memory model (F adds a
stage's activations, I frees all but what W still needs, W or B frees the rest) is read from the simulated
timeline and weighted with each stage's bytes. Not counted: the layer being recomputed, communication and
temporary buffers, fragmentation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..ir import Schedule
from ..timeline import Timeline, before_on_rank
from .costs import BYTES_PER_VALUE
from .layout import Layout
from .models import ModelSpec

ADAM_OPTIMIZER_BYTES = 12
"""K: FP32 master weights, momentum and variance (Rajbhandari et al. 2020 §3.1)."""


# -- activations ------------------------------------------------------------------------------------------------
def layer_activation_bytes(model: ModelSpec, layout: Layout) -> float:
    """One transformer layer's stored activations for one micro-batch on one GPU (Korthikanti et al. 2022,
    Table 2; see the module docstring)."""
    t, b, h = layout.tensor_parallel, layout.microbatch_size, model.hidden_size
    s, local = layout.sequence(model), layout.sequence_per_gpu(model)
    sbh = local * b * h
    if layout.recompute == "full":
        return 2.0 * sbh
    linear = sbh * 34 / t if layout.sequence_parallel else sbh * (10 + 24 / t)
    scores = 5.0 * model.num_attention_heads * local * s * b / t
    return linear + (scores if layout.recompute == "none" else 0.0)


def embedding_activation_bytes(model: ModelSpec, layout: Layout) -> float:
    """The first stage's extra per micro-batch: the embedding dropout mask, sₗbh/t (§4.3)."""
    sbh = layout.sequence_per_gpu(model) * layout.microbatch_size * model.hidden_size
    return sbh / layout.tensor_parallel if layout.sequence_parallel else float(sbh)


def output_activation_bytes(model: ModelSpec, layout: Layout) -> float:
    """The last stage's extra per micro-batch: final norm and projection inputs 4·sₗbh/t, FP32 logits
    4·sₗ·b·V/t (§4.3)."""
    t, local, b = layout.tensor_parallel, layout.sequence_per_gpu(model), layout.microbatch_size
    inputs = 4.0 * local * b * model.hidden_size
    logits = 4.0 * local * b * model.vocab_size / t
    return (inputs / t if layout.sequence_parallel else inputs) + logits


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
    def of(cls, parameters: float, zero: int, data_parallel: int) -> ModelStateBytes:
        """Rajbhandari et al. 2020 §5: each ZeRO stage divides one more of the three by N_d = DP."""
        shard = float(data_parallel)
        return cls(
            weights=BYTES_PER_VALUE * parameters / (shard if zero >= 3 else 1.0),
            gradients=BYTES_PER_VALUE * parameters / (shard if zero >= 2 else 1.0),
            optimizer=ADAM_OPTIMIZER_BYTES * parameters / (shard if zero >= 1 else 1.0),
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


def rank_parameters(model: ModelSpec, layout: Layout, schedule: Schedule, per_stage: list[int]) -> list[float]:
    """Parameters one GPU of each pipeline rank holds: its stages' parameters divided by TP, plus the tied
    embedding's copy on the rank with the last stage when that is not also the first stage's rank."""
    held = [0.0] * schedule.num_ranks
    for stage, count in enumerate(per_stage):
        held[schedule.rank_of(stage)] += count
    last_rank = schedule.rank_of(schedule.num_stages - 1)
    if model.tied_embeddings and last_rank != schedule.rank_of(0):
        held[last_rank] += model.vocab_size * model.hidden_size
    return [count / layout.tensor_parallel for count in held]
