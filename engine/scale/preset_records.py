"""The records of a published layout: where each value comes from (``Provenance``) and the run itself with what
was measured (``LayoutPreset``). The presets are ``presets`` (dense papers) and ``moe_presets``."""

from __future__ import annotations

from dataclasses import dataclass, field

from .layout import Layout

PAPER, LAB = "paper", "lab"


@dataclass(frozen=True)
class Provenance:
    """Where one value of a preset comes from."""

    origin: str
    """``PAPER`` or ``LAB``."""
    words: str
    """The paper's place, or the lab's reason."""


@dataclass(frozen=True)
class LayoutPreset:
    """A model on a GPU with a layout, as a paper reports it, and what the paper measured."""

    name: str
    """Registry key, e.g. "llama3-405b-as-trained"."""
    title: str
    model: str
    """A key of ``MODEL_PRESETS``."""
    gpu: str
    """A key of ``GPU_PRESETS``."""
    layout: Layout
    source: str
    """Where the layout and the measurement come from."""
    reported_tflops_per_gpu: float
    """The paper's TFLOP/s per GPU."""
    counts_recomputation: bool
    """True when the paper's FLOPs count the recomputed forward (Narayanan et al.'s Eq. 3), False when they are
    model FLOPs (the Llama 3 paper's MFU, PaLM's definition)."""
    attention_counted: float = 1.0
    """Share of the s × s attention square the paper's FLOPs count: 1 (Narayanan et al.'s appendix, all of it) or
    0.5 (the causal half)."""
    provenance: dict[str, Provenance] = field(default_factory=dict, hash=False)
    """Per setting (``PlanRequest``'s names): from the paper, or the lab's choice and why."""
    notes: tuple[str, ...] = ()
    reported_tokens_per_gpu: float | None = None
    """The run's tokens per second per GPU, where it is what was published (an MoE run): the planner is then
    compared on tokens, whatever the FLOPs convention."""

    @property
    def is_moe(self) -> bool:
        return self.reported_tokens_per_gpu is not None

    @property
    def paper(self) -> str:
        return self.source.split(",")[0]
