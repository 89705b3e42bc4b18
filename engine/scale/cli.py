"""``python -m engine plan``: the Plan page's numbers on the command line (text, or one JSON object).

``engine.cli`` registers the subcommand with ``add_plan_parser`` and runs it with ``plan_command``. Every
flag not given takes the layout preset's value (``--layout-preset``), else the defaults: Llama 3 405B on
H100s laid out as in its 8K pre-training. A bad value is a ValueError, which the CLI prints as one line and
exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

from ..files import write_text
from ..schedules import FAMILIES
from .hardware import DEFAULT_EFFICIENCY, GPU_PRESETS, GpuSpec, gpu_named
from .layout import RECOMPUTE_MODES, SPLIT_RULES, ZERO_STAGES, Layout
from .models import MODEL_PRESETS, MODEL_STYLES, custom_model, model_named
from .plan import Plan, plan
from .presets import LAYOUT_PRESETS, layout_preset_named
from .records import gigabytes

DEFAULT_MODEL, DEFAULT_GPU = "llama3-405b", "h100"

LAYOUT_FLAGS = {
    "tp": "tensor_parallel",
    "pp": "pipeline_parallel",
    "dp": "data_parallel",
    "cp": "context_parallel",
    "gpus": "num_gpus",
    "seq": "seq_length",
    "global_batch": "global_batch",
    "microbatch_size": "microbatch_size",
    "schedule": "family",
    "chunks": "chunks",
    "split": "split",
    "recompute": "recompute",
    "zero": "zero",
}
"""Flag (argparse dest) → ``Layout`` field."""
CUSTOM_MODEL_FLAGS = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "style", "tied_embeddings")
CUSTOM_GPU_FLAGS = ("peak_tflops", "memory_gb", "nvlink_gb_s", "internode_gb_s", "gpus_per_node")

EPILOG = """\
defaults: Llama 3 405B on H100s as in its 8K pre-training (Llama 3 paper, Table 4): TP 8, PP 16, DP 64,
          sequence 8,192, global batch 2,048, micro-batch 1, interleaved-1f1b with v = 2, llama3 split,
          selective recomputation, ZeRO-2; efficiency 0.43.
limits:   layers ≤ 10,000; one pipeline is simulated: PP × micro-batches × chunks ≤ 131,072.
"""


def add_plan_parser(commands) -> None:
    """Add ``plan`` to the CLI's subcommands (``commands`` is argparse's subparsers action)."""
    parser = commands.add_parser(
        "plan",
        help="plan a pipeline for a real model on real GPUs: step time, MFU, bubble, memory per GPU",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--layout-preset", choices=list(LAYOUT_PRESETS), help="a published layout to start from")
    parser.add_argument("--model", choices=[*MODEL_PRESETS, "custom"], help=f"model (default {DEFAULT_MODEL})")
    custom = parser.add_argument_group("custom model (with --model custom)")
    custom.add_argument("--layers", type=int, help="transformer layers")
    custom.add_argument("--hidden", type=int, help="hidden size h")
    custom.add_argument("--ffn", type=int, help="FFN size (default 4h)")
    custom.add_argument("--heads", type=int, help="attention heads")
    custom.add_argument("--kv-heads", type=int, help="key/value heads (default: the heads)")
    custom.add_argument("--vocab", type=int, help="vocabulary")
    custom.add_argument("--style", choices=MODEL_STYLES, help="llama (SwiGLU, RMSNorm) or gpt (GeLU, LayerNorm)")
    custom.add_argument("--tied-embeddings", action="store_true", default=None, help="output layer = embedding")
    parser.add_argument("--gpu", choices=[*GPU_PRESETS, "custom"], help=f"GPU (default {DEFAULT_GPU})")
    hardware = parser.add_argument_group("custom GPU (with --gpu custom)")
    hardware.add_argument("--peak-tflops", type=float, help="dense BF16 peak, TFLOP/s")
    hardware.add_argument("--memory-gb", type=float, help="HBM, GB")
    hardware.add_argument("--nvlink-gb-s", type=float, help="NVLink, GB/s (both directions)")
    hardware.add_argument("--internode-gb-s", type=float, help="network per GPU, GB/s (one direction)")
    hardware.add_argument("--gpus-per-node", type=int, help="GPUs per NVLink node (default 8)")
    parser.add_argument(
        "--efficiency", type=float, help=f"share of peak the kernels reach (default {DEFAULT_EFFICIENCY})"
    )
    layout = parser.add_argument_group("layout")
    layout.add_argument("--tp", type=int, help="tensor parallel")
    layout.add_argument("--pp", type=int, help="pipeline parallel (ranks)")
    layout.add_argument("--dp", type=int, help="data parallel")
    layout.add_argument("--cp", type=int, help="context parallel")
    layout.add_argument("--gpus", type=int, help="GPUs in all, checked against TP × PP × DP × CP")
    layout.add_argument("--seq", type=int, help="sequence length (default: the model's)")
    layout.add_argument("--global-batch", type=int, help="sequences per step")
    layout.add_argument("--microbatch-size", type=int, help="sequences per micro-batch")
    layout.add_argument("--schedule", choices=list(FAMILIES), help="schedule family")
    layout.add_argument("--chunks", type=int, help="v, for the families that take it")
    layout.add_argument("--split", help=f"{', '.join(SPLIT_RULES)}, or layers per stage like 3,4,4,3")
    layout.add_argument("--recompute", choices=RECOMPUTE_MODES)
    layout.add_argument("--zero", type=int, choices=ZERO_STAGES, help="ZeRO stage over DP")
    layout.add_argument(
        "--no-sequence-parallel", dest="sequence_parallel", action="store_false", default=None, help="TP without SP"
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print one JSON object")
    output.add_argument("--compare", action="store_true", help="add every family at this layout")
    output.add_argument("--csv", metavar="FILE", help="write the simulated schedule as PyTorch's CSV")
    output.add_argument("--torchtitan", metavar="FILE", help="write a torchtitan config fragment ('-': print it)")


def _split(text: str) -> str | tuple[int, ...]:
    if text in SPLIT_RULES:
        return text
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(
            f"--split takes {', '.join(SPLIT_RULES)} or layers per stage like 3,4,4,3; got {text!r}"
        ) from None


def _given(args, names) -> dict:
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def resolve(args) -> tuple:
    """The model, GPU, layout and efficiency the flags ask for (preset values under the given ones)."""
    preset = layout_preset_named(args.layout_preset) if args.layout_preset else None
    model_name = args.model or (preset.model if preset else DEFAULT_MODEL)
    custom_model_flags = _given(args, CUSTOM_MODEL_FLAGS)
    if model_name == "custom":
        missing = [_flag(name) for name in ("layers", "hidden", "heads", "vocab") if name not in custom_model_flags]
        if missing:
            raise ValueError(f"--model custom needs {', '.join(missing)}")
        model = custom_model(
            num_layers=args.layers,
            hidden_size=args.hidden,
            num_attention_heads=args.heads,
            vocab_size=args.vocab,
            seq_length=args.seq or 2_048,
            ffn_hidden_size=args.ffn,
            num_kv_heads=args.kv_heads,
            tied_embeddings=bool(args.tied_embeddings),
            style=args.style or "llama",
        )
    elif custom_model_flags:
        raise ValueError(f"{', '.join(map(_flag, custom_model_flags))} describe a custom model: add --model custom")
    else:
        model = model_named(model_name)

    gpu_name = args.gpu or (preset.gpu if preset else DEFAULT_GPU)
    custom_gpu_flags = _given(args, CUSTOM_GPU_FLAGS)
    if gpu_name == "custom":
        missing = [_flag(n) for n in CUSTOM_GPU_FLAGS[:4] if n not in custom_gpu_flags]
        if missing:
            raise ValueError(f"--gpu custom needs {', '.join(missing)}")
        gpu = GpuSpec(
            "custom",
            "custom GPU",
            peak_tflops=args.peak_tflops,
            memory_gb=args.memory_gb,
            nvlink_gb_s=args.nvlink_gb_s,
            internode_gb_s=args.internode_gb_s,
            gpus_per_node=8 if args.gpus_per_node is None else args.gpus_per_node,
        )
    elif custom_gpu_flags:
        raise ValueError(f"{', '.join(map(_flag, custom_gpu_flags))} describe a custom GPU: add --gpu custom")
    else:
        gpu = gpu_named(gpu_name)

    changes = {LAYOUT_FLAGS[name]: value for name, value in _given(args, LAYOUT_FLAGS).items()}
    if "split" in changes:
        changes["split"] = _split(changes["split"])
    if args.sequence_parallel is not None:
        changes["sequence_parallel"] = args.sequence_parallel
    base = preset.layout if preset else Layout()
    if "family" in changes and "chunks" not in changes:
        changes["chunks"] = None  # the new family's own v, not the preset's
    if "num_gpus" not in changes and changes:
        changes["num_gpus"] = None  # the preset's GPU count no longer binds a changed layout
    layout = dataclasses.replace(base, **changes)
    efficiency = args.efficiency if args.efficiency is not None else (preset.efficiency if preset else None)
    return model, gpu, layout, efficiency


def plan_command(args, print_json: Callable[[dict], None]) -> int:
    """Run ``plan``; ``print_json`` is the CLI's printer (floats cut to 12 digits, never NaN)."""
    model, gpu, layout, efficiency = resolve(args)
    result = plan(model, gpu, layout, efficiency)
    if args.csv:
        write_text(args.csv, result.schedule_csv(), what="schedule CSV")
    toml = result.torchtitan_toml(args.csv or "schedule.csv")
    if args.torchtitan and args.torchtitan != "-":
        write_text(args.torchtitan, toml, inputs=[args.csv] if args.csv else [], what="torchtitan config")
    if args.json:
        summary = result.summary()
        summary["torchtitan_toml"] = toml
        if args.compare:
            summary["families"] = [dataclasses.asdict(row) for row in result.compare_families()]
        print_json(summary)
        return 0
    print(describe(result))
    if args.compare:
        print()
        print(family_table(result))
    if args.torchtitan == "-":
        print()
        print(toml, end="")
    return 0


def describe(result: Plan) -> str:
    """The plan in lines of text."""
    layout, model = result.layout, result.model
    s = layout.sequence(model)
    lines = [
        f"{model.title} on {result.num_gpus:,} × {result.gpu.title}: TP {layout.tensor_parallel} × PP "
        f"{layout.pipeline_parallel} × DP {layout.data_parallel} × CP {layout.context_parallel}; {layout.family} "
        f"(v = {layout.num_chunks}), {result.num_microbatches} micro-batches of {layout.microbatch_size} × {s:,} "
        f"tokens",
        f"layers per stage  {', '.join(map(str, result.layers_per_stage))}",
        f"parameters        {result.parameters:,}"
        + (f" (Eq. 2: {result.parameters_closed_form:,.0f})" if result.parameters_closed_form else ""),
        f"FLOPs per step    {result.model_flops_per_step:.4g} model, {result.hardware_flops_per_step:.4g} with "
        f"recomputation" + (f" (Eq. 3: {result.flops_closed_form:.4g})" if result.flops_closed_form else ""),
        f"step time         {result.step_seconds:.3f} s (pipeline {result.pipeline_seconds:.3f} s, then the DP "
        f"all-reduce)",
        f"tokens/s          {result.tokens_per_second:,.0f}",
        f"MFU               {result.mfu:.1%} (with recomputation {result.hfu:.1%}); all GPUs "
        f"{result.achieved_flops_per_second / 1e15:,.1f} PFLOP/s ({result.flops_per_second_at_efficiency / 1e15:,.1f} "
        f"at {result.efficiency:.0%} of peak without bubble or transfers)",
        f"bubble            {result.bubble_fraction:.1%} (idle / (ranks × pipeline time))",
        f"memory            {result.memory_message}",
        "rank  stages          weights  gradients  optimizer  activations      total  in flight",
    ]
    for rank in result.memory:
        stages = ",".join(map(str, rank.stages))
        lines.append(
            f"{rank.rank:>4}  {stages:<14}{gigabytes(rank.weights):>9}{gigabytes(rank.gradients):>11}"
            f"{gigabytes(rank.optimizer):>11}{gigabytes(rank.activations):>13}{gigabytes(rank.total):>11}"
            f"{rank.peak_microbatches_in_flight:>11g}" + ("" if rank.fits else "  over")
        )
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def family_table(result: Plan) -> str:
    """Every family at this layout, fitting ones first by step time."""
    lines = ["family            v   step (s)   bubble   peak memory   fits"]
    for row in result.compare_families():
        if row.error is not None:
            lines.append(f"{row.family:<16}  -   {row.error}")
            continue
        assert row.step_seconds is not None and row.bubble_fraction is not None and row.peak_memory_bytes is not None
        lines.append(
            f"{row.family:<16}  {row.chunks or '-'}  {row.step_seconds:>9.3f}  {row.bubble_fraction:>7.1%}  "
            f"{gigabytes(row.peak_memory_bytes):>12}   {'yes' if row.fits else 'no'}"
        )
    return "\n".join(lines)
