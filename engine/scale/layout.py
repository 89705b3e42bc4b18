"""How a training job is laid out on GPUs: the parallel degrees, the batch, the schedule, the layer split,
recomputation and optimizer sharding — checked with the arithmetic in every refusal.

GPUs are numbered in Llama 3's order [TP, CP, PP, DP] (Llama 3 paper §3.3.2, Figure 5): tensor-parallel
peers are neighbours (inside a node), then context-parallel peers, then the pipeline ranks, and the
data-parallel replicas outermost.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import PLACEMENTS
from ..limits import (
    MAX_GLOBAL_BATCH,
    MAX_MICROBATCHES,
    MAX_PARALLEL,
    MAX_RANKS,
    MAX_SEQUENCE,
    check_pairs,
    whole_number,
)
from ..model_config import partition
from ..schedules import DEFAULT_CHUNKS, FAMILIES, Family
from .models import ModelSpec

RECOMPUTE_MODES = ("none", "selective", "full")
"""Activation recomputation (Korthikanti et al. 2022 §5): none; selective (the attention core is re-run,
as fused attention kernels do); full (only each layer's input is kept, the whole forward is re-run)."""
ZERO_STAGES = (0, 1, 2, 3)
"""Optimizer-state sharding over DP (Rajbhandari et al. 2020 §5): 0 none, 1 optimizer states (what Megatron-LM's
distributed optimizer shards), 2 and the gradients (FSDP without resharding after the forward, as Llama 3), 3 and
the weights (FSDP's full shard)."""
ZERO_TITLES = {
    0: "0: none",
    1: "1: optimizer states (Megatron's distributed optimizer)",
    2: "2: and gradients (FSDP, weights kept whole)",
    3: "3: and weights (FSDP full shard)",
}
GRADIENT_PRECISIONS = {"fp32": 4, "bf16": 2}
"""Bytes per gradient: Megatron-LM keeps FP32 main gradients by default (and reduces them in FP32, as Llama 3 did,
§3.3.2); BF16 gradients halve both."""
SPLIT_RULES = ("even", "llama3")
"""How layers are split over stages: as even as possible, or Llama 3's first and last stage one fewer
(they also hold the embedding and the output layer: Llama 3 paper §3.3.2). Or an explicit list."""


@dataclass(frozen=True)
class Layout:
    """One training job's parallel layout. Defaults: Llama 3 405B's 8K pre-training (Llama 3 paper, Table 4,
    first row: no activation checkpointing, §3.3.2), with the interleaved schedule at the families' default v = 2
    (the preset ``llama3-405b-as-trained`` takes the v the paper's chunk rule implies)."""

    tensor_parallel: int = 8
    """TP: GPUs that split every layer's matrices (inside a node)."""
    pipeline_parallel: int = 16
    """PP: pipeline ranks, p."""
    data_parallel: int = 64
    """DP: model replicas, each on its share of the batch."""
    context_parallel: int = 1
    """CP: GPUs that split each sequence (Llama 3 used 16 for 128K context, 1 at 8K)."""
    global_batch: int = 2_048
    """Sequences per training step (Llama 3 at 8K: DP 64 × 32 sequences = 16M tokens)."""
    microbatch_size: int = 1
    """Sequences per micro-batch, b."""
    seq_length: int | None = None
    """Tokens per sequence, s; None takes the model's."""
    family: str = "interleaved-1f1b"
    """Schedule family (``engine.schedules.FAMILIES``)."""
    chunks: int | None = None
    """v: model chunks per rank, for the families that take it (None: their default, 2)."""
    split: str | tuple[int, ...] = "llama3"
    """"even", "llama3", or layers per stage (p·v entries, stage order)."""
    recompute: str = "none"
    """"none", "selective" or "full" (see ``RECOMPUTE_MODES``)."""
    zero: int = 2
    """ZeRO stage over DP, 0–3 (Llama 3's FSDP sharded optimizer states and gradients, and kept the weights
    whole between forward and backward: stage 2's memory)."""
    sequence_parallel: bool = True
    """Korthikanti et al. 2022's sequence parallelism with TP: norms and dropouts split along the sequence,
    so activations and pipeline transfers divide by TP."""
    flash_attention: bool = True
    """Fused attention that never writes the s × s scores (Dao et al. 2022); False: Megatron's 2021 attention, the
    scores computed in full, softmax and dropout as separate kernels, the s × s tensors kept."""
    gradient_precision: str = "fp32"
    """"fp32" (Megatron-LM's main gradients, 4 bytes) or "bf16" (2 bytes); see ``GRADIENT_PRECISIONS``."""
    tp_overlap: bool = False
    """TP collectives overlapped with the layer's GEMMs (Transformer Engine's comm-GEMM overlap): only what a
    collective takes beyond its layer's GEMM time shows."""
    dp_overlap: bool = True
    """Each stage's DP gradient reduction starts as soon as its last backward ends (bucketed, as Megatron's
    overlap-grad-reduce and FSDP do), instead of after the rank's last action."""
    p2p_overlap: bool = True
    """Pipeline hand-offs run beside compute (asynchronous sends, as today's Megatron-LM and torch's pipelining
    do): a hand-off only delays the action that needs it. False: each exchange blocks both ranks, as 2021
    Megatron-LM's did (``batch_isend_irecv``, then wait and a device synchronize: megatron/p2p_communication.py),
    so its time is inside the F and I that send (``costs.blocking_exchange``)."""
    num_gpus: int | None = None
    """The GPUs the job has, if stated; then TP × PP × DP × CP must equal it."""
    expert_parallel: int = 1
    """EP: GPUs of one pipeline stage that split an MoE layer's routed experts, E/EP each; it is carved out of
    TP × DP × CP (as Megatron-LM and DeepSeek-V3 do), so it adds no GPUs. Tokens reach their experts by an
    all-to-all (``engine.scale.experts``)."""
    fp8: bool = False
    """FP8 GEMMs for the layers' linear layers (DeepSeek-V3 report §3.3: Fprop, Dgrad and Wgrad in FP8), at the
    GPU's FP8 peak; the embedding, the output head, the router, the norms and attention's core stay in BF16."""

    def __post_init__(self) -> None:
        whole_number("TP", self.tensor_parallel, 1, MAX_PARALLEL)
        whole_number("PP", self.pipeline_parallel, 1, MAX_RANKS)
        whole_number("DP", self.data_parallel, 1, MAX_PARALLEL)
        whole_number("CP", self.context_parallel, 1, MAX_PARALLEL)
        whole_number("global batch", self.global_batch, 1, MAX_GLOBAL_BATCH)
        whole_number("micro-batch size", self.microbatch_size, 1, MAX_GLOBAL_BATCH)
        if self.seq_length is not None:
            whole_number("sequence length", self.seq_length, 1, MAX_SEQUENCE)
        if self.recompute not in RECOMPUTE_MODES:
            raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {self.recompute!r}")
        if self.zero not in ZERO_STAGES or isinstance(self.zero, bool):
            raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {self.zero!r}")
        if self.gradient_precision not in GRADIENT_PRECISIONS:
            raise ValueError(f"gradient precision must be fp32 or bf16, got {self.gradient_precision!r}")
        if isinstance(self.split, str):
            if self.split not in SPLIT_RULES:
                raise ValueError(f"split must be even, llama3 or layers per stage like 4,5,5,4; got {self.split!r}")
        elif not all(isinstance(count, int) and not isinstance(count, bool) for count in self.split):
            raise ValueError(f"split lists whole numbers of layers per stage, got {self.split!r}")
        family = self.family_spec
        if self.chunks is not None:
            whole_number("chunks", self.chunks, 1, 64)
            if not family.takes_chunks and self.chunks != family.fixed_chunks:
                raise ValueError(
                    f"{self.family} always has {family.fixed_chunks} chunk(s) per rank, so it takes no chunks "
                    f"(got {self.chunks})"
                )
        tp, pp, dp, cp = self.tensor_parallel, self.pipeline_parallel, self.data_parallel, self.context_parallel
        if self.num_gpus is not None and self.num_gpus != self.gpus_used:
            raise ValueError(
                f"TP × PP × DP × CP = {tp} × {pp} × {dp} × {cp} = {self.gpus_used:,} GPUs, "
                f"not the {self.num_gpus:,} given"
            )
        per_step = dp * self.microbatch_size
        if self.global_batch % per_step:
            raise ValueError(
                f"global batch {self.global_batch:,} is not divisible by DP × micro-batch size = {dp} × "
                f"{self.microbatch_size} = {per_step:,}: {self.global_batch:,} = {self.global_batch // per_step:,} × "
                f"{per_step:,} + {self.global_batch % per_step:,}"
            )
        whole_number(
            f"micro-batches m = global batch / (DP × micro-batch size) = {self.global_batch:,} / {per_step:,}",
            self.num_microbatches,
            1,
            MAX_MICROBATCHES,
        )
        check_pairs(pp, self.num_microbatches, self.num_chunks, who="one pipeline")
        whole_number("EP", self.expert_parallel, 1, MAX_PARALLEL)
        per_stage = tp * dp * cp
        if per_stage % self.expert_parallel:
            raise ValueError(
                f"EP ({self.expert_parallel}) must divide the GPUs of one pipeline stage, TP × DP × CP = {tp} × {dp} "
                f"× {cp} = {per_stage:,}: {per_stage:,} = {per_stage // self.expert_parallel:,}×{self.expert_parallel}"
                f" + {per_stage % self.expert_parallel}"
            )

    # -- derived sizes ---------------------------------------------------------------------------------------
    @property
    def family_spec(self) -> Family:
        family = FAMILIES.get(self.family)
        if family is None:
            raise ValueError(f"unknown schedule {self.family!r}; choose one of: {', '.join(FAMILIES)}")
        return family

    @property
    def gradient_bytes(self) -> int:
        """Bytes per gradient value (``GRADIENT_PRECISIONS``)."""
        return GRADIENT_PRECISIONS[self.gradient_precision]

    @property
    def gpus_used(self) -> int:
        """TP × PP × DP × CP."""
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel * self.context_parallel

    @property
    def num_microbatches(self) -> int:
        """m = global batch / (DP × micro-batch size)."""
        return self.global_batch // (self.data_parallel * self.microbatch_size)

    @property
    def num_chunks(self) -> int:
        """v: the family's fixed chunks, or the chosen (default 2) for the families that take them."""
        family = self.family_spec
        if family.takes_chunks:
            return DEFAULT_CHUNKS if self.chunks is None else self.chunks
        assert family.fixed_chunks is not None
        return family.fixed_chunks

    @property
    def num_stages(self) -> int:
        """p·v model stages."""
        return self.pipeline_parallel * self.num_chunks

    def sequence(self, model: ModelSpec) -> int:
        """s: this layout's sequence length, or the model's."""
        return model.seq_length if self.seq_length is None else self.seq_length

    def sequence_per_gpu(self, model: ModelSpec) -> int:
        """Tokens of each sequence one GPU holds: s / CP."""
        return self.sequence(model) // self.context_parallel

    # -- against a model -----------------------------------------------------------------------------------------
    def check(self, model: ModelSpec) -> None:
        """ValueError, with the arithmetic, when this layout cannot hold ``model``."""
        tp, cp = self.tensor_parallel, self.context_parallel
        heads, kv, f = model.num_attention_heads, model.num_kv_heads, model.ffn_hidden_size
        if heads % tp:
            raise ValueError(
                f"TP ({tp}) must divide the attention heads ({heads}): {heads} = {heads // tp}×{tp} + {heads % tp}"
            )
        if kv % tp and tp % kv:
            raise ValueError(
                f"TP ({tp}) must divide the key/value heads ({kv}) or be a multiple of them (each then replicated): "
                f"{kv} = {kv // tp}×{tp} + {kv % tp}"
            )
        if f % tp:
            raise ValueError(f"TP ({tp}) must divide the FFN size ({f}): {f} = {f // tp}×{tp} + {f % tp}")
        s = self.sequence(model)
        if s % cp:
            raise ValueError(f"CP ({cp}) must divide the sequence length ({s}): {s} = {s // cp}×{cp} + {s % cp}")
        ep, experts = self.expert_parallel, model.experts
        if ep > 1 and not experts:
            raise ValueError(f"EP ({ep}) needs a mixture-of-experts model; {model.title} has no routed experts")
        if experts and experts % ep:
            raise ValueError(
                f"EP ({ep}) must divide the routed experts ({experts}): "
                f"{experts} = {experts // ep}×{ep} + {experts % ep}"
            )
        self.layers_per_stage(model)

    @property
    def copies(self) -> int:
        """Copies of the model the schedule's stages make: 2 for DualPipe (``engine.ir``'s "dual" placement)."""
        return PLACEMENTS[self.family_spec.placement].copies

    def layers_per_block(self, model: ModelSpec) -> tuple[int, ...]:
        """Transformer layers on each part of the model a stage runs: p·v/copies parts (DualPipe: p parts, each
        run by two stages, one per copy)."""
        return self.layers_per_stage(model)[: self.num_stages // self.copies]

    def layers_per_stage(self, model: ModelSpec) -> tuple[int, ...]:
        """Transformer layers on each of the p·v stages (stage 0 also holds the embedding, the last stage the
        output layer and the loss). Refuses fewer layers than stages, with the arithmetic."""
        rule = (
            {"even": "balanced", "llama3": "llama3"}.get(self.split, self.split)
            if isinstance(self.split, str)
            else self.split
        )
        blocks = self.num_stages // self.copies
        try:
            return tuple(partition(model.num_layers, blocks, rule)) * self.copies
        except ValueError as error:
            stages = f"{self.pipeline_parallel} ranks × {self.num_chunks} chunk(s) = {self.num_stages} stages"
            raise ValueError(f"{model.title} on {stages}: {error}") from None
