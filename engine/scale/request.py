"""What a planned training job is, as one typed request: a model, a GPU, a layout and an efficiency, each
setting declared once (``engine.options``). The Plan page's URL and widgets and ``python -m engine plan``'s
flags all derive from these declarations, so a bound is written in one place and both faces show the same
numbers from one library call: ``PlanRequest(...).resolve()`` → ``plan(*...)``.

    /plan?model=llama3-405b&gpu=h100&tp=8&pp=16&dp=64&seq=8192&global_batch=2048&microbatch_size=1
          &schedule=interleaved-1f1b&chunks=2&split=llama3
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..limits import MAX_CHUNKS, MAX_RANKS
from ..options import Choice, Declared, Flag, Number, Option, Text, Whole, code_span, declared
from ..schedules import DEFAULT_CHUNKS, FAMILIES
from .bounds import (
    MAX_BANDWIDTH_GB_S,
    MAX_FFN,
    MAX_GLOBAL_BATCH,
    MAX_GPUS_PER_NODE,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MEMORY_GB,
    MAX_PARALLEL,
    MAX_PEAK_TFLOPS,
    MAX_SEQUENCE,
    MAX_VOCAB,
)
from .hardware import DEFAULT_EFFICIENCY, GPU_PRESETS, GpuSpec, gpu_named
from .layout import RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES, Layout
from .models import MODEL_PRESETS, MODEL_STYLES, ModelSpec, custom_model, model_named
from .presets import LAYOUT_PRESETS

CUSTOM = "custom"
MIN_EFFICIENCY = 0.05
"""Below 5 % of peak no GPU kernel worth planning runs; it also keeps the step time a readable number."""
MIN_RATE = 0.1
"""The least FLOP/s (TFLOP/s), memory (GB) or bandwidth (GB/s) a custom GPU may have: a tenth of a unit."""


def _split_parse(text: str) -> str:
    text = text.strip()
    if text in SPLIT_RULES:
        return text
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > MAX_LAYERS or not all(part.isascii() and part.isdigit() for part in parts):
        raise ValueError(f"{text[:40]!r} is neither a rule nor whole numbers separated by commas")
    return ",".join(parts)


SPLIT = Text(_split_parse, str, f"{', '.join(SPLIT_RULES)} or layers per stage like 3,4,4,3")


def _whole(key: str, label: str, high: int, help: str = "", **more: Any) -> Option:
    return Option(key, Whole(1, high), label, help, widget="number", step=1, **more)


def _rate(key: str, label: str, high: float, help: str) -> Option:
    return Option(key, Number(MIN_RATE, high), label, help, widget="number")


@dataclass(frozen=True)
class PlanRequest(Declared):
    """One planned training job. Defaults: Llama 3 405B as trained at 8K (Llama 3 paper, Table 4)."""

    PREFIX = "pl"

    model: str = declared(
        "llama3-405b",
        Option(
            "model",
            Choice((*MODEL_PRESETS, CUSTOM), {k: v.title for k, v in MODEL_PRESETS.items()}),
            "Model",
            "a published model, or custom",
            widget="select",
        ),  # fmt: skip
    )
    gpu: str = declared(
        "h100",
        Option(
            "gpu",
            Choice((*GPU_PRESETS, CUSTOM), {k: v.title for k, v in GPU_PRESETS.items()}),
            "GPU",
            "a GPU from its datasheet, or custom",
            widget="select",
        ),  # fmt: skip
    )
    efficiency: float = declared(
        DEFAULT_EFFICIENCY,
        Option(
            "efficiency",
            Number(MIN_EFFICIENCY, 1.0),
            "Efficiency: share of peak a layer's kernels reach",
            f"Default {DEFAULT_EFFICIENCY}: the MFU the Llama 3 paper reports for its 405B pre-training on H100s "
            "(Table 4).",
            widget="slider",
            step=0.01,
        ),  # fmt: skip
    )
    tp: int = declared(8, _whole("tp", "TP", MAX_PARALLEL, "tensor parallel"))
    pp: int = declared(16, _whole("pp", "PP (ranks)", MAX_RANKS, "pipeline parallel (ranks)"))
    dp: int = declared(64, _whole("dp", "DP", MAX_PARALLEL, "data parallel"))
    cp: int = declared(1, _whole("cp", "CP", MAX_PARALLEL, "context parallel"))
    seq: int = declared(8_192, _whole("seq", "Sequence length", MAX_SEQUENCE, "sequence length (default: the model's)"))
    global_batch: int = declared(
        2_048, _whole("global_batch", "Global batch (sequences)", MAX_GLOBAL_BATCH, "sequences per step")
    )
    microbatch_size: int = declared(
        1, _whole("microbatch_size", "Micro-batch size", MAX_GLOBAL_BATCH, "sequences per micro-batch")
    )
    family: str = declared(
        "interleaved-1f1b",
        Option(
            "schedule",
            Choice(tuple(FAMILIES), {k: f.title for k, f in FAMILIES.items()}),
            "Schedule",
            "schedule family",
            widget="select",
        ),  # fmt: skip
    )
    chunks: int = declared(
        DEFAULT_CHUNKS,
        Option(
            "chunks", Whole(2, MAX_CHUNKS), "Chunks per rank, v", "v, for the families that take it", widget="slider"
        ),  # fmt: skip
    )
    split: str = declared(
        "llama3",
        Option(
            "split",
            SPLIT,
            "Layers per stage",
            f"{', '.join(SPLIT_RULES)} (Llama 3: first and last stage one layer fewer), or a list like 3,4,4,3",
            widget="text",
        ),  # fmt: skip
    )
    recompute: str = declared(
        "selective",
        Option(
            "recompute", Choice(RECOMPUTE_MODES), "Recomputation", "activation recomputation", widget="radio"
        ),  # fmt: skip
    )
    zero: int = declared(
        2,
        Option(
            "zero", Choice(ZERO_STAGES), "Optimizer sharding (ZeRO stage)", "ZeRO stage over DP", widget="radio"
        ),  # fmt: skip
    )
    sequence_parallel: bool = declared(
        True,
        Option(
            "sequence_parallel",
            Flag(),
            "Sequence parallelism (with TP)",
            "TP with sequence parallelism",
            widget="toggle",
        ),  # fmt: skip
    )
    # a custom model (model = "custom")
    layers: int = declared(32, _whole("layers", "Layers", MAX_LAYERS, "transformer layers"))
    hidden: int = declared(4_096, _whole("hidden", "Hidden size h", MAX_HIDDEN, "hidden size h"))
    ffn: int = declared(14_336, _whole("ffn", "FFN size", MAX_FFN, "FFN size"))
    heads: int = declared(32, _whole("heads", "Attention heads", MAX_HEADS, "attention heads"))
    kv_heads: int = declared(8, _whole("kv_heads", "Key/value heads", MAX_HEADS, "key/value heads"))
    vocab: int = declared(128_256, _whole("vocab", "Vocabulary", MAX_VOCAB, "vocabulary"))
    style: str = declared(
        "llama",
        Option(
            "style", Choice(MODEL_STYLES), "Style", "llama (SwiGLU, RMSNorm) or gpt (GeLU, LayerNorm)", widget="radio"
        ),  # fmt: skip
    )
    tied_embeddings: bool = declared(
        False, Option("tied_embeddings", Flag(), "Tied embeddings", "output layer = embedding", widget="toggle")
    )
    # a custom GPU (gpu = "custom")
    peak_tflops: float = declared(989.0, _rate("peak_tflops", "Dense BF16 peak (TFLOP/s)", MAX_PEAK_TFLOPS,
                                               "dense BF16 peak, TFLOP/s"))  # fmt: skip
    memory_gb: float = declared(80.0, _rate("memory_gb", "Memory (GB)", MAX_MEMORY_GB, "HBM, GB"))
    nvlink_gb_s: float = declared(
        900.0, _rate("nvlink_gb_s", "NVLink (GB/s)", MAX_BANDWIDTH_GB_S, "NVLink, GB/s (both directions)")
    )
    internode_gb_s: float = declared(
        50.0, _rate("internode_gb_s", "Network per GPU (GB/s)", MAX_BANDWIDTH_GB_S, "network per GPU, GB/s (one way)")
    )
    gpus_per_node: int = declared(8, _whole("gpus_per_node", "GPUs per node", MAX_GPUS_PER_NODE, "GPUs per node"))
    num_gpus: int | None = None
    """The GPUs the job has, when stated (the CLI's ``--gpus``): TP × PP × DP × CP must equal it."""

    # -- what the declarations alone cannot say ---------------------------------------------------------
    def omitted_keys(self) -> set[str]:
        """A preset model's or GPU's own numbers are not written to a link (they are the preset's)."""
        omitted = set()
        if self.model != CUSTOM:
            omitted |= set(CUSTOM_MODEL)
        if self.gpu != CUSTOM:
            omitted |= set(CUSTOM_GPU)
        return omitted

    @classmethod
    def _after_query(cls, settings, query, problems):
        """``preset`` in a link starts from a published layout, under the link's other keys."""
        preset = query.get("preset")
        if preset is None:
            return settings, problems
        if preset not in LAYOUT_PRESETS:
            return settings, [f"preset={code_span(preset)}: choose one of {', '.join(LAYOUT_PRESETS)}", *problems]
        given = {name: getattr(settings, name) for name, option in cls.options() if option.key in query}
        return replace(cls.from_preset(preset), **given), problems

    @classmethod
    def from_preset(cls, name: str) -> PlanRequest:
        """A published layout (``LAYOUT_PRESETS``) as a request."""
        preset = LAYOUT_PRESETS[name]
        layout = preset.layout
        split = layout.split if isinstance(layout.split, str) else ",".join(map(str, layout.split))
        return cls(
            model=preset.model,
            gpu=preset.gpu,
            efficiency=preset.efficiency,
            tp=layout.tensor_parallel,
            pp=layout.pipeline_parallel,
            dp=layout.data_parallel,
            cp=layout.context_parallel,
            seq=layout.seq_length or MODEL_PRESETS[preset.model].seq_length,
            global_batch=layout.global_batch,
            microbatch_size=layout.microbatch_size,
            family=layout.family,
            chunks=layout.chunks or DEFAULT_CHUNKS,
            split=split,
            recompute=layout.recompute,
            zero=layout.zero,
            sequence_parallel=layout.sequence_parallel,
        )

    # -- to the engine -------------------------------------------------------------------------------------
    def resolve(self) -> tuple[ModelSpec, GpuSpec, Layout, float]:
        """The model, GPU, layout and efficiency ``plan()`` takes (ValueError with the arithmetic)."""
        return self.model_spec(), self.gpu_spec(), self.layout(), self.efficiency

    def model_spec(self) -> ModelSpec:
        if self.model != CUSTOM:
            return model_named(self.model)
        return custom_model(
            num_layers=self.layers,
            hidden_size=self.hidden,
            num_attention_heads=self.heads,
            vocab_size=self.vocab,
            seq_length=self.seq,
            ffn_hidden_size=self.ffn,
            num_kv_heads=self.kv_heads,
            tied_embeddings=self.tied_embeddings,
            style=self.style,
        )

    def gpu_spec(self) -> GpuSpec:
        if self.gpu != CUSTOM:
            return gpu_named(self.gpu)
        return GpuSpec(
            CUSTOM,
            "custom GPU",
            peak_tflops=self.peak_tflops,
            memory_gb=self.memory_gb,
            nvlink_gb_s=self.nvlink_gb_s,
            internode_gb_s=self.internode_gb_s,
            gpus_per_node=self.gpus_per_node,
        )

    def layout(self) -> Layout:
        split = self.split if self.split in SPLIT_RULES else tuple(int(part) for part in self.split.split(","))
        return Layout(
            tensor_parallel=self.tp,
            pipeline_parallel=self.pp,
            data_parallel=self.dp,
            context_parallel=self.cp,
            seq_length=self.seq,
            global_batch=self.global_batch,
            microbatch_size=self.microbatch_size,
            family=self.family,
            chunks=self.chunks if FAMILIES[self.family].takes_chunks else None,
            split=split,
            recompute=self.recompute,
            zero=self.zero,
            sequence_parallel=self.sequence_parallel,
            num_gpus=self.num_gpus,
        )


CUSTOM_MODEL = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "style", "tied_embeddings")
CUSTOM_GPU = ("peak_tflops", "memory_gb", "nvlink_gb_s", "internode_gb_s", "gpus_per_node")
PLAN_KEYS = ("preset", *PlanRequest.url_keys())
"""Every key a Plan link may carry."""
