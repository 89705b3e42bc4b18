"""The lab's words, each defined in one sentence: the sidebar's Glossary (every page), the metric cards' help
and the lesson checker read them from here (pure data, no Streamlit).

A lesson may use a term before it teaches it only if the term is here (``tests/app/lessons/test_lessons.py``:
every term a lesson uses is defined in that lesson — written in bold where it is introduced — or in this glossary). Each
metric card is a term too (its ``Metric.term`` in ``app.text.metrics``, which reads this module; nothing here
reads the metrics): a lesson shows a card only from the step that introduces it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    """As the lessons write it (lower case unless it is a name)."""
    definition: str
    """One sentence."""
    aliases: tuple[str, ...] = ()
    """Other ways the lessons write it — plurals, other names — read as the term by the lesson checker (other names
    worth knowing are also in the definition)."""


TERMS: tuple[Term, ...] = (
    # -- the pipeline ---------------------------------------------------------------------------------------
    Term(
        "pipeline parallelism",
        "Cutting a model in depth into consecutive stages, each on its own device, and streaming micro-batches "
        "through them — also called inter-layer model parallelism, since the layers are divided between devices.",
        ("inter-layer model parallelism", "pipeline-parallel"),
    ),
    Term("stage", "A run of consecutive layers of the model; stage 0 holds the first layers.", ("stages",)),
    Term(
        "idle time by cause",
        "Each rank's idle time split into parts that add up to it — the textbook bubble, then what unequal stages, "
        "unequal F, B, I and W, transfers and (on a real run) everything else add — by simulating the same "
        "schedule once per added cause.",
        ("idle by cause",),
    ),
    Term(
        "rank",
        "One device (a GPU) of the pipeline, numbered from 0; it holds one stage, or several chunks.",
        ("ranks",),
    ),
    Term(
        "chunk",
        "One of the v stages a rank holds in the interleaved and V-shaped schedules, each 1/v of that rank's "
        "share of the model.",
        ("chunks", "model chunk"),
    ),
    Term(
        "micro-batch",
        "A slice of the training batch; the pipeline sends micro-batches one after another so that different "
        "stages work on different ones at the same time.",
        ("micro-batches",),
    ),
    Term(
        "activation",
        "What a stage's forward produces for one micro-batch: handed to the next stage, and kept until that "
        "micro-batch's backward has used it.",
        ("activations",),
    ),
    Term(
        "transfer",
        "One hand-off of an activation (forward) or a gradient (backward) from one rank to another.",
        ("transfers", "transfer time"),
    ),
    Term(
        "MoE",
        "A mixture of experts: each layer's feed-forward part is many small MLPs (experts), and a router sends each "
        "token to only a few of them, so the model has far more parameters than each token uses.",
        ("mixture of experts", "mixtures of experts", "experts"),
    ),
    Term(
        "EP",
        "Expert parallelism: the GPUs of one pipeline stage split an MoE layer's routed experts among them, E/EP "
        "each, and tokens travel to their experts' GPUs by an all-to-all.",
        ("expert parallelism", "expert-parallel"),
    ),
    Term("top-k", "The number of routed experts each token is sent to (DeepSeek-V3: 8 of 256)."),
    Term(
        "MLA",
        "Multi-head latent attention: keys, values and queries are projected down to a small latent and back up "
        "per head, so far less is stored (DeepSeek-V2 and V3).",
        ("multi-head latent attention",),
    ),
    Term(
        "FP8",
        "Eight-bit floating point: GEMMs run at twice the BF16 peak on Hopper, with per-block scales to keep accuracy; "
        "DeepSeek-V3 trains its linear layers in it.",
    ),
    Term(
        "all-to-all",
        "The expert layers' exchange inside a forward or backward (dispatch tokens to their experts, combine the "
        "results): an overlapped forward and backward run one micro-batch's while the other computes, the rest "
        "is waited for.",
        ("all-to-all hidden", "expert all-to-all"),
    ),
    Term(
        "gradient accumulation",
        "Adding up the gradients of several micro-batches before one optimizer step, which gives the whole "
        "batch's gradient.",
    ),
    Term(
        "recomputation",
        "Keeping only a stage's input during the forward and re-running the forward inside the backward: less "
        "memory for more time — also called activation or gradient checkpointing, and re-materialization in GPipe.",
        ("gradient checkpointing", "activation checkpointing", "re-materialization"),
    ),
    # -- the kinds of action --------------------------------------------------------------------------------
    Term(
        "F",
        "A forward: one micro-batch through one stage, handing its activation to the next stage.",
        ("forward", "forwards", "forward pass"),
    ),
    Term(
        "B",
        "A full backward of one micro-batch through one stage (PyTorch's naming), about twice a forward's work.",
        ("backward", "backwards", "backward pass", "full backward"),
    ),
    Term(
        "I",
        "The backward for the stage's input only — the gradient the previous stage waits for (the Zero Bubble "
        "paper calls it B).",
        ("input gradient",),
    ),
    Term(
        "W",
        "The backward for the stage's weights only; nobody waits for it until the optimizer step, so it can "
        "be moved to fill idle time.",
        ("weight gradient",),
    ),
    # -- time ---------------------------------------------------------------------------------------------------
    Term(
        "makespan",
        "The length of one training step, from the first action's start to the last action's end.",
        ("step time",),
    ),
    Term(
        "critical path",
        "The chain of actions, each waiting for the one before it, that is as long as the makespan: only a "
        "change on it changes the step's length.",
    ),
    Term(
        "idle time",
        "Time a rank spends waiting with nothing it can run, summed over the ranks on the cards.",
        ("idle",),
    ),
    Term("bubble", "A pipeline step's idle time, drawn as hatched grey blocks.", ("the bubble",)),
    Term(
        "bubble fraction",
        "Idle time / (ranks × makespan): the share of all device time that is wasted — GPipe's (p − 1)/(m + p − 1).",
    ),
    Term(
        "bubble ratio",
        "Idle time / busy time: idle time per unit of work — Megatron-LM's (p − 1)/m, which that paper calls the "
        "bubble time fraction.",
    ),
    Term(
        "idle inside span",
        "Idle time between each rank's first start and its last end, / (ranks × makespan): the Zero Bubble "
        "papers' count, since the next step's warm-up can fill the rest.",
        ("span",),
    ),
    Term(
        "period",
        "The longest rank span, first action to last: what a repeated step costs when the next step's warm-up "
        "starts while this one drains (the Zero Bubble paper's objective), whose bubble rate is (period − the "
        "busiest rank's work) / period.",
        ("bubble rate",),
    ),
    Term(
        "warm-up",
        "On one rank, the part of the step before its first backward, while the pipe fills with forwards.",
        ("fill",),
    ),
    Term(
        "steady state",
        "On one rank, from its first backward to the end of its last forward, where forwards and backwards take turns.",
        ("steady",),
    ),
    Term(
        "cool-down",
        "On one rank, the part of the step after its last forward, while the pipe drains of backwards.",
        ("drain", "flush"),
    ),
    # -- memory -------------------------------------------------------------------------------------------------
    Term(
        "peak memory",
        "The most activations the busiest rank holds at once, counted in micro-batches' worth of one rank's "
        "share of the model.",
    ),
    # -- schedules ----------------------------------------------------------------------------------------------
    Term(
        "GPipe",
        "Google's schedule (Huang et al.; arXiv 2018, NeurIPS 2019): every rank runs all its forwards, then all "
        "its backwards.",
    ),
    Term(
        "1F1B",
        "One forward, one backward: after a short warm-up each rank alternates the two, so a micro-batch's "
        "backward comes soon after its forward and frees its activations early (PipeDream-Flush).",
        ("PipeDream-Flush",),
    ),
    Term(
        "interleaved 1F1B",
        "Megatron-LM's 1F1B with v chunks per rank in a loop, which shortens the fill and drain by v.",
        ("interleaving", "interleaved"),
    ),
    Term(
        "zero bubble",
        "The Zero Bubble paper's schedules (ZB-H1, ZB-H2, ZB-V), which split the backward into I and W and "
        "move the W's into the gaps.",
        ("zero-bubble",),
    ),
    Term(
        "ZB-H1",
        "The Zero Bubble paper's first handcrafted schedule: 1F1B with the backward split and the W's held back "
        "to fill the drain, at 1F1B's memory.",
    ),
    Term(
        "ZB-H2",
        "The Zero Bubble paper's second handcrafted schedule: a longer warm-up and later W's, which fill the "
        "idle time inside each rank's span, at the cost of more memory than 1F1B's.",
    ),
    Term(
        "ZB-V",
        "Zero bubble with two chunks per rank in a V placement: no idle time inside a rank's span when "
        "F = I = W, at 1F1B's memory.",
    ),
    Term(
        "DualPipeV",
        "DeepSeek's DualPipe cut in half: a V placement whose steady state overlaps one chunk's forward with the "
        "other chunk's backward.",
        ("DualPipe",),
    ),
    Term(
        "V placement",
        "Two chunks per rank placed so the model runs down the ranks and back up: the last stage sits on rank "
        "0, next to the first.",
        ("V shape", "V-shaped"),
    ),
    Term(
        "overlapped F&B",
        "DualPipeV's pair of one chunk's forward and the other chunk's backward run together, so one "
        "micro-batch's transfers hide behind another's compute.",
        ("F&B",),
    ),
    # -- the other parallelisms -----------------------------------------------------------------------------
    Term(
        "data parallelism",
        "Every device holds the whole model and a slice of the batch; the gradients are averaged once a step.",
    ),
    Term(
        "tensor parallelism",
        "Each layer's matrices split across devices, which must exchange partial results inside every layer "
        "(intra-layer model parallelism).",
    ),
    Term(
        "sequence parallelism",
        "Megatron-LM's split of the norms' and dropouts' activations along the sequence inside a tensor-parallel "
        "group, so that the group no longer keeps whole copies of them (each all-reduce becomes a reduce-scatter "
        "and an all-gather).",
    ),
    Term(
        "context parallelism",
        "Long sequences split across devices, which exchange keys and values so that attention still sees the "
        "whole sequence.",
    ),
    Term(
        "all-reduce",
        "A collective in which every device ends with the sum of all devices' tensors — in a ring, each sends "
        "about twice its tensor's size, whatever the number of devices.",
        ("all-reduces", "reduce-scatter", "all-gather"),
    ),
    Term(
        "optimizer states",
        "What the optimizer keeps per parameter besides the weight: for mixed-precision Adam, an FP32 copy of the "
        "weight and two moments, 12 bytes a parameter.",
        ("optimizer state",),
    ),
    Term(
        "ZeRO",
        "Sharding over the data-parallel copies what each would otherwise hold whole: stage 1 the optimizer states "
        "(Megatron-LM's distributed optimizer), stage 2 also the gradients, stage 3 also the weights.",
        ("ZeRO-1", "ZeRO-2", "ZeRO-3", "distributed optimizer"),
    ),
    Term(
        "FSDP",
        "PyTorch's fully sharded data parallelism, ZeRO's stage 3 by default (or stage 2 when the weights are kept "
        "whole after the forward, as Llama 3 did).",
        ("fully sharded data parallelism",),
    ),
    Term(
        "MFU",
        "Model FLOPs utilisation: the FLOPs a step needs (a forward and a backward, without recomputation) over "
        "what the GPUs' peak could do in the step's time.",
        ("model FLOPs utilisation", "model FLOPs utilization"),
    ),
    Term(
        "TFLOP/s",
        "Trillions of floating-point operations a second: a GPU's peak from its datasheet, or what a run "
        "achieves per GPU.",
        ("TFLOP",),
    ),
    Term(
        "GPU",
        "Graphics processing unit: the accelerator a pipeline rank runs on (an NVIDIA H100 in the lab's plans).",
        ("GPUs",),
    ),
    Term(
        "GEMM",
        "General matrix multiply, C = A·B: the dense matrix products that make up most of a transformer layer's "
        "work and run nearest a GPU's peak speed.",
        ("GEMMs",),
    ),
    Term(
        "FLOP",
        "One floating-point operation (a multiply or an add); FLOPs counts them, FLOP/s is a rate.",
        ("FLOPs",),
    ),
    Term(
        "TP",
        "Tensor parallelism and its degree: each layer's matrices split across GPUs of one server, which "
        "all-reduce their partial results inside every layer (Megatron-LM's column and row splits).",
        ("tensor parallelism",),
    ),
    Term("PP", "Pipeline parallelism and its degree: the number of pipeline stages, one rank each."),
    Term(
        "DP",
        "Data parallelism and its degree: copies of the whole pipeline, each on its own share of the batch, their "
        "gradients averaged by an all-reduce.",
        ("data parallelism",),
    ),
    Term(
        "CP",
        "Context parallelism and its degree: a long sequence's tokens split across GPUs, which exchange keys and "
        "values for attention.",
        ("context parallelism",),
    ),
    Term(
        "MLP",
        "A transformer layer's feed-forward block: matrix products around a nonlinearity (three of them with "
        "SwiGLU, as in Llama).",
        ("MLPs",),
    ),
    Term(
        "QKV",
        "An attention layer's query, key and value projections, computed together as one matrix product.",
    ),
    Term(
        "BF16",
        "Brain floating point, the 16-bit format most training runs compute in (FP32's range, 8 bits of "
        "precision); FP32 is the 32-bit format, FP8 an 8-bit one.",
        ("FP32", "FP8"),
    ),
    Term(
        "HBM",
        "High-bandwidth memory, the GPU's own memory, read and written at a few terabytes a second.",
    ),
    Term(
        "NVLink",
        "NVIDIA's link between the GPUs of one server, about ten times as fast as the network between servers.",
    ),
    Term(
        "flash attention",
        "Attention computed tile by tile in fast on-chip memory, so the sequence-by-sequence score matrix is "
        "never written to HBM or kept for the backward (Dao et al.).",
        ("FlashAttention",),
    ),
    Term(
        "roofline",
        "A kernel's time is the larger of its FLOPs over the achievable FLOP/s and its bytes over the memory "
        "bandwidth, so a kernel with little work per byte is bound by memory, not compute.",
    ),
)
BY_NAME = {term.name: term for term in TERMS}


def definition(name: str) -> str:
    return BY_NAME[name].definition


def as_markdown() -> str:
    """The glossary as a list, alphabetical."""
    return "\n".join(f"- **{term.name}**: {term.definition}" for term in sorted(TERMS, key=lambda t: t.name.lower()))
