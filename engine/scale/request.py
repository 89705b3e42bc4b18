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
from ..options import Declared, Option, Text, choose, code_span, declared, real, toggle, whole
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


def _whole(key: str, label: str, high: int, help: str = "") -> Option:
    return whole(key, 1, high, label, help)


def _rate(key: str, label: str, high: float, help: str) -> Option:
    return real(key, MIN_RATE, high, label, help)


MODELS = {name: model.title for name, model in MODEL_PRESETS.items()}
GPUS = {name: gpu.title for name, gpu in GPU_PRESETS.items()}
TITLES = {name: family.title for name, family in FAMILIES.items()}
EFFICIENCY_LABEL = "Efficiency: share of peak a layer's kernels reach"
EFFICIENCY_HELP = (
    f"Default {DEFAULT_EFFICIENCY}: the MFU the Llama 3 paper reports for its 405B pre-training on H100s (Table 4)."
)
SPLIT_HELP = f"{', '.join(SPLIT_RULES)} (Llama 3: first and last stage one layer fewer), or a list like 3,4,4,3"


@dataclass(frozen=True)
class PlanRequest(Declared):
    """One planned training job. Defaults: Llama 3 405B as trained at 8K (Llama 3 paper, Table 4)."""

    PREFIX = "pl"

    model: str = declared(
        "llama3-405b", choose("model", (*MODEL_PRESETS, CUSTOM), "Model", "a published model, or custom", titles=MODELS)
    )
    gpu: str = declared(
        "h100", choose("gpu", (*GPU_PRESETS, CUSTOM), "GPU", "a datasheet's GPU, or custom", titles=GPUS)
    )
    efficiency: float = declared(
        DEFAULT_EFFICIENCY,
        real("efficiency", MIN_EFFICIENCY, 1.0, EFFICIENCY_LABEL, EFFICIENCY_HELP, widget="slider", step=0.01),
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
        "interleaved-1f1b", choose("schedule", FAMILIES, "Schedule", "schedule family", titles=TITLES)
    )
    chunks: int = declared(
        DEFAULT_CHUNKS,
        whole("chunks", 2, MAX_CHUNKS, "Chunks per rank, v", "v, for the families that take it", widget="slider"),
    )
    split: str = declared("llama3", Option("split", SPLIT, "Layers per stage", SPLIT_HELP, widget="text"))
    recompute: str = declared(
        "selective", choose("recompute", RECOMPUTE_MODES, "Recomputation", "activation recomputation", widget="radio")
    )
    zero: int = declared(
        2, choose("zero", ZERO_STAGES, "Optimizer sharding (ZeRO stage)", "ZeRO stage over DP", widget="radio")
    )
    sequence_parallel: bool = declared(
        True, toggle("sequence_parallel", "Sequence parallelism (with TP)", "TP with sequence parallelism")
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
        choose("style", MODEL_STYLES, "Style", "llama (SwiGLU, RMSNorm) or gpt (GeLU, LayerNorm)", widget="radio"),
    )
    tied_embeddings: bool = declared(False, toggle("tied_embeddings", "Tied embeddings", "output layer = embedding"))
    # a custom GPU (gpu = "custom")
    peak_tflops: float = declared(
        989.0, _rate("peak_tflops", "Dense BF16 peak (TFLOP/s)", MAX_PEAK_TFLOPS, "dense BF16 peak, TFLOP/s")
    )
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
        from_layout = {name: getattr(layout, field) for name, field in LAYOUT_ARGUMENTS.items()}
        return cls(
            model=preset.model,
            gpu=preset.gpu,
            efficiency=preset.efficiency,
            **from_layout | {"seq": layout.seq_length or MODEL_PRESETS[preset.model].seq_length},
            chunks=layout.chunks or DEFAULT_CHUNKS,
            split=split,
        )

    # -- to the engine -------------------------------------------------------------------------------------
    def resolve(self) -> tuple[ModelSpec, GpuSpec, Layout, float]:
        """The model, GPU, layout and efficiency ``plan()`` takes (ValueError with the arithmetic)."""
        return self.model_spec(), self.gpu_spec(), self.layout(), self.efficiency

    def model_spec(self) -> ModelSpec:
        if self.model != CUSTOM:
            return model_named(self.model)
        return custom_model(**self._engine_names(MODEL_ARGUMENTS))

    def gpu_spec(self) -> GpuSpec:
        if self.gpu != CUSTOM:
            return gpu_named(self.gpu)
        return GpuSpec(CUSTOM, "custom GPU", **self._engine_names({name: name for name in CUSTOM_GPU}))

    def layout(self) -> Layout:
        split = self.split if self.split in SPLIT_RULES else tuple(int(part) for part in self.split.split(","))
        chunks = self.chunks if FAMILIES[self.family].takes_chunks else None
        return Layout(**self._engine_names(LAYOUT_ARGUMENTS), split=split, chunks=chunks, num_gpus=self.num_gpus)

    def _engine_names(self, names: dict[str, str]) -> dict[str, Any]:
        """These settings under the engine's argument names (the Plan page's short names are its URL's)."""
        return {argument: getattr(self, name) for name, argument in names.items()}


MODEL_ARGUMENTS = {
    "layers": "num_layers", "hidden": "hidden_size", "heads": "num_attention_heads", "vocab": "vocab_size",
    "seq": "seq_length", "ffn": "ffn_hidden_size", "kv_heads": "num_kv_heads", "tied_embeddings": "tied_embeddings",
    "style": "style",
}  # fmt: skip
"""A custom model's settings → ``custom_model``'s arguments."""
LAYOUT_ARGUMENTS = {
    "tp": "tensor_parallel", "pp": "pipeline_parallel", "dp": "data_parallel", "cp": "context_parallel",
    "seq": "seq_length", "global_batch": "global_batch", "microbatch_size": "microbatch_size", "family": "family",
    "recompute": "recompute", "zero": "zero", "sequence_parallel": "sequence_parallel",
}  # fmt: skip
"""Settings → ``Layout``'s fields (the split and v are converted first)."""
CUSTOM_MODEL = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "style", "tied_embeddings")
CUSTOM_GPU = ("peak_tflops", "memory_gb", "nvlink_gb_s", "internode_gb_s", "gpus_per_node")
PLAN_KEYS = ("preset", *PlanRequest.url_keys())
"""Every key a Plan link may carry."""
