"""``python -m engine trace rank*.json[.gz]``: a real job's profiler traces as the lab's measured timeline —
per-rank table, idle by cause, the grid, the every-family table, a Perfetto trace (text, or one JSON object);
one rank's overlapped chunks (DeepSeek's profile of DualPipe) as their kernel times and the communication hidden
under compute (``engine.traces.chunks``).

Registered by ``engine.cli`` (``add_trace_parser`` adds the subcommand, ``trace_command`` runs it). A trace
that cannot be read is a TraceError (a ValueError): one line, exit status 2.
"""

from __future__ import annotations

import sys

from ..codecs import escaped
from ..files import shown
from ..options import Whole, add_extras, add_flags, read_number, read_whole
from ..schedules import FAMILIES
from ..terminal import check_trace_output, print_json, write_trace
from .chunks import OverlappedChunks
from .compare import family_table
from .imported import ImportedRun, ImportOptions
from .isolated import read_traces_isolated
from .reading import TraceError
from .settings import TraceSettings

FILE_RANKS = Whole(0, 1_000_000)
"""The ranks ``--ranks`` may give a file."""


def add_trace_parser(commands) -> None:
    """Add ``trace`` to the engine's subcommands: the files, ``TraceSettings``'s settings, then the outputs."""
    parser = commands.add_parser(
        "trace",
        help="read a real job's per-rank torch.profiler traces: its pipeline timeline, bubble and idle by cause",
        description="Read one torch.profiler (Kineto) trace per rank (.json or .json.gz) of a pipeline-parallel job "
        "and show one step as the lab's measured timeline.",
    )
    add_extras(parser, ("files",))
    add_flags(parser, TraceSettings)
    add_extras(parser, ("compare", "grid", "json", "trace", "quiet"))


def options_from(args) -> ImportOptions:
    expected = args.expect
    if expected and not expected.endswith(".csv") and expected.lower() not in FAMILIES:  # refused before reading
        raise ValueError(
            f"--expect {escaped(expected)}: not a family ({', '.join(FAMILIES)}) nor a schedule CSV (FILE.csv)"
        )
    if expected and expected.endswith(".csv"):  # read and checked as any schedule CSV; its text is the reference
        from ..pytorch_csv import read_csv_file

        expected = read_csv_file(expected).schedule.to_csv()
    return ImportOptions(
        step=args.step,
        ranks=_ranks(args.ranks) if args.ranks else None,
        pattern=args.pattern,
        kinds=args.kinds,
        offsets_ms=_offsets(args.offsets) if args.offsets else None,
        expected=expected,
    )


def _ranks(text: str) -> tuple[int, ...]:
    try:
        return tuple(FILE_RANKS.read(part) for part in text.split(","))
    except ValueError:
        raise TraceError(f"--ranks takes whole numbers separated by commas, one per file, got {text[:80]!r}") from None


def _offsets(text: str) -> dict[int, float]:
    offsets = {}
    for part in text.split(","):
        rank, _, value = part.partition(":")
        try:
            offsets[read_whole(rank)] = read_number(value)
        except ValueError:
            raise TraceError(f"--offsets takes RANK:MS pairs like 1:0.25,2:-0.5, got {part[:40]!r}") from None
    return offsets


def trace_command(args) -> int:
    """Read the traces (with a progress bar over their bytes unless quiet), then print or write the step."""
    progress, close = _bytes_progress(not args.quiet and not args.json)
    try:
        return _trace(args, progress)
    finally:
        close()


def _bytes_progress(enabled: bool):
    """A progress bar over the bytes of the files read (tqdm on stderr), and the function that closes it."""
    if not enabled:
        return None, (lambda: None)
    from tqdm import tqdm

    bars: list = []

    def progress(name: str, done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, file=sys.stderr, unit="B", unit_scale=True, dynamic_ncols=True))
        bars[0].set_description(escaped(name)[-40:], refresh=False)
        bars[0].update(done - bars[0].n)

    def close() -> None:
        for bar in bars:
            bar.close()

    return progress, close


def _trace(args, progress) -> int:
    check_trace_output(args.trace, tuple(args.files))
    run = read_traces_isolated(args.files, options_from(args), progress=progress)
    if isinstance(run, OverlappedChunks):
        return _chunks(run, args)
    if args.trace is not None:
        write_trace(run.timeline, args.trace, tuple(args.files))
    summary = run.summary()
    if args.compare:
        own, rows = family_table(run)
        summary["families"] = {"this_schedule_simulated_ms": own, "rows": [row.__dict__ for row in rows]}
    if args.json:
        if args.grid:
            summary["grid"] = run.schedule.grid()
        print_json(summary)
        return 0
    _print(run, summary, args)
    return 0


PIPELINE_OUTPUTS = (("trace", "--trace"), ("grid", "--grid"), ("compare", "--compare"))
"""The outputs only a pipeline's step has: its timeline, its grid, the families run on its costs."""


def _chunks(chunks: OverlappedChunks, args) -> int:
    """One rank's overlapped chunks: one JSON object, or the figures and a table of the components."""
    asked = [flag for name, flag in PIPELINE_OUTPUTS if getattr(args, name) not in (None, False)]
    if asked:
        raise TraceError(
            f"{chunks.describe()}; {' and '.join(asked)} {'needs' if len(asked) == 1 else 'need'} a pipeline's step, "
            "which one rank's chunks are not"
        )
    if args.json:
        print_json(chunks.summary())
        return 0
    print(chunks.describe())
    print(f"  {chunks.bubble}")
    for note in chunks.notes:
        print(f"  {note}")
    kernels = f"({chunks.communication_kernels:,} kernels, the union of their intervals)"
    print(f"communication   {chunks.communication_ms:10.3f} ms  {kernels}")
    print(f"compute         {chunks.compute_ms:10.3f} ms  ({chunks.compute_kernels:,} kernels, likewise)")
    fraction = "—" if chunks.hidden_fraction is None else f"{chunks.hidden_fraction:.4f}"
    print(f"hidden          {chunks.hidden_ms:10.3f} ms  (communication under compute: {fraction} of it)")
    print(f"exposed         {chunks.exposed_ms:10.3f} ms  (communication with no compute beside it)")
    print(f"GPU busy        {chunks.gpu_busy_ms:10.3f} ms  of a {chunks.gpu_span_ms:.3f} ms span")
    print("component         spans  kernels  kernel (ms)  communication (ms)  compute (ms)  hidden (ms)")
    rows = chunks.components + (() if chunks.outside is None else (chunks.outside,))
    for row in rows:
        print(
            f"{row.label:<17} {row.spans:>5}  {row.kernels:>7}  {row.kernel_ms:>11.3f}  "
            f"{row.communication_kernel_ms:>18.3f}  {row.compute_kernel_ms:>12.3f}  {row.hidden_ms:>11.3f}"
        )
    return 0


def _print(run: ImportedRun, summary: dict, args) -> None:
    schedule = run.schedule
    print(
        f"{len({f.split('#')[0] for f in run.files})} file(s), {run.backend or 'unknown backend'}"
        + (f", ProfilerStep#{run.step}" if run.step is not None else ", the whole trace (no ProfilerStep)")
        + f": {schedule.num_ranks} ranks × {schedule.num_chunks} chunk(s), {schedule.num_microbatches} micro-batches, "
        f"{schedule.placement} placement, {schedule.num_actions} actions"
    )
    print(f"  {run.describe_steps()}")
    for note in run.notes:
        print(f"  {note}")
    if run.order_check is not None and not run.order_checkable:
        print(run.order_check)
    elif run.order_check is not None:
        print(f"order differs from {shown(args.expect)}:\n{run.order_check}")
    elif args.expect:
        print(f"order equals {shown(args.expect)}")
    if args.grid:
        print(schedule.grid())
    print(f"makespan        {summary['makespan']:.3f} ms")
    print(f"bubble_fraction {summary['bubble_fraction']:.4f}  (idle / (ranks × makespan))")
    totals = summary["idle_by_cause"]["total"]
    causes = [f"{cause} {value:.3f} ms" for cause, value in totals.items() if abs(value) > 1e-9]
    print("idle by cause   " + ", ".join(causes))
    for cause, why in summary["idle_by_cause"]["negative"].items():
        print(f"  {cause} is negative: {why}")
    print(f"transfer        {run.transfer_ms:.3f} ms (median hand-off)")
    print("rank  busy (ms)  idle (ms)  waiting (ms)")
    waits = run.timeline.waits
    for rank in range(schedule.num_ranks):
        mine = waits[waits["rank"] == rank] if waits is not None else None
        waited = 0.0 if mine is None else float((mine["end"] - mine["start"]).sum())
        print(f"{rank:>4}  {summary['busy'][rank]:>9.3f}  {summary['idle'][rank]:>9.3f}  {waited:>12.3f}")
    if "families" in summary:
        _print_families(summary["families"])
    if args.trace is not None:
        print(f"trace written to {shown(args.trace)} (open it in ui.perfetto.dev)")


def _print_families(families: dict) -> None:
    own = families["this_schedule_simulated_ms"]
    print(f"every family with these measured costs (this schedule simulated: {own:.3f} ms)")
    for row in families["rows"]:
        if row["step_ms"] is None:
            print(f"  {row['family']:<16} cannot run: {row['note']}")
            continue
        change, memory = row["step_change"], row["peak_memory_ratio"]
        print(f"  {row['family']:<16} step {row['step_ms']:9.3f} ms  {change:+7.1%}  peak memory ×{memory:.2f}")
