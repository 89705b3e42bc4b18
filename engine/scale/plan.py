"""One call from a model, a GPU and a layout to everything the Plan page shows: ``plan(...) -> Plan``.

The pipeline is the lab's own simulator: the family's schedule (``build_schedule``) run with each stage's
measured-style durations in seconds (``Costs.of(stage_costs=...)``, F, B = I + W, I, W) and the pipeline
transfer as ``comm``. One pipeline is simulated; the DP replicas run the same one in parallel and meet in the
gradient all-reduce at the end of the step, drawn after each rank's last action.

    step time      = max over ranks (rank's last action end + its DP all-reduce + the tied embedding's
                     all-reduce + its optimizer step)
    tokens/s       = global batch × s / step time
    MFU            = model FLOPs per step / (GPUs × peak × step time)       (PaLM; Llama 3 paper §3.3.2)
    bubble         = the simulated pipeline's idle / (ranks × makespan)     (``Timeline.bubble_fraction``)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ..costs import Costs, Durations
from ..ir import Schedule
from ..schedules import FAMILIES, build_schedule
from ..simulator import simulate
from ..timeline import Timeline
from .costs import (
    StageCosts,
    Transfer,
    pipeline_transfer,
    stage_costs,
    step_flops,
    with_blocking_exchanges,
)
from .experts import AllToAll, all_to_all, compute_gpu
from .gradients import gradient_reductions, step_ends
from .hardware import GpuSpec, gpu_named
from .layers import layer_operations
from .layout import Layout
from .memory import (
    rank_parameters,
    stage_expert_parameters,
    stage_gpu_parameters,
    stage_parameters,
)
from .model_presets import model_named
from .models import ModelSpec
from .operations import CATEGORIES, kept_tensors
from .plan_parts import closed_forms, expert_comm_per_stage, measured_rows, plan_notes, rank_experts, rank_memory
from .presets import layout_preset_named
from .records import AllReduce, FamilyComparison, RankMemory, Shortfall, StepEnd
from .summary import plan_summary
from .torchtitan import torchtitan_toml


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything about one layout: sizes, FLOPs, the simulated pipeline in seconds, memory per GPU."""

    model: ModelSpec
    gpu: GpuSpec
    layout: Layout
    schedule: Schedule
    """The family's schedule for one pipeline (p ranks, m micro-batches, v chunks)."""
    timeline: Timeline
    """The simulated pipeline; start and end in seconds."""
    layers_per_stage: tuple[int, ...]
    stage_costs: tuple[StageCosts, ...]
    """F, I, W per stage from the roofline, seconds (``roofline``)."""
    measured: tuple[Durations, ...] | None
    """F, I, W per stage measured on a real run, when given: the simulation then uses these, not the roofline."""
    costs: Costs
    """What was simulated: each stage's F, I, W in seconds and each hop's transfer time."""
    parameters: int
    """Exact parameter count (``ModelSpec.parameter_count``)."""
    parameters_closed_form: float | None
    """Narayanan et al.'s Eq. 2, for a GPT-style model (else None)."""
    parameters_per_stage: tuple[int, ...]
    model_flops_per_step: float
    """Forward and backward FLOPs of the global batch (what MFU counts)."""
    hardware_flops_per_step: float
    """Model FLOPs plus the recomputed forward work."""
    flops_closed_form: float | None
    """Narayanan et al.'s Eq. 3 (assumes full recomputation), for a GPT-style model (else None)."""
    transfer: Transfer
    all_to_all: AllToAll | None
    """One MoE layer's expert all-to-all for one micro-batch (None: a dense model or no EP)."""
    expert_comm_per_stage: float
    """The all-to-all of one micro-batch through one stage, each way: the mean stage's MoE layers × one layer's,
    simulated as ``Costs.expert_comm`` (the simulator hides what an overlapped F&B pair can)."""
    active_parameters: int
    """Parameters one token goes through (``ModelSpec.active_parameter_count``); the total for a dense model."""
    allreduce: tuple[AllReduce, ...]
    step_ends: tuple[StepEnd, ...]
    """Per rank, after its DP reduction: the tied embedding's all-reduce and the optimizer step."""
    memory: tuple[RankMemory, ...]
    notes: tuple[str, ...]
    """What was assumed or adjusted, in words."""

    # -- the figures --------------------------------------------------------------------------------------------
    @property
    def num_gpus(self) -> int:
        return self.layout.gpus_used

    @property
    def num_microbatches(self) -> int:
        return self.layout.num_microbatches

    @property
    def pipeline_seconds(self) -> float:
        """The simulated pipeline's makespan."""
        return self.timeline.makespan

    @property
    def step_seconds(self) -> float:
        """When the last rank's step ends: its DP reduction, embedding all-reduce and optimizer step done."""
        return max([self.pipeline_seconds] + [step.end for step in self.allreduce + self.step_ends])

    @property
    def tokens_per_step(self) -> int:
        return self.layout.global_batch * self.layout.sequence(self.model)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_per_step / self.step_seconds

    @property
    def mfu(self) -> float:
        """Model FLOPs per step / (GPUs × peak × step time)."""
        return self.model_flops_per_step / (self.num_gpus * self.gpu.peak_flops * self.step_seconds)

    @property
    def hfu(self) -> float:
        """As MFU, with the recomputed work counted (Narayanan et al.'s "% of peak" counts it)."""
        return self.hardware_flops_per_step / (self.num_gpus * self.gpu.peak_flops * self.step_seconds)

    @property
    def achieved_flops_per_second(self) -> float:
        """All GPUs together, hardware FLOPs per step / step time (Narayanan et al.'s aggregate)."""
        return self.hardware_flops_per_step / self.step_seconds

    @property
    def tflops_per_gpu(self) -> float:
        """Model FLOPs per GPU per second, in TFLOP/s (what the Llama 3 paper's Table 4 reports)."""
        return self.model_flops_per_step / self.num_gpus / self.step_seconds / 1e12

    @property
    def hardware_tflops_per_gpu(self) -> float:
        """Hardware FLOPs (recomputation counted) per GPU per second, TFLOP/s (what Narayanan et al. report)."""
        return self.hardware_flops_per_step / self.num_gpus / self.step_seconds / 1e12

    @property
    def bubble_fraction(self) -> float:
        return self.timeline.bubble_fraction

    @property
    def fits(self) -> bool:
        return all(rank.fits for rank in self.memory)

    @property
    def peak_memory_bytes(self) -> float:
        return max(rank.total for rank in self.memory)

    @property
    def memory_message(self) -> str:
        """The fullest rank's reason, or the first one that does not fit, and how many do not."""
        misfits = [rank for rank in self.memory if not rank.fits]
        if not misfits:
            fullest = max(self.memory, key=lambda rank: rank.total)
            return f"fits: {fullest.reason}"
        worst = max(misfits, key=lambda rank: rank.total)
        count = f"{len(misfits)} of {len(self.memory)}" if len(self.memory) > 1 else "the only"
        return f"does not fit: {worst.reason}; {count} pipeline rank(s) over {self.gpu.title}'s memory"

    # -- exports ---------------------------------------------------------------------------------------------------
    def schedule_csv(self) -> str:
        """The simulated schedule in PyTorch's CSV (torchtitan's ``pipeline_parallel_schedule_csv``)."""
        return self.schedule.to_csv()

    def torchtitan_toml(self, csv_path: str = "schedule.csv") -> str:
        """A torchtitan job-config fragment for this layout (see ``engine.scale.torchtitan``)."""
        return torchtitan_toml(self.model, self.layout, self.layers_per_stage, csv_path)

    @cached_property
    def family_table(self) -> tuple[FamilyComparison, ...]:
        """``compare_families`` at this plan's inputs (computed once, on first use)."""
        return compare_families(self.model, self.gpu, self.layout, self.measured)

    def compare_families(self) -> tuple[FamilyComparison, ...]:
        return self.family_table

    def summary(self) -> dict:
        """The figures the CLI's --json prints and the page shows, as plain numbers (bytes, seconds)."""
        return plan_summary(self)

    def time_shares(self) -> dict[str, float]:
        """Where the GPUs' time over the step goes, as shares of GPUs × step time: each kind of operation and the
        TP/CP collectives and any blocking hand-offs (the roofline's, per stage × m micro-batches), the pipeline's
        bubble, then what outlasts the pipeline: the DP reduction, the tied embedding's all-reduce and the optimizer
        step. They add up to 1; MFU is the GEMMs' and attention's share times the
        share of peak they reach."""
        p, m = self.layout.pipeline_parallel, self.num_microbatches
        total = p * self.step_seconds
        shares = {category: 0.0 for category in CATEGORIES}
        for row in self.stage_costs:  # each copy's stages see their half of the micro-batches
            for category, seconds in row.breakdown.items():
                shares[category] += m / self.layout.copies * seconds / total
        if self.timeline.expert_comm is not None:
            shares["expert all-to-all (exposed)"] = self.timeline.expert_comm["exposed"] / total
        busy = float(sum(self.timeline.busy_per_rank()))
        shares["pipeline bubble"] = (p * self.pipeline_seconds - busy) / total
        # after the pipeline: the last rank to finish's optimizer step, embedding all-reduce, and the rest of the
        # time its DP reduction outlasted the pipeline
        tail = self.step_seconds - self.pipeline_seconds
        last = max(self.step_ends, key=lambda end: end.end)
        optimizer = min(last.optimizer, tail)
        embedding = min(last.end - last.optimizer - last.copies - last.reduced, tail - optimizer)
        copies = min(last.copies, tail - optimizer - embedding)
        shares["DP reduction (exposed)"] = p * (tail - optimizer - embedding - copies) / total
        shares["embedding all-reduce"] = p * embedding / total
        if copies:
            shares["copies' gradient sum"] = p * copies / total
        shares["optimizer step"] = p * optimizer / total
        return shares

    @cached_property
    def kept_per_layer(self) -> list[tuple[str, float]]:
        """What one layer keeps for one micro-batch on one GPU, by operation (``operations.kept_tensors``)."""
        operations = layer_operations(self.model, self.layout, moe=self.model.is_moe)  # an MoE model's typical layer
        return kept_tensors(operations, self.model, self.layout)

    @property
    def kept_per_layer_bytes(self) -> float:
        return sum(size for _, size in self.kept_per_layer)

    @property
    def shortfall(self) -> Shortfall | None:
        """For a plan that does not fit: how far the fullest rank is over, in the layer's own terms (None: fits)."""
        worst = max(self.memory, key=lambda rank: rank.total)
        return None if worst.fits else Shortfall(worst, self.kept_per_layer)


def plan(
    model: ModelSpec | str,
    gpu: GpuSpec | str,
    layout: Layout | None = None,
    measured: Sequence[Mapping[str, float]] | None = None,
) -> Plan:
    """Plan ``layout`` (default: Llama 3 405B's 8K layout) for ``model`` on ``gpu`` (specs or preset keys).
    ``measured``: F, I, W seconds per stage from a real run, simulated instead of the roofline's.

    ValueError, with the arithmetic, for a layout that does not multiply out or cannot hold the model."""
    model = model_named(model) if isinstance(model, str) else model
    gpu = gpu_named(gpu) if isinstance(gpu, str) else gpu
    layout = layout or Layout()
    layout.check(model)
    layers = layout.layers_per_stage(model)
    schedule = build_schedule(layout.family, layout.pipeline_parallel, layout.num_microbatches, layout.chunks)
    exchange = all_to_all(model, gpu, layout)
    expert_comm = expert_comm_per_stage(model, layout, layers, exchange)

    # time: the stages' F, I, W in seconds, each hop's transfer, one pipeline simulated
    costs_per_stage = stage_costs(model, compute_gpu(gpu, layout, exchange), layout, layers)
    given = None if measured is None else measured_rows(measured, len(layers))
    transfer = pipeline_transfer(model, gpu, layout, schedule.placement)
    blocking = not layout.p2p_overlap and bool(transfer.hop_seconds)
    if blocking:  # the exchanges' time is inside the passes; nothing is left in flight between them
        costs_per_stage = with_blocking_exchanges(costs_per_stage, transfer.seconds)
    rows = given or [row.row() for row in costs_per_stage]
    hops = None if blocking else transfer.hop_seconds or None
    simulated = Costs.of(
        stage_costs=rows,
        comm=0.0 if blocking else transfer.seconds,
        hop_comm=hops,
        expert_comm=expert_comm / schedule.stage_share,
    )  # the simulator's unit is one rank's share of the model; a stage is stage_share of it
    timeline = simulate(schedule, simulated)

    # memory: model states of each rank's stages, activations × the simulated in-flight count
    per_stage = stage_parameters(model, layers, layout.copies)
    experts = stage_expert_parameters(model, layers, layout.copies)
    per_rank = rank_parameters(model, layout, schedule, per_stage, experts)
    memory = rank_memory(
        model, gpu, layout, schedule, timeline, layers, per_rank, rank_experts(experts, layout, schedule)
    )

    reductions = gradient_reductions(
        timeline, schedule, gpu, layout, stage_gpu_parameters(model, layout, schedule, per_stage, experts)
    )
    model_flops, hardware_flops = step_flops(model, layout)
    parameters_closed_form, flops_closed_form = closed_forms(model, layout)
    return Plan(
        model=model,
        gpu=gpu,
        layout=layout,
        schedule=schedule,
        timeline=timeline,
        layers_per_stage=layers,
        stage_costs=costs_per_stage,
        measured=given,
        costs=simulated,
        parameters=model.parameter_count(),
        parameters_closed_form=parameters_closed_form,
        parameters_per_stage=tuple(per_stage),
        model_flops_per_step=model_flops,
        hardware_flops_per_step=hardware_flops,
        flops_closed_form=flops_closed_form,
        transfer=transfer,
        all_to_all=exchange,
        expert_comm_per_stage=expert_comm,
        active_parameters=model.active_parameter_count(),
        allreduce=reductions,
        step_ends=step_ends(model, gpu, layout, schedule, reductions, [rank.parameters for rank in memory]),
        memory=memory,
        notes=plan_notes(model, layout, transfer),
    )


def plan_preset(name: str) -> Plan:
    """Plan a published layout (``LAYOUT_PRESETS``) as it stands."""
    preset = layout_preset_named(name)
    return plan(preset.model, preset.gpu, preset.layout)


def compare_families(
    model: ModelSpec, gpu: GpuSpec, layout: Layout, measured: Sequence[Mapping[str, float]] | None = None
) -> tuple[FamilyComparison, ...]:
    """Every family at this layout (each with its own chunks: the chosen v for the families that take it,
    their fixed v for the others), sorted by step time among those that fit, then those that do not, then
    those that cannot run it (with the reason)."""
    rows = []
    for name, family in FAMILIES.items():
        chunks = layout.chunks if family.takes_chunks else None
        try:
            changed = dataclasses.replace(layout, family=name, chunks=chunks)
            result = plan(model, gpu, changed, measured if changed.num_stages == layout.num_stages else None)
        except ValueError as error:
            rows.append(FamilyComparison(name, family.title, chunks, None, None, None, False, str(error)))
            continue
        rows.append(
            FamilyComparison(
                family=name,
                title=family.title,
                chunks=result.layout.num_chunks,
                step_seconds=result.step_seconds,
                bubble_fraction=result.bubble_fraction,
                peak_memory_bytes=result.peak_memory_bytes,
                fits=result.fits,
            )
        )
    return tuple(sorted(rows, key=lambda row: (row.error is not None, not row.fits, row.step_seconds or 0.0)))
