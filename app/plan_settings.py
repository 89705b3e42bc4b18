"""What a visitor chose on the Plan page, in one typed object (pure: no Streamlit here): a model, a GPU and a
layout, under the names of ``python -m engine plan``'s flags — so the page and the command line read the same
values through one engine function (``engine.scale.cli.resolve``) and show the same numbers:

    /plan?model=llama3-405b&gpu=h100&tp=8&pp=16&dp=64&seq=8192&global_batch=2048&microbatch_size=1
          &schedule=interleaved-1f1b&chunks=2&split=llama3
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from engine import FAMILIES
from engine.scale import GPU_PRESETS, LAYOUT_PRESETS, MODEL_PRESETS, RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES
from engine.scale.models import MODEL_STYLES

from .codec import choice, flag, shown, whole

MODELS = (*MODEL_PRESETS, "custom")
GPUS = (*GPU_PRESETS, "custom")
CUSTOM_MODEL = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "style", "tied_embeddings")
CUSTOM_GPU = ("peak_tflops", "memory_gb", "nvlink_gb_s", "internode_gb_s", "gpus_per_node")
MAX_DEGREE = 16_384
MAX_LAYERS = 10_000
MAX_SIZE = 1_000_000


@dataclass(frozen=True)
class PlanSettings:
    """One planned training job. Defaults: Llama 3 405B as trained at 8K (Llama 3 paper, Table 4)."""

    model: str = "llama3-405b"
    gpu: str = "h100"
    efficiency: float = 0.43
    """Share of the GPU's peak one layer's kernels reach (the Llama 3 paper's reported MFU)."""
    tp: int = 8
    pp: int = 16
    dp: int = 64
    cp: int = 1
    seq: int = 8_192
    global_batch: int = 2_048
    microbatch_size: int = 1
    schedule: str = "interleaved-1f1b"
    chunks: int = 2
    split: str = "llama3"
    """"even", "llama3", or layers per stage such as "3,4,4,3"."""
    recompute: str = "selective"
    zero: int = 2
    sequence_parallel: bool = True
    # a custom model (with model = "custom")
    layers: int = 32
    hidden: int = 4_096
    ffn: int = 14_336
    heads: int = 32
    kv_heads: int = 8
    vocab: int = 128_256
    style: str = "llama"
    tied_embeddings: bool = False
    # a custom GPU (with gpu = "custom")
    peak_tflops: float = 989.0
    memory_gb: float = 80.0
    nvlink_gb_s: float = 900.0
    internode_gb_s: float = 50.0
    gpus_per_node: int = 8

    # -- to the engine -------------------------------------------------------------------------------------
    def to_arguments(self) -> argparse.Namespace:
        """The ``plan`` command's arguments for these settings (``engine.scale.cli.resolve`` reads them)."""
        custom_model, custom_gpu = self.model == "custom", self.gpu == "custom"
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in CUSTOM_MODEL:
            values[name] = values[name] if custom_model else None
        values["tied_embeddings"] = self.tied_embeddings if custom_model else None
        for name in CUSTOM_GPU:
            values[name] = values[name] if custom_gpu else None
        values["chunks"] = self.chunks if FAMILIES[self.schedule].takes_chunks else None
        values["sequence_parallel"] = self.sequence_parallel
        return argparse.Namespace(layout_preset=None, gpus=None, **values)

    # -- the address bar -----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        query = {}
        for f in fields(self):
            if f.name in CUSTOM_MODEL and self.model != "custom" or f.name in CUSTOM_GPU and self.gpu != "custom":
                continue
            value = getattr(self, f.name)
            query[f.name] = str(int(value)) if isinstance(value, bool) else f"{value:g}" if isinstance(
                value, float) else str(value)  # fmt: skip
        return query

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: PlanSettings | None = None) -> tuple[PlanSettings, list[str]]:
        base = base or cls()
        problems: list[str] = []
        preset = query.get("preset")
        if preset is not None:
            if preset in LAYOUT_PRESETS:
                base = cls.from_preset(preset)
            else:
                problems.append(f"preset={shown(preset)}: choose one of {', '.join(LAYOUT_PRESETS)}")
        given: dict = {}
        for f in fields(cls):
            default = getattr(base, f.name)
            if f.name not in query:
                continue
            if f.name in ("model", "gpu", "schedule", "recompute", "style"):
                options = {"model": MODELS, "gpu": GPUS, "schedule": tuple(FAMILIES), "recompute": RECOMPUTE_MODES,
                           "style": MODEL_STYLES}[f.name]  # fmt: skip
                given[f.name] = choice(query, f.name, options, default, problems)
            elif f.name in ("sequence_parallel", "tied_embeddings"):
                given[f.name] = flag(query, f.name, default, problems)
            elif f.name == "zero":
                given[f.name] = choice(query, f.name, ZERO_STAGES, default, problems)
            elif f.name == "split":
                given[f.name] = _split(query[f.name], default, problems)
            elif isinstance(default, float):
                given[f.name] = _positive(query, f.name, default, problems)
            else:
                high = MAX_LAYERS if f.name == "layers" else MAX_SIZE if f.name in CUSTOM_MODEL else MAX_DEGREE * 8
                given[f.name] = whole(query, f.name, 1, high, default, problems)
        return replace(base, **given), problems

    @classmethod
    def from_preset(cls, name: str) -> PlanSettings:
        """A published layout (``engine.scale.LAYOUT_PRESETS``), as settings."""
        preset = LAYOUT_PRESETS[name]
        layout = preset.layout
        seq = layout.seq_length or MODEL_PRESETS[preset.model].seq_length
        split = layout.split if isinstance(layout.split, str) else ",".join(map(str, layout.split))
        return cls(
            model=preset.model,
            gpu=preset.gpu,
            efficiency=preset.efficiency,
            tp=layout.tensor_parallel,
            pp=layout.pipeline_parallel,
            dp=layout.data_parallel,
            cp=layout.context_parallel,
            seq=seq,
            global_batch=layout.global_batch,
            microbatch_size=layout.microbatch_size,
            schedule=layout.family,
            chunks=layout.chunks or 2,
            split=split,
            recompute=layout.recompute,
            zero=layout.zero,
            sequence_parallel=layout.sequence_parallel,
        )

    # -- the widgets ---------------------------------------------------------------------------------------
    @staticmethod
    def widget_key(name: str) -> str:
        return f"pl_{name}"

    def widget_values(self) -> dict[str, object]:
        return {self.widget_key(f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_widgets(cls, values: Mapping[str, object]) -> PlanSettings:
        given = {f.name: values[cls.widget_key(f.name)] for f in fields(cls) if cls.widget_key(f.name) in values}
        return cls(**given)  # type: ignore[arg-type]  # the widgets hold the fields' types


PLAN_KEYS = ("preset",) + tuple(f.name for f in fields(PlanSettings))


def _positive(query: Mapping[str, str], key: str, default: float, problems: list[str]) -> float:
    text = query[key]
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        problems.append(f"{key}={shown(text)}: expected a finite number above 0; using {default:g}")
        return default
    return value


def _split(text: str, default: str, problems: list[str]) -> str:
    if text in SPLIT_RULES:
        return text
    parts = text.split(",")
    if all(part.strip().isdigit() for part in parts) and len(parts) <= MAX_LAYERS:
        return ",".join(part.strip() for part in parts)
    problems.append(
        f"split={shown(text)}: expected {', '.join(SPLIT_RULES)} or layers per stage like 3,4,4,3; using {default}"
    )
    return default
