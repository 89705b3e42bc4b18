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
from dataclasses import dataclass
from functools import partial

from ..files import check_output, write_text
from ..options import Declared, add_extras, add_flags, choose, declared, given_flags, whole
from ..schedules import DEFAULT_CHUNKS
from .calibration import band_of
from .plan import Plan, plan
from .presets import LAYOUT_PRESETS
from .records import gigabytes, layers_text
from .request import CUSTOM, CUSTOM_GPU, CUSTOM_MODEL, PlanRequest

REQUIRED_CUSTOM_MODEL = ("layers", "hidden", "heads", "vocab")
REQUIRED_CUSTOM_GPU = CUSTOM_GPU[:4]
LAYOUT = ("tp", "pp", "dp", "cp", "seq", "global_batch", "microbatch_size", "family", "chunks", "split", "recompute",
          "zero", "gradient_precision", "tp_overlap", "ep", "fp8", "measured")  # fmt: skip
SWITCHED_OFF = ("sequence_parallel", "flash_attention", "dp_overlap", "p2p_overlap")
"""Settings on by default: each has a --no-… flag."""
MAX_GPUS = 10**9
"""``--gpus`` takes any whole number up to this: the layout refuses one that TP × PP × DP × CP does not make."""

EPILOG = """\
defaults: Llama 3 405B on H100s as in its 8K pre-training (Llama 3 paper, Table 4): TP 8, PP 16, DP 64,
          sequence 8,192, global batch 2,048, micro-batch 1, interleaved-1f1b with v = 8 (the paper's chunk
          rule), llama3 split, no recomputation, ZeRO-2 with FP32 gradients; the H100's calibrated GEMM share.
limits:   layers ≤ 10,000; one pipeline is simulated: PP × micro-batches × chunks ≤ 131,072.
"""


@dataclass(frozen=True)
class PlanStart(Declared):
    """What ``plan`` takes beside ``PlanRequest``'s settings: a published layout to start from, and the number of
    GPUs to check the layout against (the Plan page works the latter out itself)."""

    layout_preset: str | None = declared(
        None, choose("layout_preset", LAYOUT_PRESETS, "Layout preset", "a published layout to start from")
    )
    num_gpus: int | None = declared(
        None, whole("gpus", 1, MAX_GPUS, "GPUs", "GPUs in all, checked against TP × PP × DP × CP")
    )


def add_plan_parser(commands) -> None:
    """Add ``plan`` to the CLI's subcommands (``commands`` is argparse's subparsers action): every setting's
    flag is derived from its declaration in ``PlanRequest`` (type, bounds, choices, help), and defaults to None
    so that the command tells a given flag from the preset's value."""
    parser = commands.add_parser(
        "plan",
        help="plan a pipeline for a real model on real GPUs: step time, MFU, bubble, memory per GPU",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    flags = partial(add_flags, given_only=True)
    flags(parser, PlanStart, ("layout_preset",))
    flags(parser, PlanRequest, ("model",))
    flags(parser.add_argument_group("custom model (with --model custom)"), PlanRequest, CUSTOM_MODEL)
    flags(parser, PlanRequest, ("gpu",))
    flags(parser.add_argument_group("custom GPU (with --gpu custom)"), PlanRequest, CUSTOM_GPU)
    layout = parser.add_argument_group("layout")
    flags(layout, PlanRequest, LAYOUT[:4])
    flags(layout, PlanStart, ("num_gpus",))
    flags(layout, PlanRequest, LAYOUT[4:])
    flags(layout, PlanRequest, SWITCHED_OFF, negated=True)
    add_extras(parser.add_argument_group("output"), ("json", "compare", "csv", "torchtitan"))


def _flag(name: str) -> str:
    return PlanRequest.option(name).cli_flag


def request_from_flags(args: argparse.Namespace) -> PlanRequest:
    """The request the flags ask for: the layout preset's values (else the defaults) under the given flags. A
    custom model or GPU takes only what its flags say (its other sizes follow from them: FFN 4h, key/value heads
    = heads, the sequence 2,048, 8 GPUs a node); a new family without ``--chunks`` takes its own v."""
    base = PlanRequest.from_preset(args.layout_preset) if args.layout_preset else PlanRequest()
    given = given_flags(args, [name for name, _ in PlanRequest.options()])
    model = given.get("model", base.model)
    custom_model = {name: value for name, value in given.items() if name in CUSTOM_MODEL}
    if model == CUSTOM:
        missing = [_flag(name) for name in REQUIRED_CUSTOM_MODEL if name not in custom_model]
        if missing:
            raise ValueError(f"--model custom needs {', '.join(missing)}")
        given.setdefault("ffn", 4 * given["hidden"])
        given.setdefault("kv_heads", given["heads"])
        given.setdefault("seq", 2_048)
    elif custom_model:
        raise ValueError(f"{', '.join(map(_flag, custom_model))} describe a custom model: add --model custom")
    elif "model" in given and "seq" not in given:
        given["seq"] = PlanRequest(model=model).model_spec().seq_length
    custom_gpu = [name for name in given if name in CUSTOM_GPU]
    if given.get("gpu", base.gpu) == CUSTOM:
        missing = [_flag(name) for name in REQUIRED_CUSTOM_GPU if name not in given]
        if missing:
            raise ValueError(f"--gpu custom needs {', '.join(missing)}")
        given.setdefault("gpus_per_node", 8)
    elif custom_gpu:
        raise ValueError(f"{', '.join(map(_flag, custom_gpu))} describe a custom GPU: add --gpu custom")
    if "family" in given and "chunks" not in given:
        given["chunks"] = DEFAULT_CHUNKS  # the new family's own v, not the preset's
    for name in SWITCHED_OFF:
        if getattr(args, name, None) is not None:
            given[name] = getattr(args, name)
    if args.num_gpus is not None:
        given["num_gpus"] = args.num_gpus
    return dataclasses.replace(base, **given)


def plan_command(args, print_json: Callable[[dict], None]) -> int:
    """Run ``plan``; ``print_json`` is the CLI's printer (floats cut to 12 digits, never NaN)."""
    for path, what in ((args.csv, "schedule CSV"), (args.torchtitan, "torchtitan config")):
        if path is not None and path != "-":  # before the work; an empty name refused, not skipped
            check_output(path, what=what)
    result = plan(*request_from_flags(args).resolve())
    if args.csv is not None:
        write_text(args.csv, result.schedule_csv(), what="schedule CSV")
    toml = result.torchtitan_toml(args.csv or "schedule.csv")
    if args.torchtitan is not None and args.torchtitan != "-":
        write_text(args.torchtitan, toml, inputs=[args.csv] if args.csv else [], what="torchtitan config")
    band = band_of(result)
    if args.json:
        summary = result.summary()
        summary["band"] = None if band is None else band.summary(result)
        summary["torchtitan_toml"] = toml
        if args.compare:
            summary["families"] = [dataclasses.asdict(row) for row in result.compare_families()]
        print_json(summary)
        return 0
    print(describe(result))
    if band is not None:
        low, high = band.step_seconds(result.step_seconds)
        print(f"band              a run like the published ones: {low:.3f}–{high:.3f} s; {band.words()}")
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
        f"layers per stage  {layers_text(result.layers_per_stage)}",
        f"parameters        {result.parameters:,}"
        + (f" (Eq. 2: {result.parameters_closed_form:,.0f})" if result.parameters_closed_form else ""),
        *moe_lines(result),
        f"FLOPs per step    {result.model_flops_per_step:.4g} model, {result.hardware_flops_per_step:.4g} with "
        f"recomputation" + (f" (Eq. 3: {result.flops_closed_form:.4g})" if result.flops_closed_form else ""),
        f"step time         {result.step_seconds:.3f} s (pipeline {result.pipeline_seconds:.3f} s, then the DP "
        f"all-reduce)",
        f"tokens/s          {result.tokens_per_second:,.0f} "
        f"({result.tokens_per_second / result.num_gpus:,.0f} per GPU)",
        f"MFU               {result.mfu:.1%} (with recomputation {result.hfu:.1%}); {result.tflops_per_gpu:,.0f} "
        f"TFLOP/s per GPU; all GPUs {result.achieved_flops_per_second / 1e15:,.1f} PFLOP/s",
        f"GEMM share        {result.gpu.gemm_share:.1%} of peak for a large GEMM ({result.gpu.gemm_share_source})",
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
    if result.shortfall is not None:
        lines.append(f"shortfall         {result.shortfall.words()}")
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def moe_lines(result: Plan) -> list[str]:
    """An MoE plan's experts and its all-to-all, in lines (none for a dense model)."""
    model, layout = result.model, result.layout
    if not model.is_moe:
        return []
    lines = [
        f"experts           {model.experts} routed + {model.shared_experts} shared, {model.experts_per_token} per "
        f"token; {result.active_parameters:,} parameters active of {result.parameters:,}; EP "
        f"{layout.expert_parallel}: {model.experts // layout.expert_parallel} experts a GPU"
        + ("; FP8 GEMMs" if layout.fp8 else ""),
    ]
    exchange, simulated = result.all_to_all, result.timeline.expert_comm
    if exchange is not None and simulated is not None:
        lines.append(
            f"all-to-all        {exchange.seconds * 1e3:.3f} ms a layer each way ({exchange.tokens:,.0f} tokens × "
            f"{exchange.nodes} {'nodes' if exchange.link != 'NVLink' else 'GPUs'} over {exchange.link}); "
            f"{result.expert_comm_per_stage * 1e3:.3f} ms a stage and micro-batch; {simulated['hidden_fraction']:.1%} "
            f"of it hidden under the other micro-batch's compute"
        )
    return lines


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
