"""A plan as plain numbers (bytes, seconds): what ``python -m engine plan --json`` prints."""

from __future__ import annotations

from typing import Any


def plan_summary(plan: Any) -> dict:
    """The figures of ``plan`` (an ``engine.scale.Plan``) the CLI's --json prints and the page shows."""
    s = plan.layout.sequence(plan.model)
    return {
        "model": plan.model.name,
        "gpu": plan.gpu.name,
        "layout": {
            "tp": plan.layout.tensor_parallel,
            "pp": plan.layout.pipeline_parallel,
            "dp": plan.layout.data_parallel,
            "cp": plan.layout.context_parallel,
            "gpus": plan.num_gpus,
            "seq": s,
            "global_batch": plan.layout.global_batch,
            "microbatch_size": plan.layout.microbatch_size,
            "microbatches": plan.num_microbatches,
            "schedule": plan.layout.family,
            "chunks": plan.layout.num_chunks,
            "stages": plan.layout.num_stages,
            "split": plan.layout.split if isinstance(plan.layout.split, str) else list(plan.layout.split),
            "recompute": plan.layout.recompute,
            "zero": plan.layout.zero,
            "sequence_parallel": plan.layout.sequence_parallel,
            "flash_attention": plan.layout.flash_attention,
            "gradient_precision": plan.layout.gradient_precision,
            "tp_overlap": plan.layout.tp_overlap,
            "dp_overlap": plan.layout.dp_overlap,
            "p2p_overlap": plan.layout.p2p_overlap,
        },
        "gemm_share": plan.gpu.gemm_share,
        "gemm_share_source": plan.gpu.gemm_share_source,
        "layers_per_stage": list(plan.layers_per_stage),
        "stages_per_rank": [list(rank.stages) for rank in plan.memory],
        "parameters": plan.parameters,
        "active_parameters": plan.active_parameters,
        "parameters_eq2": plan.parameters_closed_form,
        "parameters_per_stage": list(plan.parameters_per_stage),
        "model_flops_per_step": plan.model_flops_per_step,
        "hardware_flops_per_step": plan.hardware_flops_per_step,
        "flops_per_step_eq3": plan.flops_closed_form,
        "step_seconds": plan.step_seconds,
        "pipeline_seconds": plan.pipeline_seconds,
        "allreduce_seconds": max(step.end - step.start for step in plan.allreduce),
        "embedding_allreduce_seconds": max(end.embedding for end in plan.step_ends),
        "optimizer_seconds": max(end.optimizer for end in plan.step_ends),
        "tokens_per_second": plan.tokens_per_second,
        "mfu": plan.mfu,
        "hfu": plan.hfu,
        "bubble_fraction": plan.bubble_fraction,
        "achieved_flops_per_second": plan.achieved_flops_per_second,
        "tflops_per_gpu": plan.tflops_per_gpu,
        "hardware_tflops_per_gpu": plan.hardware_tflops_per_gpu,
        "transfer": {
            "bytes": plan.transfer.bytes,
            "seconds": plan.transfer.seconds,
            "hop_seconds": list(plan.transfer.hop_seconds),
            "link": plan.transfer.link,
        },
        "measured_stage_seconds": None if plan.measured is None else [dict(row) for row in plan.measured],
        "stage_seconds": _stages(plan),
        "memory": _memory(plan),
        "capacity_bytes": plan.gpu.memory_bytes,
        "fits": plan.fits,
        "memory_message": plan.memory_message,
        "notes": list(plan.notes),
        "moe": _moe(plan),
    }


def _moe(plan: Any) -> dict | None:
    """An MoE plan's experts: parameters active and total, EP, and the all-to-all per micro-batch and how much of
    it the simulated schedule hid (``Timeline.expert_comm``)."""
    if not plan.model.is_moe:
        return None
    exchange, simulated = plan.all_to_all, plan.timeline.expert_comm
    return {
        "total_parameters": plan.parameters,
        "active_parameters": plan.active_parameters,
        "ep": plan.layout.expert_parallel,
        "fp8": plan.layout.fp8,
        "all_to_all_layer_seconds": None if exchange is None else exchange.seconds,
        "all_to_all_link": None if exchange is None else exchange.link,
        "all_to_all_nodes_per_token": None if exchange is None else exchange.nodes,
        "all_to_all_stage_seconds": plan.expert_comm_per_stage,
        "all_to_all_step_seconds": None if simulated is None else simulated["total"],
        "all_to_all_hidden_seconds": None if simulated is None else simulated["hidden"],
        "all_to_all_hidden_fraction": None if simulated is None else simulated["hidden_fraction"],
    }


def _stages(plan: Any) -> list[dict]:
    """Each stage's F, I, W and where its time goes, seconds."""
    return [
        {
            "stage": row.stage,
            "layers": row.layers,
            "forward": row.forward,
            "backward_input": row.backward_input,
            "backward_weight": row.backward_weight,
            "communication": row.communication,
            "breakdown": dict(row.breakdown),
        }
        for row in plan.stage_costs
    ]


def _memory(plan: Any) -> list[dict]:
    """Each pipeline rank's memory at its peak, bytes."""
    return [
        {
            "rank": rank.rank,
            "stages": list(rank.stages),
            "weights_bytes": rank.weights,
            "gradients_bytes": rank.gradients,
            "optimizer_bytes": rank.optimizer,
            "activations_bytes": rank.activations,
            "total_bytes": rank.total,
            "peak_microbatches_in_flight": rank.peak_microbatches_in_flight,
            "fits": rank.fits,
        }
        for rank in plan.memory
    ]
