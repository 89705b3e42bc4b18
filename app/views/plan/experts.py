"""The "Why these numbers" lines of a mixture-of-experts plan: active and total parameters, MFU on the active
experts' FLOPs, the all-to-all per micro-batch and how much of it the schedule hides, and memory per GPU with the
experts sharded — each with its arithmetic, every number from the engine (``engine.scale.experts``)."""

from engine.scale.experts import DEEPEP_NETWORK_SHARE, DEEPEP_NVLINK_SHARE
from engine.scale.memory import OPTIMIZER_BYTES
from engine.scale.operations import FP8_TILE_BYTES

B, MS = 1e9, 1e3


def moe_lines(result) -> list[str]:
    """Markdown paragraphs for an MoE plan (none for a dense model)."""
    model = result.model
    if not model.is_moe:
        return []
    return [_parameters(model), _mfu(result), *_all_to_all(result), _memory(result)]


def _parameters(model) -> str:
    dense, moe = model.num_layers - model.moe_layers, model.moe_layers
    ends = model.embedding_parameters + model.output_parameters
    mtp = model.mtp_modules * model.mtp_parameters
    idle = model.experts - model.experts_per_token
    return (
        f"**Parameters**: {dense} dense layers × {model.layer_parameters / B:.3f} B + {moe} MoE layers × "
        f"{model.moe_layer_parameters / B:.3f} B + embedding and output {ends / B:.3f} B"
        + (f" + MTP {mtp / B:.3f} B" if mtp else "")
        + f" = **{model.parameter_count() / B:,.1f} B** in all. A token goes through {model.experts_per_token} of the "
        f"{model.experts} routed experts"
        + (f" and {model.shared_experts} shared" if model.shared_experts else "")
        + f": {idle} × {model.expert_parameters / 1e6:.1f} M idle for it in each MoE layer"
        + (" and the MTP module not counted" if mtp else "")
        + f", **{model.active_parameter_count() / B:,.2f} B active**."
    )


def _mfu(result) -> str:
    gpus, peak, step = result.num_gpus, result.gpu.peak_tflops, result.step_seconds
    fp8 = ""
    if result.layout.fp8 and result.gpu.fp8_peak_tflops:
        fp8_mfu = result.model_flops_per_step / (gpus * result.gpu.fp8_peak_flops * step)
        fp8 = f"; against the FP8 peak ({result.gpu.fp8_peak_tflops:g} TFLOP/s) it is {fp8_mfu:.1%}"
    return (
        f"**MFU on the active experts**: model FLOPs count each token's {result.model.experts_per_token} routed "
        f"experts (and the shared ones), not all {result.model.experts}: {result.model_flops_per_step:.3e} per step; "
        f"/ ({gpus:,} × {peak:g} TFLOP/s BF16 × {step:.3g} s) = **{result.mfu:.1%}**{fp8}."
    )


def _all_to_all(result) -> list[str]:
    exchange, simulated = result.all_to_all, result.timeline.expert_comm
    if exchange is None or simulated is None:
        return ["**All-to-all**: none (EP 1: every expert on every GPU)."]
    across = exchange.link != "NVLink"
    link = (result.gpu.internode_gb_s if across else result.gpu.nvlink_gb_s / 2) * B
    shares = DEEPEP_NETWORK_SHARE if across else DEEPEP_NVLINK_SHARE
    where = "nodes" if across else "GPUs"
    value = f"(1 + 4/128) = {FP8_TILE_BYTES:.3f}" if result.layout.fp8 else "2"
    per_layer = (
        f"**All-to-all**, one MoE layer and micro-batch, each way: dispatch {exchange.tokens:,.0f} tokens × "
        f"{exchange.nodes} {where} × {result.model.hidden_size:,} × {value} B = {exchange.dispatch_bytes / 1e6:,.1f} "
        f"MB at {shares['dispatch'] * link / B:.0f} GB/s = {exchange.dispatch_seconds * MS:.3f} ms; combine "
        f"{exchange.combine_bytes / 1e6:,.1f} MB (BF16) at {shares['combine'] * link / B:.0f} GB/s = "
        f"{exchange.combine_seconds * MS:.3f} ms; **{exchange.seconds * MS:.3f} ms** (DeepEP's measured share of "
        f"the {exchange.link} link)."
    )
    hidden = (
        f"Per stage and micro-batch {result.expert_comm_per_stage * MS:.3f} ms (the stages' MoE layers on average); "
        f"summed over the step's actions on all {result.layout.pipeline_parallel} ranks {simulated['total']:.2f} s, "
        f"of which the schedule hid {simulated['hidden']:.2f} s under "
        f"the other micro-batch's compute: **{simulated['hidden_fraction']:.1%} hidden**"
        + ("" if result.layout.family_spec.overlaps_forward_backward else " (this schedule overlaps nothing)")
        + "."
    )
    return [per_layer, hidden]


def _memory(result) -> str:
    layout = result.layout
    rank = max(result.memory, key=lambda held: held.total)
    expert_replicas = layout.tensor_parallel * layout.data_parallel * layout.context_parallel // layout.expert_parallel
    return (
        f"**Memory with the experts sharded**: each GPU holds {result.model.experts // layout.expert_parallel} of the "
        f"{result.model.experts} experts of each MoE layer (EP {layout.expert_parallel}) and 1/{layout.tensor_parallel}"
        f" of the rest; rank {rank.rank} (stages {', '.join(map(str, rank.stages))}) holds "
        f"{rank.parameters / B:.2f} B parameters: weights {rank.weights / B:.1f} GB + gradients "
        f"{rank.gradients / B:.1f} GB + optimizer {rank.optimizer / B:.1f} GB ({OPTIMIZER_BYTES} B a parameter over "
        f"DP {layout.data_parallel}, the experts' over their {expert_replicas} replicas) + activations "
        f"{rank.activations / B:.1f} GB = **{rank.total / B:.1f} GB** of {result.gpu.memory_gb:g}."
    )
