"""``python -m engine run``: execute a schedule on a toy model, measure it, and compare it with the simulator's
prediction from the costs it measured (text, or one JSON object; a Perfetto trace with ``--trace``).

Registered by ``engine.cli`` (``add_run_parser`` adds the subcommand, ``run_command`` runs it). PyTorch is
imported only when a run starts.
"""

from __future__ import annotations

import sys

from ..files import shown
from ..model_config import ModelConfig
from ..options import add_extras, add_flags
from ..terminal import check_trace_output, print_json, write_trace
from .clocks import CLOCKS
from .config import RunConfig
from .settings import RunSettings


def add_run_parser(commands) -> None:
    """Add ``run`` to the engine's subcommands: its flags are ``RunSettings``'s settings, then the outputs."""
    parser = commands.add_parser(
        "run", help="execute a schedule on a toy model, measure it, compare with the simulator"
    )
    add_flags(parser, RunSettings)
    add_extras(parser, ("fail_at", "json", "trace", "quiet"))


def _tqdm_progress(enabled: bool):
    """A progress callback drawn by tqdm on stderr, and the function that closes the bar."""
    if not enabled:
        return (lambda done, total, note: None), (lambda: None)
    from tqdm import tqdm

    bars: list = []

    def progress(done: int, total: int, note: str) -> None:
        if not bars:
            bars.append(tqdm(total=total, file=sys.stderr, unit="action", dynamic_ncols=True))
        bar = bars[0]
        if bar.total != total:
            bar.reset(total=total)
        bar.set_description(note, refresh=False)
        bar.update(done - bar.n)

    def close() -> None:
        for bar in bars:
            bar.close()

    return progress, close


def run_command(args) -> int:
    """Build the experiment from the flags, run it (with a progress bar), then print or write what it measured."""
    config = _run_config(args)
    check_trace_output(args.trace)
    from . import run

    progress, close = _tqdm_progress(not args.quiet and not args.json)
    try:
        result = run(config, progress=progress)
    finally:
        close()
    if result is None:  # a torchrun rank other than 0
        return 0
    if args.trace is not None:
        write_trace(result.measured, args.trace)
    summary = result.summary()
    if args.json:
        print_json(summary)
        return 0
    _print_run(summary, config)
    if args.trace is not None:
        print(f"trace written to {shown(args.trace)} (open it in ui.perfetto.dev)")
    return 0


def _run_config(args) -> RunConfig:
    model = ModelConfig(
        kind=args.model,
        layers=args.layers,
        hidden=args.hidden,
        batch=args.batch,
        seq_len=args.seq_len,
        vocab=args.vocab,
        heads=args.heads,
        seed=args.seed,
        dtype=args.dtype,
    )
    return RunConfig(
        family=args.schedule,
        num_ranks=args.ranks,
        num_microbatches=args.microbatches,
        num_chunks=args.chunks,
        model=model,
        partition=args.partition,
        backend=args.backend,
        device=args.device,
        recompute=args.recompute,
        repeats=args.repeats,
        estimator=args.estimator,
        clock=args.clock,
        warmup_steps=args.warmup_steps,
        transfer_ms=args.transfer_ms,
        timeout_s=args.timeout,
        fail_at=args.fail_at,
    )


def _print_run(summary: dict, config: RunConfig) -> None:
    """A run's summary as lines of text: what ran, the makespan against the prediction, loss and gradients,
    memory per rank."""
    model, p = config.model, config.num_ranks
    print(
        f"{summary['schedule']} on the {model.kind} ({model.layers} blocks, hidden {model.hidden}), "
        f"{p} ranks, {config.num_microbatches} micro-batches, {summary['backend']} on {summary['device']}"
    )
    for note in summary["notes"]:
        print(f"  {note}")
    low, high = summary["makespan_spread"]
    placed = "from each action's fastest" if summary["estimator"] == "min" else "from each action's median"
    if config.backend == "distributed":
        placed = "the step with the median time"
    print(
        f"makespan          {summary['makespan']:.3f} ms measured ({placed} of {summary['repeats']} step(s); "
        f"the steps took {low:.3f}–{high:.3f}), {summary['predicted_makespan']:.3f} ms predicted from the "
        f"measured costs (error {summary['prediction_error']:+.1%})"
    )
    if summary["interference"] is not None and not summary["interference"]["busy"]:  # the notice is in the notes
        print(f"interference      {summary['interference']['sentence']}")
    print(f"clock             {summary['clock']}: {CLOCKS[summary['clock']]}")
    print(
        f"bubble_fraction   {summary['bubble_fraction']:.4f} measured, "
        f"{summary['predicted_bubble_fraction']:.4f} predicted"
    )
    print(f"loss              {summary['loss']:.6f} (unsplit model: {summary['reference_loss']:.6f})")
    print(
        f"max_grad_error    {summary['max_grad_error']:.2e} (largest relative gradient difference from the "
        f"unsplit model)"
    )
    if summary["overhead_fraction"] is not None:
        print(f"bookkeeping       {summary['overhead_fraction']:.1%} of the step's CPU time outside timed actions")
    print("rank  peak activation bytes  modelled peak (micro-batches of a rank's share)  weight bytes")
    weights = summary["weight_bytes"] or [0] * p
    for r in range(p):
        print(f"{r:>4}  {summary['peak_memory_bytes'][r]:>21,}  {summary['peak_memory_model'][r]:<47g}  {weights[r]:,}")
