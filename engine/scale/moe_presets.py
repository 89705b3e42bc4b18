"""The published mixture-of-experts runs, each value from its source or the lab's choice and why.

* DeepSeek-V3 as trained (DeepSeek-AI, "DeepSeek-V3 Technical Report", 2024): 2,048 H800s; its cost, 180K H800
  GPU-hours per trillion tokens (§1, Table 1), is 10¹² / (180,000 × 3,600 s) = 1,543 tokens/s a GPU.
* NVIDIA's Megatron-Bridge performance tables (docs/performance-summary.md, 25.11 NeMo container, and
  docs/performance-summary-archive.md, 26.04.01): DeepSeek-V3 on 256 B200s, Qwen3 235B-A22B on 256 H100s and Qwen3
  30B-A3B on 16 H100s, tokens/s per GPU as published (experts force-balanced, dropless).
"""

from __future__ import annotations

from .layout import Layout
from .preset_records import LAB, PAPER, LayoutPreset, Provenance

DEEPSEEK = "DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report'"
GPU_HOURS_PER_TRILLION = 180_000
"""§1 and Table 1: 180K H800 GPU-hours per trillion training tokens."""
DEEPSEEK_TOKENS_PER_GPU = 1e12 / (GPU_HOURS_PER_TRILLION * 3_600)
BRIDGE = "NVIDIA Megatron-Bridge's performance table"
MEGATRON_16_STAGES = (4,) * 15 + (1,)
"""DeepSeek-V3's 61 layers on 16 stages as Megatron-Bridge lays them out (recipes/deepseek/h100/deepseek_v3.py,
``_get_deepseek_v3_pipeline_layout`` for (16, 1)): the embedding and 4 layers, 14 × 4 layers, then 1 layer with the
MTP module and the loss — the last stage's two output heads and MTP layer take the place of three layers."""
MEGATRON_16_STAGES_WHY = (
    "Megatron-Bridge's layout of DeepSeek-V3 on 16 stages: 4 layers each, the last stage 1 layer beside the MTP "
    "module and the two output heads"
)


def moe_presets() -> tuple[LayoutPreset, ...]:
    """The MoE layout presets (``presets`` adds them to ``LAYOUT_PRESETS``)."""
    return (_deepseek_v3(), *_bridge_rows())


def _deepseek_v3() -> LayoutPreset:
    """DeepSeek-V3 as its report describes the run."""
    return LayoutPreset(
        name="deepseek-v3",
        title="DeepSeek-V3 as trained (2,048 H800s, DualPipe, EP 64)",
        model="deepseek-v3",
        gpu="h800",
        layout=Layout(
            tensor_parallel=1, pipeline_parallel=16, data_parallel=128, expert_parallel=64,
            global_batch=15_360, microbatch_size=1, seq_length=4_096, family="dualpipe", split=MEGATRON_16_STAGES,
            recompute="selective", zero=1, sequence_parallel=False, fp8=True, num_gpus=2_048,
        ),  # fmt: skip
        source=f"{DEEPSEEK}, §3.1-§3.3 and §4.2: 2,048 H800s, PP 16, EP 64 over 8 nodes, ZeRO-1, DualPipe, FP8, "
        f"4K sequences, batch 15,360; 180K GPU-hours per trillion tokens = {DEEPSEEK_TOKENS_PER_GPU:,.0f} "
        "tokens/s per GPU",
        reported_tflops_per_gpu=0.0,
        reported_tokens_per_gpu=DEEPSEEK_TOKENS_PER_GPU,
        counts_recomputation=False,
        attention_counted=0.5,
        provenance={
            "model": Provenance(PAPER, "§2 and the released config_671B.json"),
            "gpu": Provenance(PAPER, "§3.1: 2,048 H800s, 8 a node, NVLink inside, InfiniBand between"),
            "tp": Provenance(PAPER, "§3.2: 'without costly tensor parallelism'"),
            "pp": Provenance(PAPER, "§3.2: 16-way pipeline parallelism"),
            "ep": Provenance(PAPER, "§3.2: 64-way expert parallelism spanning 8 nodes"),
            "dp": Provenance(PAPER, "§3.2: 2,048 GPUs / PP 16 = 128 (EP lies inside it, ZeRO-1 over it)"),
            "zero": Provenance(PAPER, "§3.2: ZeRO-1 data parallelism"),
            "family": Provenance(PAPER, "§3.2.1: DualPipe"),
            "seq": Provenance(PAPER, "§4.2: maximum sequence length 4K"),
            "global_batch": Provenance(PAPER, "§4.2: the batch grows from 3,072 to 15,360 in the first 469B "
                                       "tokens, then stays at 15,360 (the lab takes 15,360)"),
            "microbatch_size": Provenance(LAB, "not stated; one 4K sequence per micro-batch"),
            "split": Provenance(LAB, f"not stated; {MEGATRON_16_STAGES_WHY}"),
            "recompute": Provenance(PAPER, "§3.2.3: the RMSNorms and MLA's up-projections recomputed (§3.3.2: "
                                    "and the MoE SwiGLU's output), what the lab's selective does for MLA"),
            "fp8": Provenance(PAPER, "§3.3: FP8 mixed precision for the linear layers' GEMMs"),
            "sequence_parallel": Provenance(LAB, "no TP, so nothing to split"),
            "gradient_precision": Provenance(PAPER, "§3.3.2: gradients kept in FP32 for batch accumulation"),
            "flash_attention": Provenance(LAB, "not stated; a fused attention kernel that never writes the "
                                          "s × s scores"),
            "dp_overlap": Provenance(LAB, "not stated; each stage's gradients leave when its backward ends"),
            "p2p_overlap": Provenance(PAPER, "§3.2.1: DualPipe overlaps the pipeline's communication"),
        },
        notes=(
            "Compared on tokens per second per GPU: the report gives its cost in GPU-hours per trillion "
            "tokens, not FLOP/s. The all-to-all runs at DeepEP's measured bandwidth at EP 64 on H800s.",
            "Not modelled: expert load imbalance, the 3,072-sequence batches of the first 469B tokens, BF16 "
            "AdamW moments (the lab keeps 12 bytes of optimizer state a parameter).",
        ),
    )  # fmt: skip


def _bridge_rows() -> tuple[LayoutPreset, ...]:
    """NVIDIA's published MoE rows the lab's GPUs can plan."""
    return (
        _bridge("deepseek-v3-b200", "DeepSeek-V3 on 256 B200s (Megatron-Bridge, MXFP8)", "deepseek-v3", "b200",
                Layout(tensor_parallel=1, pipeline_parallel=16, data_parallel=16, expert_parallel=8,
                       global_batch=2_048, microbatch_size=1, seq_length=4_096, family="1f1b",
                       split=MEGATRON_16_STAGES, recompute="selective", zero=1, sequence_parallel=False, fp8=True,
                       num_gpus=256),
                tokens=2_139, tflops=557, row="docs/performance-summary.md, 25.11: DGX-B200, DeepSeekV3, FP8-MX, 256 "
                "GPUs, GBS 2048, MBS 1, 4096, TP 1, PP 16, VP 1, EP 8",
                recompute="the recipe's recompute_modules ['mla_up_proj'] (perf_recipes/deepseek/b200): selective",
                split=MEGATRON_16_STAGES_WHY),
        _bridge("qwen3-235b-a22b-h100", "Qwen3 235B-A22B on 256 H100s (Megatron-Bridge, FP8)", "qwen3-235b-a22b",
                "h100",
                Layout(tensor_parallel=2, pipeline_parallel=8, data_parallel=16, expert_parallel=32,
                       global_batch=8_192, microbatch_size=1, seq_length=4_096, family="interleaved-1f1b", chunks=4,
                       split="even", zero=1, sequence_parallel=True, fp8=True, num_gpus=256),
                tokens=1_712, tflops=253, row="docs/performance-summary-archive.md, 26.04.01: DGX-H100, "
                "Qwen3_235B_a22B, FP8, 256 GPUs, GBS 8192, MBS 1, 4096, TP 2, PP 8, VP 4, EP 32",
                recompute="the recipe's recompute_granularity None (perf_recipes/qwen/h100/qwen3_moe.py)",
                split="not stated; even",
                notes=("The recipe overlaps the all-to-all with the other micro-batch's compute "
                       "(overlap_moe_expert_parallel_comm, moe_a2a_overlap) over NCCL's all-to-all; the lab's "
                       "interleaved 1F1B pairs no forward with a backward, so it leaves the all-to-all exposed, at "
                       "DeepEP's measured bandwidth.",)),
        _bridge("qwen3-30b-a3b-h100", "Qwen3 30B-A3B on 16 H100s (Megatron-Bridge, FP8)", "qwen3-30b-a3b", "h100",
                Layout(tensor_parallel=1, pipeline_parallel=2, data_parallel=8, expert_parallel=8,
                       global_batch=512, microbatch_size=2, seq_length=4_096, family="interleaved-1f1b", chunks=24,
                       split="even", zero=1, sequence_parallel=False, fp8=True, num_gpus=16),
                tokens=5_275, tflops=121, row="docs/performance-summary.md, 25.11: DGX-H100, Qwen3_30B_a3B, FP8-CS, "
                "16 GPUs, GBS 512, MBS 2, 4096, TP 1, PP 2, VP 24, EP 8",
                recompute="not stated for this row; none", split="not stated; even",
                notes=("A 3B-active model on 16 GPUs: its kernels are small, and the launch and host time the "
                       "roofline leaves out weigh most here.",)),
    )  # fmt: skip


def _bridge(
    name: str,
    title: str,
    model: str,
    gpu: str,
    layout: Layout,
    *,
    tokens: float,
    tflops: float,
    row: str,
    recompute: str,
    split: str,
    notes: tuple[str, ...] = (),
) -> LayoutPreset:
    """A Megatron-Bridge row: the table gives the layout and the throughput; the rest is the recipe's or the lab's."""
    bridge = Provenance(PAPER, "the performance table's row")
    return LayoutPreset(
        name=name,
        title=title,
        model=model,
        gpu=gpu,
        layout=layout,
        source=f"{BRIDGE}: {row}; {tokens:,} tokens/s per GPU ({tflops} model TFLOP/s)",
        reported_tflops_per_gpu=float(tflops),
        reported_tokens_per_gpu=float(tokens),
        counts_recomputation=False,
        attention_counted=0.5,
        provenance={
            **dict.fromkeys(("model", "gpu", "tp", "pp", "ep", "global_batch", "microbatch_size", "seq"), bridge),
            "dp": Provenance(PAPER, "GPUs / (TP × PP)"),
            "family": Provenance(LAB, "Megatron-LM's 1F1B, interleaved where the row's VP > 1"),
            "zero": Provenance(LAB, "not stated; Megatron-LM's distributed optimizer (ZeRO-1)"),
            "recompute": Provenance(LAB, recompute),
            "split": Provenance(LAB, split),
            "fp8": Provenance(PAPER, "the row's precision"),
            "sequence_parallel": Provenance(LAB, "Megatron-LM's sequence parallelism wherever TP > 1"),
            "flash_attention": Provenance(LAB, "Transformer Engine's fused attention"),
            "gradient_precision": Provenance(LAB, "Megatron-LM's default FP32 main gradients"),
            "dp_overlap": Provenance(LAB, "Megatron-LM's overlapped gradient reduction"),
            "p2p_overlap": Provenance(LAB, "Megatron-LM's asynchronous pipeline sends"),
        },
        notes=("Megatron-Bridge forces the experts' load to balance; the lab assumes balanced experts too.", *notes),
    )
