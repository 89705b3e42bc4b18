"""Real scale: plan a pipeline for a real model on real GPUs — step time, bubble, memory in bytes.

One call gives the Plan page everything: ``plan(model, gpu, layout) -> Plan`` (or
``plan_preset("llama3-405b-as-trained")``). Pure Python and numpy on top of the lab's simulator; no torch.

* ``models``: published architectures (GPT-3 175B, Narayanan et al.'s Table 1, Llama 3 8B/70B/405B), exact
  parameters and FLOPs, Narayanan et al. 2021's Eq. 2 and Eq. 3.
* ``hardware``: A100, H100, H200, B200 from their datasheets, and each GPU's one calibrated GEMM share.
* ``layout``: TP, PP, DP, CP, batch, schedule, layer split, recomputation, ZeRO; checked with the arithmetic.
* ``operations``: a layer as its kernels (FLOPs, bytes, GEMM shapes) and the tensors autograd keeps.
* ``roofline``: each kernel's seconds; ``costs``: F, I, W per stage with the TP/CP collectives, the pipeline
  transfers per hop; ``gradients``: the DP reduction, overlapped or not.
* ``memory``: model states as Megatron-LM keeps them, with ZeRO; activations × the simulated in-flight count.
* ``plan``: the ``Plan`` and ``compare_families``; ``presets``: the papers' own runs, each value's provenance;
  ``calibration``: the GEMM share from one run, the others as predictions; ``torchtitan``: export.
"""

from .hardware import GPU_PRESETS, GpuSpec
from .layout import RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES, Layout
from .model_presets import MODEL_PRESETS
from .models import ModelSpec, narayanan_flops, narayanan_parameters
from .plan import Plan, compare_families, plan, plan_preset
from .presets import LAYOUT_PRESETS, LayoutPreset
from .records import AllReduce, FamilyComparison, RankMemory

__all__ = [
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
