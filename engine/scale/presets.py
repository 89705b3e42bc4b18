"""Whole layouts as published: the seed's own configurations, to check the plan against the papers."""

from __future__ import annotations

from dataclasses import dataclass, field

from .hardware import DEFAULT_EFFICIENCY
from .layout import Layout


@dataclass(frozen=True)
class LayoutPreset:
    """A model on a GPU with a layout, as a paper reports it, and what the paper measured."""

    name: str
    """Registry key, e.g. "llama3-405b-as-trained"."""
    title: str
    """How the page names it."""
    model: str
    """A key of ``MODEL_PRESETS``."""
    gpu: str
    """A key of ``GPU_PRESETS``."""
    layout: Layout
    """The parallel layout."""
    efficiency: float
    """Share of peak the layers' kernels reach."""
    source: str
    """Where the layout comes from."""
    notes: tuple[str, ...] = ()
    """Choices the paper leaves open, and how they were made here."""
    reported: dict[str, float] = field(default_factory=dict, hash=False)
    """What the paper measured, to show next to the plan (keys name the quantity and its unit)."""


LAYOUT_PRESETS: dict[str, LayoutPreset] = {
    preset.name: preset
    for preset in (
        LayoutPreset(
            "llama3-405b-as-trained",
            "Llama 3 405B as trained (8K pre-training, 8,192 H100s)",
            model="llama3-405b",
            gpu="h100",
            layout=Layout(
                tensor_parallel=8,
                pipeline_parallel=16,
                data_parallel=64,
                context_parallel=1,
                global_batch=2_048,
                microbatch_size=1,
                family="interleaved-1f1b",
                chunks=2,
                split="llama3",
                recompute="selective",
                zero=2,
                num_gpus=8_192,
            ),
            efficiency=DEFAULT_EFFICIENCY,
            source="Llama 3 paper, Table 4, first row: 8,192 GPUs, TP 8, CP 1, PP 16, DP 64, sequence 8,192, "
            "32 sequences per DP group (global batch 2,048 = 16M tokens); §3.3.2: interleaved schedule, one "
            "layer fewer on the first and last stage, FSDP sharding optimizer states and gradients",
            notes=(
                "The paper does not state V (stages per rank); v = 2 is the least interleaving, and with it "
                "126 + 2 = 128 = 32 stages × 4 layers, so every stage holds 4 layers and the first and last 3.",
                "Trained at 8K without activation checkpointing but with fused attention, which never stores "
                "the s × s scores: Korthikanti et al.'s selective row (34sbh/t) counts exactly that.",
                "The micro-batch size is not stated; 1 sequence of 8,192 tokens is assumed.",
                "Table 4's other rows load by changing DP, the batch, CP and the sequence: 16,384 GPUs with DP 128 "
                "and 16 sequences per DP group; 128K context with CP 16, where the table's DP 4 multiplies to "
                "8 × 16 × 16 × 4 = 8,192 GPUs and 8M tokens, not its 16,384 and 16M (DP 8 gives both).",
            ),
            reported={"tflops_per_gpu": 430.0, "mfu": 0.43, "tokens_per_step": 16_777_216.0},
        ),
        LayoutPreset(
            "megatron-1t",
            "Megatron 1T (Narayanan et al. 2021, Table 1, 3,072 A100s)",
            model="megatron-1t",
            gpu="a100",
            layout=Layout(
                tensor_parallel=8,
                pipeline_parallel=64,
                data_parallel=6,
                context_parallel=1,
                global_batch=3_072,
                microbatch_size=1,
                family="interleaved-1f1b",
                chunks=2,
                split="even",
                recompute="full",
                zero=0,
                num_gpus=3_072,
            ),
            efficiency=0.52,
            source="Narayanan et al. 2021, Table 1, last row: 1008.0B parameters, TP 8, PP 64, 3,072 A100 GPUs, "
            "batch 3,072, s = 2,048, V = 51,200; 163 teraFLOP/s per GPU, 52 % of peak, 502.0 petaFLOP/s "
            "aggregate; §5.1: interleaved schedule with the scatter/gather optimization, activation "
            "recomputation (Eq. 3 counts it)",
            notes=(
                "DP = 3,072 / (8 × 64) = 6, so m = 3,072 / (6 × 1) = 512 micro-batches of 1 sequence (the "
                "micro-batch size of the paper's PTD runs, Table 2).",
                "v is not stated; v = 2 puts one of the 128 layers on each of the 128 stages.",
                "The scatter/gather optimization (§4.1) sends bsh/t bytes per hop, as sequence parallelism does; "
                "with full recomputation every layer stores 2sbh either way.",
                "52 % is the paper's end-to-end figure (bubble and communication included); used here as the "
                "kernels' efficiency, the simulated step adds the bubble and the transfers on top.",
            ),
            reported={"tflops_per_gpu": 163.0, "share_of_peak": 0.52, "aggregate_pflops": 502.0},
        ),
    )
}
"""The published layouts, by key."""


def layout_preset_named(name: str) -> LayoutPreset:
    """A layout preset by key; ValueError listing the keys for an unknown one."""
    try:
        return LAYOUT_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown layout preset {name!r}; choose one of: {', '.join(LAYOUT_PRESETS)}") from None
