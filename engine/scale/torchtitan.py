"""The layout as a torchtitan job-config fragment (TOML), to paste into a training config.

Field names are torchtitan's (``torchtitan/config/job_config.py``: ``[parallelism]``, ``[training]``,
``[activation_checkpoint]``); schedule names are PyTorch's (``torch.distributed.pipelining.schedules.
get_schedule_class``). A family PyTorch has no class for runs from the lab's CSV through
``pipeline_parallel_schedule_csv`` with ``PipelineScheduleMulti``.
"""

from __future__ import annotations

from .layout import Layout
from .models import ModelSpec


def uniform_layers_per_stage(layers_per_stage: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(layers per stage, first-stage fewer, last-stage fewer) when torchtitan's three numbers describe the
    split exactly: every middle stage the same, the ends at most that many. None otherwise."""
    if len(layers_per_stage) == 1:
        return layers_per_stage[0], 0, 0
    middle = set(layers_per_stage[1:-1]) or {max(layers_per_stage[0], layers_per_stage[-1])}
    if len(middle) != 1:
        return None
    per_stage = middle.pop()
    first, last = layers_per_stage[0], layers_per_stage[-1]
    if not (0 <= first <= per_stage and 0 <= last <= per_stage) or per_stage == 0:
        return None
    return per_stage, per_stage - first, per_stage - last


def module_names_per_stage(layers_per_stage: tuple[int, ...]) -> list[list[str]]:
    """torchtitan's ``module_fqns_per_model_part`` for a Llama-style model: the embedding on the first stage,
    the final norm and output on the last."""
    parts, start = [], 0
    for count in layers_per_stage:
        parts.append([f"layers.{index}" for index in range(start, start + count)])
        start += count
    parts[0].insert(0, "tok_embeddings")
    parts[-1].extend(["norm", "output"])
    return parts


def _toml_list(parts: list[list[str]]) -> str:
    rows = ",\n".join("  [" + ", ".join(f'"{name}"' for name in part) + "]" for part in parts)
    return "[\n" + rows + ",\n]"


def torchtitan_toml(model: ModelSpec, layout: Layout, layers_per_stage: tuple[int, ...], csv_path: str) -> str:
    """The fragment: pipeline degree, schedule, micro-batch size, layers per stage, TP/CP/DP, batch, recompute."""
    dp = layout.data_parallel
    lines = [
        f"# {model.title}: TP {layout.tensor_parallel} × PP {layout.pipeline_parallel} × DP {dp} × CP "
        f"{layout.context_parallel} = {layout.gpus_used:,} GPUs, from the pipeline-parallelism lab's Plan",
        "[parallelism]",
        f"pipeline_parallel_degree = {layout.pipeline_parallel}",
    ]
    schedule = layout.family_spec.pytorch_name  # None: PyTorch has no class; run the lab's CSV
    if schedule is None:
        lines += [
            'pipeline_parallel_schedule = "PipelineScheduleMulti"',
            f'pipeline_parallel_schedule_csv = "{csv_path}"  # {layout.family}: the lab\'s schedule CSV',
        ]
    else:
        lines += [
            f'pipeline_parallel_schedule = "{schedule}"',
            f'# pipeline_parallel_schedule_csv = "{csv_path}"  # to run exactly the simulated order',
        ]
    lines.append(f"pipeline_parallel_microbatch_size = {layout.microbatch_size}")
    if layout.copies > 1:  # DualPipe: stages p..2p−1 are the same blocks again, a second copy of the model
        layers_per_stage = layers_per_stage[: len(layers_per_stage) // layout.copies]
        lines.append(
            f"# {layout.family} holds {layout.copies} copies of the model, each rank a block of each: torchtitan's "
            "pipelining builds one copy and sends stage p − 1's output on to stage p, so it cannot run this schedule; "
            "the parts below are one copy's"
        )
    uniform = uniform_layers_per_stage(layers_per_stage)
    if uniform is None:
        lines.append(f"module_fqns_per_model_part = {_toml_list(module_names_per_stage(layers_per_stage))}")
    else:
        per_stage, first_fewer, last_fewer = uniform
        lines += [
            f"pipeline_parallel_layers_per_stage = {per_stage}",
            f"pipeline_parallel_first_stage_less_layers = {first_fewer}",
            f"pipeline_parallel_last_stage_less_layers = {last_fewer}",
        ]
    lines.append(f"# layers per stage ({len(layers_per_stage)} stages): {', '.join(map(str, layers_per_stage))}")
    lines += [
        f"tensor_parallel_degree = {layout.tensor_parallel}",
        f"context_parallel_degree = {layout.context_parallel}",
    ]
    if layout.zero >= 2:
        reshard = "always" if layout.zero == 3 else "never"
        lines += [
            f"data_parallel_shard_degree = {dp}",
            "data_parallel_replicate_degree = 1",
            f'fsdp_reshard_after_forward = "{reshard}"  # ZeRO-{layout.zero}',
        ]
    else:
        lines += [
            "data_parallel_shard_degree = 1",
            f"data_parallel_replicate_degree = {dp}  # ZeRO-{layout.zero}: torchtitan's DDP (it has no ZeRO-1)",
        ]
    recompute = {
        "none": '"none"',
        "selective": '"none"  # fused attention already re-runs the attention core (Korthikanti\'s selective)',
        "full": '"full"',
    }[layout.recompute]
    lines += [
        "",
        "[training]",
        f"global_batch_size = {layout.global_batch}",
        f"local_batch_size = {layout.global_batch // dp}",
        f"seq_len = {layout.sequence(model)}",
        "",
        "[activation_checkpoint]",
        f"mode = {recompute}",
    ]
    return "\n".join(lines) + "\n"
