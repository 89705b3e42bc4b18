"""Real scale: plan a pipeline for a real model on real GPUs — step time, bubble, memory in bytes.

One call gives the Plan page everything: ``plan(model, gpu, layout, efficiency) -> Plan`` (or
``plan_preset("llama3-405b-as-trained")``). Pure Python and numpy on top of the lab's simulator; no torch.

* ``models``: published architectures (GPT-3 175B, Megatron 1T, Llama 3 8B/70B/405B), exact parameters and
  FLOPs, Narayanan et al. 2021's Eq. 2 and Eq. 3.
* ``hardware``: A100, H100, H200, B200 from their datasheets; the default efficiency.
* ``layout``: TP, PP, DP, CP, batch, schedule, layer split, recomputation, ZeRO; checked with the arithmetic.
* ``costs``: F, I, W seconds per stage (FLOPs, TP/CP collectives), the pipeline transfer, the DP all-reduce.
* ``memory``: model states with ZeRO, activations from Korthikanti et al. 2022 × the simulated in-flight count.
* ``plan``: the ``Plan`` and ``compare_families``; ``presets``: the papers' own layouts; ``torchtitan``: export.
"""

from .hardware import DEFAULT_EFFICIENCY, GPU_PRESETS, GpuSpec
from .layout import RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES, Layout
from .models import MODEL_PRESETS, ModelSpec, narayanan_flops, narayanan_parameters
from .plan import Plan, compare_families, plan, plan_preset
from .presets import LAYOUT_PRESETS, LayoutPreset
from .records import AllReduce, FamilyComparison, RankMemory

__all__ = [
    "DEFAULT_EFFICIENCY",
    "GPU_PRESETS",
    "LAYOUT_PRESETS",
    "MODEL_PRESETS",
    "RECOMPUTE_MODES",
    "SPLIT_RULES",
    "ZERO_STAGES",
    "AllReduce",
    "FamilyComparison",
    "GpuSpec",
    "Layout",
    "LayoutPreset",
    "ModelSpec",
    "Plan",
    "RankMemory",
    "compare_families",
    "narayanan_flops",
    "narayanan_parameters",
    "plan",
    "plan_preset",
]
