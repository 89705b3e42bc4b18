"""The parts of a plan that ``plan`` puts together: the closed forms beside the counts, the all-to-all through a
stage, the experts each rank holds, measured stage costs, each rank's memory, and the notes under the numbers."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ..costs import Durations, resolved
from ..ir import Schedule
from ..timeline import Timeline
from .costs import Transfer, moe_layers_per_stage
from .experts import AllToAll
from .hardware import GpuSpec
from .layout import Layout
from .memory import ModelStateBytes, peak_activation_bytes, stage_activation_bytes, stage_gpu_expert_parameters
from .models import ModelSpec, narayanan_flops, narayanan_parameters
from .records import RankMemory


def closed_forms(model: ModelSpec, layout: Layout) -> tuple[float | None, float | None]:
    """Narayanan et al.'s Eq. 2 and Eq. 3 for a GPT-style model (their closed forms are a GPT layer's), else None."""
    if not model.is_gpt_style:
        return None, None
    s = layout.sequence(model)
    return (
        narayanan_parameters(model.num_layers, model.hidden_size, model.vocab_size, s),
        narayanan_flops(layout.global_batch, s, model.num_layers, model.hidden_size, model.vocab_size),
    )


def expert_comm_per_stage(
    model: ModelSpec, layout: Layout, layers: tuple[int, ...], exchange: AllToAll | None
) -> float:
    """The all-to-all of one micro-batch through the mean stage: its MoE layers (and MTP modules) × one layer's."""
    if exchange is None:
        return 0.0
    moe_total = sum(moe_layers_per_stage(model, layers, layout.copies)) + layout.copies * model.mtp_modules
    return exchange.seconds * moe_total / len(layers)


def rank_experts(experts: list[int], layout: Layout, schedule: Schedule) -> list[float]:
    """Routed-expert parameters one GPU of each pipeline rank holds (its stages' E/EP experts)."""
    held = [0.0] * schedule.num_ranks
    for stage, count in enumerate(stage_gpu_expert_parameters(layout, experts)):
        held[schedule.rank_of(stage)] += count
    return held


def measured_rows(measured: Sequence[Mapping[str, float]], num_stages: int) -> tuple[Durations, ...]:
    """Measured F, I, W per stage, one row per stage of the plan (ValueError with the counts otherwise)."""
    if len(measured) != num_stages:
        raise ValueError(
            f"measured costs give {len(measured)} stage(s) but the plan has {num_stages} stages: "
            "give one F, I, W per stage"
        )
    return tuple(resolved(row, measured=True) for row in measured)


def rank_memory(
    model: ModelSpec,
    gpu: GpuSpec,
    layout: Layout,
    schedule: Schedule,
    timeline: Timeline,
    layers: tuple[int, ...],
    per_rank: list[float],
    experts_per_rank: list[float],
) -> tuple[RankMemory, ...]:
    """Per rank: its stages' model states (ZeRO-sharded over DP) and its activations at the simulated peak."""
    activations = peak_activation_bytes(timeline, schedule, stage_activation_bytes(model, layout, layers))
    in_flight = timeline.peak_memory_per_rank()
    p = schedule.num_ranks
    stages_of = [tuple(s for s in range(schedule.num_stages) if schedule.rank_of(s) == r) for r in range(p)]
    return tuple(
        RankMemory(
            rank=r,
            stages=stages_of[r],
            layers=sum(layers[s] for s in stages_of[r]),
            parameters=per_rank[r],
            **dataclasses.asdict(ModelStateBytes.of(per_rank[r], layout, experts_per_rank[r])),
            activations=float(activations[r]),
            peak_microbatches_in_flight=in_flight[r],
            capacity=gpu.memory_bytes,
        )
        for r in range(p)
    )


def plan_notes(model: ModelSpec, layout: Layout, transfer: Transfer) -> tuple[str, ...]:
    """What the page says under the numbers: what was simulated, the transfers, the family's size notes,
    and where an estimate stands in for a derivation."""
    p, m = layout.pipeline_parallel, layout.num_microbatches
    notes = [
        f"One pipeline of the {layout.data_parallel} DP replicas is simulated ({p} ranks × {m} micro-batches × "
        f"{layout.num_chunks} chunk(s)); the others run the same step and meet in the gradient all-reduce.",
        (
            "One pipeline rank: no transfers between ranks."
            if transfer.link == "none"
            else f"Pipeline transfers: {transfer.bytes / 1e6:.1f} MB per micro-batch over {transfer.link}, "
            + " to ".join(sorted({f"{seconds * 1e3:.3f}" for seconds in transfer.hop_seconds}))
            + " ms a hop, each hop over its own link."
        ),
        "Activations: what each operation of a layer keeps for its backward (its GEMMs' and norms' inputs, "
        + ("flash attention's Q, K, V, output and log-sum-exp" if layout.flash_attention else "the s × s scores")
        + (", dropout masks" if model.dropout else "")
        + "), as torch's autograd keeps it for a layer built as Megatron-LM builds it.",
        *layout.family_spec.size_notes(p, m),
    ]
    return tuple(notes)
