"""Whole layouts as published, with what each paper measured: the runs the planner is checked against.

Every value of a preset says where it comes from (``Provenance``): the paper, or the lab — and then why. Two
papers, each with several runs on one GPU: Narayanan et al. 2021 (Megatron-LM, Table 1, A100s) and the Llama 3
paper (Table 4, H100s). Each GPU's one calibrated number comes from one run (``CALIBRATION_RUNS``); the other
runs of the same paper are predictions (``benchmarks/scale.py`` prints them side by side).
"""

from __future__ import annotations

from .layout import Layout
from .model_presets import NARAYANAN_TABLE_1_MODELS
from .moe_presets import moe_presets
from .preset_records import LAB, PAPER, LayoutPreset, Provenance

__all__ = ["LAB", "PAPER", "LayoutPreset", "Provenance", "LAYOUT_PRESETS", "CALIBRATION_RUNS", "layout_preset_named"]

# -- Narayanan et al. 2021, Table 1 (A100 80 GB, Selene) --------------------------------------------------------
NARAYANAN = "Narayanan et al. 2021"
TABLE_1_SCRIPT = "NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (the script the paper's artifact gives for Table 1)"
NARAYANAN_RUNS = (  # key, GPUs, TP, PP, batch, TFLOP/s per GPU, micro-batch size, v (from the script)
    ("1.7b", 32, 1, 1, 512, 137.0, 16, 1),
    ("3.6b", 64, 2, 1, 512, 138.0, 16, 1),
    ("7.5b", 128, 4, 1, 512, 142.0, 16, 1),
    ("18b", 256, 8, 1, 1024, 135.0, 8, 1),
    ("39b", 512, 8, 2, 1536, 138.0, 4, 1),
    ("76b", 1024, 8, 4, 1792, 140.0, 2, 3),
    ("145b", 1536, 8, 8, 2304, 148.0, 2, 2),
    ("310b", 1920, 8, 16, 2160, 155.0, 1, 2),
    ("530b", 2520, 8, 35, 2520, 163.0, 1, 3),
    ("1t", 3072, 8, 64, 3072, 163.0, 1, 1),
)


def _narayanan(key: str, gpus: int, tp: int, pp: int, batch: int, tflops: float, mbs: int, v: int) -> LayoutPreset:
    dp = gpus // (tp * pp)
    interleaved = v > 1
    size = next(published for name, published, *_ in NARAYANAN_TABLE_1_MODELS if name == key)
    table = Provenance(PAPER, "Table 1")
    script = Provenance(LAB, f"not in the paper; from {TABLE_1_SCRIPT}")
    return LayoutPreset(
        name=f"megatron-{key}",
        title=f"Megatron GPT {size:g}B ({NARAYANAN}, Table 1, {gpus:,} A100s)",
        model=f"megatron-{key}",
        gpu="a100",
        layout=Layout(
            tensor_parallel=tp,
            pipeline_parallel=pp,
            data_parallel=dp,
            global_batch=batch,
            microbatch_size=mbs,
            family="interleaved-1f1b" if interleaved else "1f1b",
            chunks=v if interleaved else None,
            split="even",
            recompute="full",
            zero=0,
            sequence_parallel=False,
            flash_attention=False,
            gradient_precision="bf16",
            dp_overlap=False,
            p2p_overlap=False,
            num_gpus=gpus,
        ),
        source=f"{NARAYANAN}, Table 1: {size:g}B parameters, TP {tp}, PP {pp}, {gpus:,} GPUs, batch {batch:,}, "
        f"{tflops:g} TFLOP/s per GPU (Eq. 3's FLOPs, recomputation counted)",
        reported_tflops_per_gpu=tflops,
        counts_recomputation=True,
        provenance={
            "model": table,
            "gpu": Provenance(PAPER, "§5: 80-GB A100s, 8 per node over NVLink, 8 × 200 Gb/s HDR InfiniBand"),
            "tp": table,
            "pp": table,
            "dp": Provenance(PAPER, f"Table 1: {gpus:,} GPUs / (TP {tp} × PP {pp})"),
            "global_batch": table,
            "seq": Provenance(PAPER, "§5.1: s = 2048 for all models"),
            "microbatch_size": script,
            "family": Provenance(
                LAB if not interleaved else PAPER,
                "§5.1: the interleaved schedule"
                if interleaved
                else f"the script interleaves no stage of this run ({TABLE_1_SCRIPT})",
            ),
            "chunks": script,
            "split": Provenance(LAB, "even: every stage the same layers (Megatron's default)"),
            "recompute": Provenance(PAPER, "Eq. 3 assumes activation recomputation; the script passes "
                                    "--activations-checkpoint-method uniform (every layer)"),
            "zero": Provenance(LAB, "2021 Megatron-LM had no distributed optimizer"),
            "sequence_parallel": Provenance(LAB, "not yet in Megatron-LM in 2021 (Korthikanti et al. 2022)"),
            "flash_attention": Provenance(LAB, "2021: Megatron's fused scale-mask-softmax, before flash attention"),
            "gradient_precision": Provenance(LAB, "the script trains in fp16 with 16-bit gradients (--fp16)"),
            "dp_overlap": Provenance(
                LAB,
                "the script's DDP=local (Megatron-LM's own) all-reduces after the backward"
                if pp > 1
                else "the script's DDP=torch (PyTorch's) overlaps bucketed all-reduces with the backward; the lab "
                "overlaps whole stages, so with one stage the reduction still follows the backward",
            ),
            "p2p_overlap": Provenance(
                LAB,
                "2021 Megatron-LM waited for each exchange (batch_isend_irecv, wait, device synchronize: "
                "megatron/p2p_communication.py), split over the TP group's NICs (scatter/gather, §4.1)",
            ),
        },
    )  # fmt: skip


# -- The Llama 3 paper, Table 4 (H100 80 GB) ---------------------------------------------------------------------
LLAMA3 = "Llama Team 2024, 'The Llama 3 Herd of Models'"
LLAMA3_SLOTS_RULE = (
    "§3.3.2: 'the first model chunk on the first stage has only the embedding': a chunk is one layer slot, so "
    "v = (126 layers + the embedding + the output) / 16 ranks = 128 / 16 = 8"
)


LLAMA3_FLOPS_NOTE = (
    "The paper does not say how it counts attention's FLOPs. The lab counts the causal half of the s × s square "
    "(the work a causal kernel does), so the 8K and 128K rows are counted alike; the panel above says how much "
    "larger counting the whole square would make this run's figure."
)
LLAMA3_MEMORY_NOTE = (
    "Memory: the lab counts what a Megatron-LM layer with Transformer Engine keeps for its backward, checked against "
    "torch's own saved tensors (tests/engine/runtime/test_saved_tensors.py). Meta's training stack is not public: "
    "which tensors "
    "its layers keep, and in what precision, is the one assumption the lab cannot know; where the plan does not fit, "
    "its shortfall line says by how much each layer would have to keep less."
)
LLAMA3_ROW_3_NOTE = (
    "Table 4's third row prints DP 4, but 16,384 GPUs / (TP 8 × CP 16 × PP 16) = 8, and only DP 8 gives its 16M "
    "tokens per batch (8 × 16 sequences × 131,072 tokens); the lab takes DP 8."
)


def _llama3(name: str, title: str, gpus: int, cp: int, dp: int, seq: int, per_dp: int, tflops: float, table_row: str):
    pp, tp = 16, 8
    row = Provenance(PAPER, f"Table 4, {table_row}")
    return LayoutPreset(
        name=name,
        title=title,
        model="llama3-405b",
        gpu="h100",
        layout=Layout(
            tensor_parallel=tp,
            pipeline_parallel=pp,
            data_parallel=dp,
            context_parallel=cp,
            global_batch=dp * per_dp,
            microbatch_size=1,
            seq_length=seq,
            family="interleaved-1f1b",
            chunks=(126 + 2) // pp,
            split="llama3",
            recompute="none",
            zero=2,
            num_gpus=gpus,
        ),
        source=f"{LLAMA3}, Table 4, {table_row}: {gpus:,} GPUs, TP {tp}, CP {cp}, PP {pp}, sequence {seq:,}, "
        f"{per_dp} sequences per DP group, {tflops:g} TFLOP/s per GPU (model FLOPs: BF16 MFU)",
        reported_tflops_per_gpu=tflops,
        counts_recomputation=False,
        attention_counted=0.5,
        provenance={
            "model": Provenance(PAPER, "Table 3"),
            "gpu": Provenance(PAPER, "§3.3.1: H100 80 GB, 8 per server over NVLink, 400 Gbps per GPU"),
            **dict.fromkeys(("tp", "pp", "cp", "seq"), row),
            "dp": row if dp * tp * pp * cp == gpus else Provenance(LAB, "see the notes"),
            "global_batch": Provenance(PAPER, f"Table 4: DP {dp} × {per_dp} sequences per DP group"),
            "microbatch_size": Provenance(LAB, "not stated; 1 sequence (the batch per DP group is the micro-batches)"),
            "family": Provenance(PAPER, "§3.3.2: an interleaved schedule (Narayanan et al. 2021)"),
            "chunks": Provenance(PAPER, LLAMA3_SLOTS_RULE),
            "split": Provenance(PAPER, "§3.3.2: one layer fewer on the first and the last stage"),
            "recompute": Provenance(PAPER, "§3.3.2: 'we could pre-train Llama 3 on sequences of 8K tokens without "
                                    "activation checkpointing'"),
            "zero": Provenance(PAPER, "§3.3.2: FSDP 'shards optimizer states and gradients, but for model shards we "
                               "do not reshard after forward computation' (ZeRO-2)"),
            "gradient_precision": Provenance(PAPER, "§3.3.2: 'FP32 gradient accumulation ... reduce-scatter "
                                             "gradients in FP32'"),
            "sequence_parallel": Provenance(LAB, "not stated; Megatron-style TP splits norms along the sequence"),
            "flash_attention": Provenance(LAB, "not stated; no 2024 run at 8K keeps the s × s scores"),
            "dp_overlap": Provenance(LAB, "FSDP overlaps its reduce-scatter with the backward"),
            "p2p_overlap": Provenance(LAB, "not stated; asynchronous sends, as torch's pipelining does"),
        },
        notes=(LLAMA3_FLOPS_NOTE, LLAMA3_MEMORY_NOTE, *((LLAMA3_ROW_3_NOTE,) if cp > 1 else ())),
    )  # fmt: skip


LAYOUT_PRESETS: dict[str, LayoutPreset] = {
    preset.name: preset
    for preset in (
        _llama3("llama3-405b-as-trained", "Llama 3 405B as trained (8K pre-training, 8,192 H100s)",
                8_192, 1, 64, 8_192, 32, 430.0, "first row"),
        _llama3("llama3-405b-16k-gpus", "Llama 3 405B on 16,384 H100s (8K)",
                16_384, 1, 128, 8_192, 16, 400.0, "second row"),
        _llama3("llama3-405b-128k", "Llama 3 405B at 128K context (CP 16, 16,384 H100s)",
                16_384, 16, 8, 131_072, 16, 380.0, "third row (DP 8: see the notes)"),
        *(_narayanan(*row) for row in NARAYANAN_RUNS),
        *moe_presets(),
    )
}  # fmt: skip
"""The published layouts, by key."""

CALIBRATION_RUNS = {"a100": "megatron-1t", "h100": "llama3-405b-as-trained"}
"""The one published run each GPU's ``gemm_share`` is set from: the largest run of each paper (chosen before any
comparison was made: the run that exercises pipeline, TP and DP together at the paper's headline size)."""


def layout_preset_named(name: str) -> LayoutPreset:
    """A layout preset by key; ValueError listing the keys for an unknown one."""
    try:
        return LAYOUT_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown layout preset {name!r}; choose one of: {', '.join(LAYOUT_PRESETS)}") from None
