"""What a planned training job is, as one typed request: a model, a GPU, a layout and (optionally) measured
costs, each setting declared once (``engine.options``). The Plan page's URL and widgets and ``python -m engine plan``'s
flags all derive from these declarations, so a bound is written in one place and both faces show the same
numbers from one library call: ``PlanRequest(...).resolve()`` → ``plan(*...)``.

    /plan?model=llama3-405b&gpu=h100&tp=8&pp=16&dp=64&seq=8192&global_batch=2048&microbatch_size=1
          &schedule=interleaved-1f1b&chunks=8&split=auto
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..costs import Costs, split_backward
from ..limits import (
    MAX_BANDWIDTH_GB_S,
    MAX_CHUNKS,
    MAX_FFN,
    MAX_GLOBAL_BATCH,
    MAX_GPUS_PER_NODE,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MEMORY_GB,
    MAX_PARALLEL,
    MAX_PEAK_TFLOPS,
    MAX_RANKS,
    MAX_SEQUENCE,
    MAX_SMS,
    MAX_VOCAB,
    MIN_BANDWIDTH_GB_S,
    MIN_GEMM_SHARE,
    MIN_MEMORY_GB,
    MIN_PEAK_TFLOPS,
)
from ..options import Declared, Option, Text, choose, code_span, declared, real, toggle, whole
from ..schedules import DEFAULT_CHUNKS, FAMILIES
from .hardware import GPU_PRESETS, GpuSpec, gpu_named
from .layout import GRADIENT_PRECISIONS, RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES, ZERO_TITLES, Layout
from .model_presets import MODEL_PRESETS, model_named
from .models import MODEL_STYLES, ModelSpec, custom_model
from .presets import LAYOUT_PRESETS

CUSTOM = "custom"
AUTO_SPLIT = "auto"
"""The split a model's own paper gives: Llama 3's rule for the Llama 3 models, else even."""


def _split_parse(text: str) -> str:
    text = text.strip()
    if text in SPLIT_RULES or text == AUTO_SPLIT:
        return text
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > MAX_LAYERS or not all(part.isascii() and part.isdigit() for part in parts):
        raise ValueError(f"{text[:40]!r} is neither a rule nor whole numbers separated by commas")
    return ",".join(parts)


SPLIT = Text(_split_parse, str, f"{AUTO_SPLIT}, {', '.join(SPLIT_RULES)} or layers per stage like 3,4,4,3")


MEASURED_MS = (1e-3, 1e6)
"""A measured action's time, in milliseconds: from a microsecond (a kernel launch) to about 17 minutes. Outside it
the plan's arithmetic goes astray (1e308 printed a 300-digit step time), and no real stage takes it."""


def _measured_parse(text: str) -> str:
    """Measured milliseconds per stage, "F=a:b:…,I=…,W=…" (``Costs.parse``'s per-stage form), each within
    ``MEASURED_MS``; checked against the plan's stages when it is resolved."""
    text = text.strip()
    if text:
        costs = Costs.parse(text, num_stages=text.split(",")[0].count(":") + 1, where="the measured costs")
        low, high = MEASURED_MS
        rows = costs.stage_costs or (costs.durations,)  # one value per kind: the same for every stage
        for stage, row in enumerate(rows):
            for kind in ("F", "I", "W", "B"):
                value = row.get(kind) if hasattr(row, "get") else None
                if value is not None and not low <= value <= high:
                    which = f"{kind} of stage {stage}" if costs.stage_costs else kind
                    raise ValueError(f"{which} is {value:g} ms; a measured action takes from {low:g} to {high:g} ms")
    return text


MEASURED = Text(_measured_parse, str, "milliseconds per stage like F=1.2:1.3,I=1.1:1.2,W=0.9:1.0 (empty: the roofline)")


def _whole(key: str, label: str, high: int, help: str = "") -> Option:
    return whole(key, 1, high, label, help)


def _rate(key: str, label: str, low: float, high: float, help: str) -> Option:
    return real(key, low, high, label, help)


MODELS = {name: model.title for name, model in MODEL_PRESETS.items()}
GPUS = {name: gpu.title for name, gpu in GPU_PRESETS.items()}
TITLES = {name: family.title for name, family in FAMILIES.items()}
SPLIT_HELP = (
    f"{AUTO_SPLIT} (the model's paper: Llama 3's rule for Llama 3, else even), {', '.join(SPLIT_RULES)} (Llama 3: "
    "first and last stage one layer fewer), or a list like 3,4,4,3"
)
GEMM_SHARE_HELP = (
    "The one calibrated number: the share of peak a large GEMM reaches (the preset GPUs' come from one published "
    "run each)"
)
MEASURED_HELP = (
    "F, I and W per stage measured on your machine, in milliseconds: simulated instead of the roofline's, to check "
    "the model against a real run"
)


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
    tp: int = declared(8, _whole("tp", "TP", MAX_PARALLEL, "tensor parallel"))
    pp: int = declared(16, _whole("pp", "PP (ranks)", MAX_RANKS, "pipeline parallel (ranks)"))
    dp: int = declared(64, _whole("dp", "DP", MAX_PARALLEL, "data parallel"))
    cp: int = declared(1, _whole("cp", "CP", MAX_PARALLEL, "context parallel"))
    ep: int = declared(1, _whole("ep", "EP", MAX_PARALLEL, "expert parallel (MoE models; inside TP × DP × CP)"))
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
        8, whole("chunks", 2, MAX_CHUNKS, "Chunks per rank, v", "v, for the families that take it", widget="slider")
    )
    split: str = declared(AUTO_SPLIT, Option("split", SPLIT, "Layers per stage", SPLIT_HELP, widget="text"))
    recompute: str = declared(
        "none", choose("recompute", RECOMPUTE_MODES, "Recomputation", "activation recomputation", widget="radio")
    )
    zero: int = declared(
        2,
        choose("zero", ZERO_STAGES, "Optimizer sharding (ZeRO stage)", "ZeRO stage over DP", titles=ZERO_TITLES,
               widget="radio"),
    )  # fmt: skip
    sequence_parallel: bool = declared(
        True, toggle("sequence_parallel", "Sequence parallelism (with TP)", "TP with sequence parallelism")
    )
    flash_attention: bool = declared(
        True, toggle("flash_attention", "Flash attention", "fused attention: no s × s scores kept or written")
    )
    gradient_precision: str = declared(
        "fp32",
        choose("gradient_precision", tuple(GRADIENT_PRECISIONS), "Gradients", "fp32 (Megatron's main gradients) or "
               "bf16", widget="radio"),
    )  # fmt: skip
    tp_overlap: bool = declared(
        False, toggle("tp_overlap", "Overlap TP with GEMMs", "hide TP collectives behind GEMMs")
    )
    dp_overlap: bool = declared(
        True, toggle("dp_overlap", "Overlap DP with the backward", "each stage's gradients leave when they are done")
    )
    fp8: bool = declared(False, toggle("fp8", "FP8 GEMMs", "linear layers at the GPU's FP8 peak (DeepSeek-V3)"))
    p2p_overlap: bool = declared(
        True,
        toggle("p2p_overlap", "Overlap pipeline hand-offs", "asynchronous sends; off: each exchange blocks both "
               "ranks, as 2021 Megatron-LM's did"),
    )  # fmt: skip
    measured: str = declared("", Option("measured", MEASURED, "Measured costs (ms per stage)", MEASURED_HELP,
                                        widget="text"))  # fmt: skip
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
        989.0,
        _rate("peak_tflops", "Dense BF16 peak (TFLOP/s)", MIN_PEAK_TFLOPS, MAX_PEAK_TFLOPS, "dense BF16 peak, TFLOP/s"),
    )
    memory_gb: float = declared(80.0, _rate("memory_gb", "Memory (GB)", MIN_MEMORY_GB, MAX_MEMORY_GB, "HBM, GB"))
    nvlink_gb_s: float = declared(
        900.0,
        _rate("nvlink_gb_s", "NVLink (GB/s)", MIN_BANDWIDTH_GB_S, MAX_BANDWIDTH_GB_S, "NVLink, GB/s (both directions)"),
    )
    internode_gb_s: float = declared(
        50.0,
        _rate("internode_gb_s", "Network per GPU (GB/s)", MIN_BANDWIDTH_GB_S, MAX_BANDWIDTH_GB_S,
              "network per GPU, GB/s (one way)"),
    )  # fmt: skip
    hbm_gb_s: float = declared(
        3_352.0, _rate("hbm_gb_s", "HBM (GB/s)", MIN_BANDWIDTH_GB_S, MAX_BANDWIDTH_GB_S, "HBM bandwidth, GB/s")
    )
    sm_count: int = declared(132, _whole("sm_count", "SMs", MAX_SMS, "streaming multiprocessors"))
    gemm_share: float = declared(
        GPU_PRESETS["h100"].gemm_share,
        real("gemm_share", MIN_GEMM_SHARE, 1.0, "Large-GEMM share of peak", GEMM_SHARE_HELP, step=0.01),
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
        if not self.measured:
            omitted.add("measured")
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
            **from_layout | {"seq": layout.seq_length or MODEL_PRESETS[preset.model].seq_length},
            chunks=layout.chunks or DEFAULT_CHUNKS,
            split=split,
        )

    @classmethod
    def from_measured_run(cls, family: str, ranks: int, microbatches: int, chunks: int, table) -> PlanRequest:
        """The planner checked against a run: the run's own pipeline (its family, ranks, micro-batches and v; TP,
        DP and CP 1) simulated with the F, I, W it measured per stage (``table``: rows of F, B, I, W in ms, a full
        backward split in half). The model and GPU stay to be set to what the run trained on."""
        forward, inputs, weights = split_backward(table)
        text = ",".join(
            f"{key}=" + ":".join(f"{value:.6g}" for value in values)
            for key, values in (("F", forward), ("I", inputs), ("W", weights))
        )
        takes = FAMILIES[family].takes_chunks
        return cls(family=family, pp=ranks, tp=1, dp=1, cp=1, global_batch=microbatches, microbatch_size=1,
                   chunks=chunks if takes else DEFAULT_CHUNKS, split="even", measured=text)  # fmt: skip

    # -- to the engine -------------------------------------------------------------------------------------
    def resolve(self) -> tuple[ModelSpec, GpuSpec, Layout, tuple[dict[str, float], ...] | None]:
        """The model, GPU, layout and measured costs (seconds per stage, or None) ``plan()`` takes (ValueError
        with the arithmetic)."""
        layout = self.layout()
        return self.model_spec(), self.gpu_spec(), layout, self.measured_seconds(layout.num_stages)

    def measured_seconds(self, num_stages: int) -> tuple[dict[str, float], ...] | None:
        """The measured milliseconds per stage as seconds (None when none are given)."""
        if not self.measured:
            return None
        costs = Costs.parse(self.measured, num_stages=num_stages, where="the plan")
        if costs.stage_costs is None:  # one value for every stage
            return tuple({key: costs.durations[key] / 1e3 for key in ("F", "I", "W")} for _ in range(num_stages))
        return tuple({key: row[key] / 1e3 for key in ("F", "I", "W")} for row in costs.stage_costs)

    def model_spec(self) -> ModelSpec:
        if self.model != CUSTOM:
            return model_named(self.model)
        return custom_model(**self._engine_names(MODEL_ARGUMENTS))

    def gpu_spec(self) -> GpuSpec:
        if self.gpu != CUSTOM:
            return gpu_named(self.gpu)
        return GpuSpec(CUSTOM, "custom GPU", **self._engine_names({name: name for name in CUSTOM_GPU}))

    def layout(self) -> Layout:
        split: str | tuple[int, ...] = self.split
        if self.split == AUTO_SPLIT:
            split = "llama3" if self.model.startswith("llama3") else "even"
        elif self.split not in SPLIT_RULES:
            split = tuple(int(part) for part in self.split.split(","))
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
    "ep": "expert_parallel", "fp8": "fp8",
    "seq": "seq_length", "global_batch": "global_batch", "microbatch_size": "microbatch_size", "family": "family",
    "recompute": "recompute", "zero": "zero", "sequence_parallel": "sequence_parallel",
    "flash_attention": "flash_attention", "gradient_precision": "gradient_precision", "tp_overlap": "tp_overlap",
    "dp_overlap": "dp_overlap", "p2p_overlap": "p2p_overlap",
}  # fmt: skip
"""Settings → ``Layout``'s fields (the split and v are converted first)."""
CUSTOM_MODEL = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "style", "tied_embeddings")
CUSTOM_GPU = ("peak_tflops", "memory_gb", "nvlink_gb_s", "internode_gb_s", "hbm_gb_s", "sm_count", "gemm_share",
              "gpus_per_node")  # fmt: skip
PLAN_KEYS = ("preset", *PlanRequest.url_keys())
"""Every key a Plan link may carry."""
