"""Command line: ``python -m engine simulate ...``. Bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .costs import Costs
from .ir import Schedule
from .models import MODEL_KINDS, ModelConfig
from .runtime.setup import BACKENDS, DEVICES, RunConfig
from .schedules import FAMILIES, build_schedule
from .simulate import simulate
from .validate import validate


class UsageError(Exception):
    """A bad command line; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print the whole usage block
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number ≥ 0, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0")
    return value


def _check_writable(path: str | None) -> None:
    """Fail before the work, not after it, when the trace cannot be written."""
    if path is None:
        return
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as error:
        raise UsageError(f"cannot write the trace to {path}: {error.strerror}") from None
    if not existed:
        os.remove(path)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="The pipeline-parallelism lab's engine.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sim = commands.add_parser("simulate", help="time a schedule with the exact simulator")
    sim.add_argument("--schedule", choices=list(FAMILIES), help="schedule family")
    sim.add_argument("--from-csv", metavar="FILE", help="simulate a PyTorch-format per-rank CSV instead")
    sim.add_argument("--ranks", type=_positive_int, help="pipeline ranks (devices), p")
    sim.add_argument("--microbatches", type=_positive_int, help="micro-batches per step, m")
    sim.add_argument("--chunks", type=_positive_int, help="stages per rank, v (interleaved-1f1b, looped-bfs)")
    sim.add_argument("--costs", default="F=1,B=2", help='durations per rank share: "F=1,B=2" or "F=1,I=1,W=1"')
    sim.add_argument("--comm", type=_non_negative_float, default=0.0, help="transfer time between ranks")
    sim.add_argument("--stage-scale", metavar="S0,S1,...", help="cost multiplier per stage, for imbalance")
    sim.add_argument("--recompute", action="store_true", help="re-run the forward before each backward")
    sim.add_argument("--grid", action="store_true", help="print the rank × step grid")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace")
    run = commands.add_parser("run", help="execute a schedule on a toy model, measure it, compare with the simulator")
    run.add_argument("--schedule", choices=list(FAMILIES), default="1f1b", help="schedule family")
    run.add_argument("--ranks", type=_positive_int, default=4, help="pipeline ranks (devices), p")
    run.add_argument("--microbatches", type=_positive_int, default=8, help="micro-batches per step, m")
    run.add_argument("--chunks", type=_positive_int, help="stages per rank, v (interleaved-1f1b, looped-bfs)")
    run.add_argument("--model", choices=MODEL_KINDS, default="mlp", help="toy model")
    run.add_argument("--layers", type=_positive_int, help="blocks (default: 8)")
    run.add_argument("--hidden", type=_positive_int, help="width (default: mlp 512, gpt 128)")
    run.add_argument("--batch", type=_positive_int, help="samples per step (default: mlp 128, gpt 32)")
    run.add_argument("--seq-len", type=_positive_int, default=32, help="tokens per sample (gpt)")
    run.add_argument("--vocab", type=_positive_int, default=128, help="vocabulary (gpt)")
    run.add_argument("--heads", type=_positive_int, default=4, help="attention heads (gpt)")
    run.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--partition", default="balanced", help="balanced, llama3, or blocks per stage like 4,5,5,4")
    run.add_argument("--backend", choices=BACKENDS, default="emulated")
    run.add_argument("--device", choices=DEVICES, default="auto")
    run.add_argument("--recompute", action="store_true", help="keep only stage inputs; re-run forwards")
    run.add_argument("--steps", type=_positive_int, default=2, help="steps to run; the last one is reported")
    run.add_argument("--transfer-ms", type=_non_negative_float, help="emulated: set the transfer time (default: measured)")
    run.add_argument("--timeout", type=_positive_float, default=30.0, help="distributed: seconds a rank may wait")
    run.add_argument("--fail-at", metavar="RANK:ACTION", help=argparse.SUPPRESS)  # failure injection (tests)
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace (compute and waits per rank)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _schedule_from(args) -> Schedule:
    if args.from_csv:
        if args.schedule:
            raise UsageError("give --schedule or --from-csv, not both")
        try:
            with open(args.from_csv) as handle:
                text = handle.read()
        except OSError as error:
            raise UsageError(f"cannot read {args.from_csv}: {error.strerror}") from None
        schedule = validate(Schedule.from_csv(text, num_microbatches=args.microbatches))
        for flag, given, found in (("--ranks", args.ranks, schedule.num_ranks),
                                   ("--chunks", args.chunks, schedule.stages_per_rank)):
            if given is not None and given != found:
                raise UsageError(f"{flag} {given} does not match {args.from_csv}, which has {found}")
        return schedule
    missing = [flag for flag, value in (("--schedule", args.schedule), ("--ranks", args.ranks),
                                        ("--microbatches", args.microbatches)) if value is None]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or give --from-csv FILE)")
    return build_schedule(args.schedule, args.ranks, args.microbatches, args.chunks)


def _numbers(text: str, flag: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{flag} takes numbers separated by commas, got {text!r}") from None


def simulate_command(args) -> int:
    _check_writable(args.trace)
    schedule = _schedule_from(args)
    costs = Costs.parse(args.costs, comm=args.comm, recompute=args.recompute,
                        stage_scale=_numbers(args.stage_scale, "--stage-scale") if args.stage_scale else None)
    timeline = simulate(schedule, costs)
    summary = timeline.summary()
    summary.update(schedule=schedule.name, microbatches=schedule.num_microbatches,
                   stages_per_rank=schedule.stages_per_rank, placement=schedule.placement)
    if args.trace:
        timeline.write_chrome_trace(args.trace)
    if args.grid and not args.json:
        print(schedule.grid())
        print()
    if args.json:
        if args.grid:
            summary["grid"] = schedule.grid()
        print(json.dumps(summary))
        return 0
    p = schedule.num_ranks
    print(f"{schedule.name}: {p} ranks × {schedule.stages_per_rank} stage(s) each, "
          f"{schedule.num_microbatches} micro-batches, {summary['num_actions']} actions")
    print(f"makespan        {summary['makespan']:g}")
    print(f"bubble_fraction {summary['bubble_fraction']:.4f}  (idle / (ranks × makespan))")
    print(f"bubble_ratio    {summary['bubble_ratio']:.4f}  (idle / busy)")
    print("rank  busy      idle      idle-in-span  peak-memory")
    for r in range(p):
        print(f"{r:>4}  {summary['busy'][r]:<8g}  {summary['idle'][r]:<8g}  {summary['span_idle'][r]:<12g}  "
              f"{summary['peak_memory'][r]:g}")
    if args.trace:
        print(f"trace written to {args.trace} (open it in ui.perfetto.dev or chrome://tracing)")
    return 0


MODEL_DEFAULTS = {"mlp": {"hidden": 512, "batch": 128}, "gpt": {"hidden": 128, "batch": 32}}


def run_command(args) -> int:
    from .runtime import run

    defaults = MODEL_DEFAULTS[args.model]
    model = ModelConfig(kind=args.model, layers=args.layers or 8, hidden=args.hidden or defaults["hidden"],
                        batch=args.batch or defaults["batch"], seq_len=args.seq_len, vocab=args.vocab,
                        heads=args.heads, seed=args.seed, dtype=args.dtype)
    config = RunConfig(schedule=args.schedule, ranks=args.ranks, microbatches=args.microbatches, chunks=args.chunks,
                       model=model, partition=args.partition, backend=args.backend, device=args.device,
                       recompute=args.recompute, steps=args.steps, transfer_ms=args.transfer_ms,
                       timeout_s=args.timeout, fail_at=args.fail_at)
    _check_writable(args.trace)
    result = run(config, progress=not args.quiet and not args.json)
    if result is None:  # a torchrun rank other than 0
        return 0
    if args.trace:
        result.measured.write_chrome_trace(args.trace)
    summary = result.summary()
    if args.json:
        print(json.dumps(summary))
        return 0
    p = config.ranks
    print(f"{summary['schedule']} on the {model.kind} ({model.layers} blocks, hidden {model.hidden}), "
          f"{p} ranks, {config.microbatches} micro-batches, {summary['backend']} on {summary['device']}")
    for note in summary["notes"]:
        print(f"  {note}")
    print(f"makespan          {summary['makespan']:.3f} ms measured, {summary['predicted_makespan']:.3f} ms "
          f"predicted from the measured costs (error {summary['prediction_error']:+.1%})")
    print(f"bubble_fraction   {summary['bubble_fraction']:.4f} measured, "
          f"{summary['predicted_bubble_fraction']:.4f} predicted")
    print(f"loss              {summary['loss']:.6f} (unsplit model: {summary['reference_loss']:.6f})")
    print(f"max_grad_error    {summary['max_grad_error']:.2e} (largest relative gradient difference from the "
          f"unsplit model)")
    if summary["overhead_fraction"] is not None:
        print(f"bookkeeping       {summary['overhead_fraction']:.1%} of the step's wall time outside timed actions")
    print("rank  peak activation bytes  modelled peak (micro-batches of a rank's share)")
    for r in range(p):
        print(f"{r:>4}  {summary['peak_memory_bytes'][r]:>21,}  {summary['peak_memory_model'][r]:g}")
    if args.trace:
        print(f"trace written to {args.trace} (open it in ui.perfetto.dev)")
    return 0


COMMANDS = {"simulate": simulate_command, "run": run_command}


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except (UsageError, ValueError) as error:  # a ScheduleError is a ValueError whose grid prints whole
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a run that failed (ActionFailed, RunFailed): say where, exit 1
        print(f"error: {error}", file=sys.stderr)
        return 1
