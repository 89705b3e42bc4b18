"""Command line: ``python -m engine simulate|run|plan ...``.

Bad input: one line on stderr, exit status 2. A run that fails: one line, exit 1. Ctrl-C: "interrupted", 130;
SIGTERM and SIGHUP the same, "interrupted by SIGTERM", 128 + the signal's number ([Note: stop signals] in
``engine.runtime.lifetime``: a run's rank processes are ended and its folder removed first).
A closed pipe (``… | head``): quiet, 141. Output that cannot be written (``--trace /dev/full``, ``> /dev/full``):
one line, exit 2. An error quotes at most ``QUOTE_LIMIT`` characters of any value the user gave. Files are
read and written under the rules of ``engine.files`` (an output never replaces an input; a FIFO is refused).
``simulate`` and ``plan`` never import PyTorch; ``run`` imports it when it runs.

Every flag of every command is derived, never written by hand: a command's settings from its settings class
(``engine.options.add_flags``: ``SimulateSettings`` in ``engine.settings``, ``RunSettings`` in
``engine.runtime.settings``, ``SearchRequest`` in ``engine.search.request``, ``TraceSettings`` in
``engine.traces.settings``, ``PlanRequest`` in ``engine.scale.request``), and what is not a setting (``--json``,
``--trace FILE``, …) from the one table ``engine.options.EXTRAS`` (``add_extras``).
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from .attribution import attribute_simulated
from .costs import Costs
from .fast_walk import FIRST_USE_SLOTS
from .files import quoted, shown
from .limits import (
    MAX_CHUNKS,
    MAX_CSV_BYTES,
    MAX_MICROBATCHES,
    MAX_PAIRS,
    MAX_RANKS,
    SIMULATE_BYTES_PER_ACTION,
    simulate_bytes,
)
from .options import add_extras, add_flags, read_number
from .pytorch_csv import read_csv_file
from .runtime.budget import allowance, human_bytes
from .runtime.cli import add_run_parser, run_command
from .runtime.lifetime import Stopped, stop_signals
from .scale.cli import add_plan_parser, plan_command
from .schedules import FAMILIES, build_schedule
from .search.cli import add_search_command, search_command
from .settings import SimulateSettings
from .simulator import simulate
from .terminal import (
    UsageError,
    WatchedOutput,
    bounded,
    check_trace_output,
    print_json,
    say,
    silence_stdout,
    write_trace,
)
from .traces.cli import add_trace_parser, trace_command
from .validation import ScheduleError, validate


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print the whole usage block
        raise UsageError(message)


OPTIONS_TAKING_DASHED_VALUES = ("--partition", "--costs", "--stage-scale")
"""Values like "-1,3,3,3" look like options to argparse; they are joined to their flag before parsing so
the user hears what is wrong with the value, not "expected one argument"."""


def _join_dashed_values(argv: list[str]) -> list[str]:
    joined, index = [], 0
    while index < len(argv):
        if (
            argv[index] in OPTIONS_TAKING_DASHED_VALUES
            and index + 1 < len(argv)
            and argv[index + 1].startswith("-")
            and not argv[index + 1].startswith("--")
        ):
            joined.append(f"{argv[index]}={argv[index + 1]}")
            index += 2
        else:
            joined.append(argv[index])
            index += 1
    return joined


def _inputs(args) -> tuple[str, ...]:
    """The files a command reads, which none of its outputs may replace."""
    return tuple(path for path in (getattr(args, "from_csv", None),) if path)


LIMITS = (
    f"limits: ranks ≤ {MAX_RANKS}, micro-batches ≤ {MAX_MICROBATCHES}, chunks ≤ {MAX_CHUNKS},\n"
    f"        ranks × micro-batches × chunks ≤ {MAX_PAIRS:,} (a few seconds and < 1 GB at the limit),\n"
    f"        a schedule CSV of at most {MAX_CSV_BYTES // 2**20} MiB."
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="The pipeline-parallelism lab's engine.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_simulate_parser(commands)
    add_run_parser(commands)
    add_plan_parser(commands)
    add_search_command(commands)
    add_trace_parser(commands)
    return parser


def _add_simulate_parser(commands) -> None:
    """``simulate``'s flags: ``SimulateSettings``'s settings, then the CSV to read instead and the outputs."""
    parser = commands.add_parser(
        "simulate",
        help="time a schedule with the exact simulator",
        epilog=LIMITS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flags(parser, SimulateSettings)
    add_extras(parser, ("from_csv", "grid", "json", "trace"))


def _schedule_from(args) -> tuple:
    """The schedule to simulate, and the CSV reading it came from (None for a family)."""
    if args.from_csv:
        if args.schedule:
            raise UsageError("give --schedule or --from-csv, not both")
        reading = read_csv_file(args.from_csv, num_microbatches=args.microbatches)
        schedule = reading.schedule
        try:
            validate(schedule)
        except ScheduleError as error:
            if reading.microbatches_inferred:
                raise ScheduleError(
                    f"{shown(args.from_csv)}: {error}\n(micro-batches: {schedule.num_microbatches}, "
                    f"inferred as the most forwards any stage runs; --microbatches sets it)"
                ) from None
            raise ScheduleError(f"{shown(args.from_csv)}: {error}") from None
        for flag, given, found in (
            ("--ranks", args.ranks, schedule.num_ranks),
            ("--chunks", args.chunks, schedule.num_chunks),
        ):
            if given is not None and given != found:
                raise UsageError(f"{flag} {given} does not match {shown(args.from_csv)}, which has {found}")
        return schedule, reading
    missing = [
        flag
        for flag, value in (
            ("--schedule", args.schedule),
            ("--ranks", args.ranks),
            ("--microbatches", args.microbatches),
        )
        if value is None
    ]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or give --from-csv FILE)")
    family = FAMILIES.get(args.schedule)
    chunks = args.chunks or (family.fixed_chunks if family is not None else None) or 2  # interleaved: 2 by default
    check_simulate_memory(args.ranks * args.microbatches * chunks)  # before building anything
    return build_schedule(args.schedule, args.ranks, args.microbatches, args.chunks), None


def check_simulate_memory(num_pairs: int, available: int | None = None) -> None:
    """Refuse, with the arithmetic, a simulation whose memory estimate (``limits.simulate_bytes``) exceeds what
    this process may use here (the run command's ``allowance``: half the least of free memory, the container's
    room and ``ulimit -v``'s)."""
    if num_pairs > MAX_PAIRS:
        return  # the builder refuses it with its own arithmetic
    # up to two walks (the step, and the idle attribution's levels when they differ from it) count towards
    # Numba's load: an upper estimate counts its compiler from half the threshold
    needed = simulate_bytes(num_pairs, compiled=2 * 3 * num_pairs >= FIRST_USE_SLOTS)
    room = allowance(available)
    if needed > room.allowed:
        raise ValueError(
            f"out of memory ahead: simulating {num_pairs:,} (stage, micro-batch) pairs needs about "
            f"{human_bytes(needed)} ({3 * num_pairs:,} actions × {SIMULATE_BYTES_PER_ACTION} B, plus the "
            f"compiler); this process may use {human_bytes(room.allowed)} here ({room.reason}): try fewer "
            f"ranks or micro-batches"
        )


def _numbers(text: str, flag: str) -> tuple[float, ...]:
    try:
        return tuple(read_number(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{flag} takes numbers separated by commas, got {quoted(text)}") from None


def simulate_command(args) -> int:
    check_trace_output(args.trace, _inputs(args))
    schedule, reading = _schedule_from(args)
    costs = Costs.parse(
        args.costs,
        comm=args.comm,
        expert_comm=args.expert_comm,
        shared_links=args.shared_links,
        recompute=args.recompute,
        stage_scale=_numbers(args.stage_scale, "--stage-scale") if args.stage_scale else None,
    )
    timeline = simulate(schedule, costs, check=False)  # validated above
    summary = timeline.summary()
    causes = attribute_simulated(schedule, costs, timeline)
    summary.update(
        schedule=schedule.name,
        microbatches=schedule.num_microbatches,
        chunks=schedule.num_chunks,
        placement=schedule.placement,
        idle_by_cause=causes.as_dict(),
    )
    if reading is not None:
        summary.update(read=reading.describe(), set_aside=reading.set_aside)
    if args.trace is not None:
        write_trace(timeline, args.trace, _inputs(args))
    if args.json:
        if args.grid:
            summary["grid"] = schedule.grid()
        print_json(summary)
        return 0
    if reading is not None:
        print(f"{shown(args.from_csv)}: {reading.describe()}")
    if args.grid:
        print(schedule.grid())
        print()
    p = schedule.num_ranks
    print(
        f"{schedule.name}: {p} ranks × {schedule.num_chunks} chunk(s) each, "
        f"{schedule.num_microbatches} micro-batches, {summary['num_actions']} actions"
    )
    print(f"makespan        {summary['makespan']:g}")
    print(f"bubble_fraction {summary['bubble_fraction']:.4f}  (idle / (ranks × makespan))")
    print(f"bubble_ratio    {summary['bubble_ratio']:.4f}  (idle / busy)")
    if timeline.expert_comm is not None:
        expert = timeline.expert_comm
        print(
            f"all-to-all      {expert['total']:g} in all, {expert['hidden']:g} hidden under another micro-batch's "
            f"compute ({expert['hidden_fraction']:.1%}), {expert['exposed']:g} waited for"
        )
    totals = summary["idle_by_cause"]["total"]
    print("idle by cause   " + ", ".join(f"{cause} {value:g}" for cause, value in totals.items() if abs(value) > 1e-12))
    for cause, why in summary["idle_by_cause"]["negative"].items():
        print(f"  {cause} is negative: {why}")
    print("rank  busy      idle      idle-in-span  peak-memory")
    for r in range(p):
        print(
            f"{r:>4}  {summary['busy'][r]:<8g}  {summary['idle'][r]:<8g}  {summary['span_idle'][r]:<12g}  "
            f"{summary['peak_memory'][r]:g}"
        )
    if args.trace is not None:
        print(f"trace written to {shown(args.trace)} (open it in ui.perfetto.dev or chrome://tracing)")
    return 0


COMMANDS = {
    "simulate": simulate_command,
    "run": run_command,
    "plan": lambda args: plan_command(args, print_json),
    "search": search_command,
    "trace": lambda args: trace_command(args),
}


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    output = WatchedOutput(sys.stdout)
    if sys.stdout is not None:  # None when stdout is closed (>&-): print() then writes nothing
        sys.stdout = output
    try:
        with stop_signals():
            args = build_parser().parse_args(_join_dashed_values(arguments))
            code = COMMANDS[args.command](args)
            if sys.stdout is not None:  # flushed here, not at exit: a full disk (> /dev/full) is one line, exit 2
                sys.stdout.flush()
            return code
    except (UsageError, ValueError) as error:  # a ScheduleError is a ValueError whose grid prints whole
        print(f"error: {bounded(str(error), arguments)}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a run that failed (ActionFailed, RunFailed): say where, exit 1
        print(f"error: {bounded(str(error), arguments)}", file=sys.stderr)
        return 1
    except Stopped as stop:  # SIGINT, SIGTERM, SIGHUP: the run has cleaned up on its way here
        say(stop.message)
        return stop.exit_status
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except MemoryError:  # anywhere in a command: one line, as a refusal (numpy's _ArrayMemoryError included)
        try:
            room = allowance()
            may = f"; this process may use {human_bytes(room.allowed)} here ({room.reason})"
        except Exception:  # noqa: BLE001 - still out of memory: the line without the figure
            may = ""
        print(f"error: out of memory: try fewer ranks or micro-batches{may}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (… | head): stop quietly, as a SIGPIPE'd tool would
        silence_stdout()
        return 141
    except OSError as error:
        if output.failure is None:  # not the output: e.g. a library that failed to load
            print(f"error: {bounded(str(error), arguments)}", file=sys.stderr)
            return 1
        silence_stdout()
        print(f"error: cannot write the output: {error.strerror or error}", file=sys.stderr)
        return 2
    finally:
        if sys.stdout is output:
            sys.stdout = output.stream
