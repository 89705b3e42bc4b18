"""What a plan reports beside its timeline: each pipeline rank's memory at its peak, each rank's DP all-reduce,
and one family's row of the comparison table — records only; ``plan`` computes them."""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import BYTES_PER_GB


def gigabytes(num_bytes: float) -> str:
    """Bytes as the page and the messages write them: decimal GB, one decimal."""
    return f"{num_bytes / BYTES_PER_GB:.1f} GB"


@dataclass(frozen=True)
class RankMemory:
    """What one GPU of a pipeline rank holds at its peak, bytes."""

    rank: int
    """Pipeline rank."""
    stages: tuple[int, ...]
    """The model stages on it (v of them)."""
    layers: int
    """Transformer layers on it."""
    parameters: float
    """Parameters one of its GPUs holds (its stages' over TP)."""
    weights: float
    gradients: float
    optimizer: float
    activations: float
    """Peak activation bytes in the simulated step."""
    peak_microbatches_in_flight: float
    """The simulator's peak for this rank: micro-batches through the rank's share of the model held at once
    (``Timeline.peak_memory_per_rank``)."""
    capacity: float
    """The GPU's memory, bytes."""

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    @property
    def label(self) -> str:
        stages = ", ".join(map(str, self.stages))
        return f"pipeline rank {self.rank} (stage{'s' if len(self.stages) > 1 else ''} {stages})"

    @property
    def reason(self) -> str:
        """Why it does (not) fit, in words: the total against the capacity and the largest part."""
        verdict = "needs" if not self.fits else "holds"
        head = f"{self.label} {verdict} {gigabytes(self.total)} of {self.capacity / BYTES_PER_GB:g} GB"
        states = self.weights + self.gradients + self.optimizer
        if self.activations >= states:
            return (
                f"{head}: activations of {self.peak_microbatches_in_flight:g} micro-batches in flight "
                f"({gigabytes(self.activations)})"
            )
        return (
            f"{head}: weights, gradients and optimizer states of {self.parameters / 1e9:.2f}B parameters "
            f"({gigabytes(states)})"
        )


@dataclass(frozen=True)
class AllReduce:
    """One pipeline rank's DP gradient all-reduce at the end of the step, seconds."""

    rank: int
    start: float
    """When the rank's last action ends."""
    end: float
    gradient_bytes: float
    """BF16 gradients one GPU sends (its parameters × 2)."""


@dataclass(frozen=True)
class StepEnd:
    """How one pipeline rank's step ends after its DP reduction: the tied embedding's all-reduce (ranks 0 and
    p − 1, once both are there), then the optimizer step, seconds."""

    rank: int
    reduced: float
    """When its DP reduction ends (its last action's end without DP)."""
    embedding_start: float
    """When its embedding all-reduce starts (both ends of the embedding there), = ``reduced`` without one."""
    embedding: float
    optimizer: float
    copies: float = 0.0
    """DualPipe: the sum of this rank's gradients with its mirror rank's copies (rank r holds blocks r and
    p − 1 − r, its mirror the other copy of each), a ring of two, after both have reduced; 0 otherwise."""

    @property
    def end(self) -> float:
        return self.embedding_start + self.embedding + self.copies + self.optimizer


@dataclass(frozen=True)
class FamilyComparison:
    """One row of ``compare_families``: a family at the same layout."""

    family: str
    title: str
    chunks: int | None
    step_seconds: float | None
    bubble_fraction: float | None
    peak_memory_bytes: float | None
    """The largest per-GPU total over the ranks."""
    fits: bool
    error: str | None = None
    """Why this family cannot run the layout (then the numbers are None)."""


@dataclass(frozen=True)
class Shortfall:
    """How far a plan's fullest rank is over its GPU's memory, in the terms of what one layer keeps."""

    rank: RankMemory
    kept: list[tuple[str, float]]
    """What one layer keeps for one micro-batch, by operation (``operations.kept_tensors``)."""

    @property
    def excess(self) -> float:
        """Bytes over the GPU's capacity."""
        return self.rank.total - self.rank.capacity

    @property
    def per_layer(self) -> float:
        """Bytes one layer keeps for one micro-batch."""
        return sum(size for _, size in self.kept)

    @property
    def layer_microbatches(self) -> float:
        """Layers × micro-batches in flight the rank's activations stand for (its peak over one layer's bytes)."""
        return self.rank.activations / self.per_layer

    @property
    def needed_per_layer(self) -> float:
        """Bytes less each layer would have to keep per micro-batch for the rank to fit."""
        return self.excess / self.layer_microbatches

    @property
    def largest(self) -> tuple[str, float]:
        """The largest tensor a layer keeps: (operation, bytes)."""
        return max(self.kept, key=lambda item: item[1])

    def words(self) -> str:
        """The shortfall and what would close it, with the numbers."""
        name, size = self.largest
        mb = 1e6
        return (
            f"{self.rank.label} is {gigabytes(self.excess)} over: its {self.layer_microbatches:,.0f} layer × "
            f"micro-batch activations would each have to keep {self.needed_per_layer / mb:,.1f} MB less than the "
            f"{self.per_layer / mb:,.1f} MB counted ({self.needed_per_layer / self.per_layer:.1%}). The largest part a "
            f"layer keeps is {name}'s, {size / mb:,.1f} MB; kept in FP8 (one byte a value, as Megatron-LM's "
            f"fp8_input_store can keep SwiGLU's input) it would be {size / 2 / mb:,.1f} MB smaller."
        )


def layers_text(layers_per_stage: tuple[int, ...]) -> str:
    """Layers per stage with runs shortened: (0, 1, 1, 1, 0) → "0, 1 × 3, 0"."""
    parts: list[str] = []
    index = 0
    while index < len(layers_per_stage):
        run = index
        while run < len(layers_per_stage) and layers_per_stage[run] == layers_per_stage[index]:
            run += 1
        count = run - index
        parts.append(f"{layers_per_stage[index]}" if count == 1 else f"{layers_per_stage[index]} × {count}")
        index = run
    return ", ".join(parts)
