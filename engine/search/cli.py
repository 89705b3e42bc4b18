"""``python -m engine search``: find a schedule under a memory budget, print it (text or --json), write its CSV.

Registered by ``engine.cli`` (``add_search_command`` adds the subcommand to its parser, ``search_command``
runs it), whose ``main`` turns a ValueError into one line on stderr and exit status 2. Nothing here imports
``engine.cli`` (the engine's modules import in one direction).
"""

from __future__ import annotations

from ..costs import PER_STAGE_SEPARATOR, Costs
from ..files import check_output, write_text
from ..ir import PLACEMENTS
from ..limits import MAX_RANKS, MIN_TIME_LIMIT_S, whole_number
from ..options import add_extras, add_flags
from ..runtime.lifetime import command_age_s
from ..terminal import print_json, say
from .problem import SearchProblem
from .request import REQUIRED, SearchRequest
from .result import SearchInterrupted, SearchResult
from .solve import search
from .spaces import search_every_space


def add_search_command(commands) -> None:
    """Add ``search`` to the engine's subcommands (``commands`` is argparse's subparsers object): its flags are
    ``SearchRequest``'s settings, then the outputs."""
    parser = commands.add_parser(
        "search",
        help="search for the schedule with the shortest step under a memory budget",
        description=(
            "Search for per-rank orders of F, I and W with the shortest step whose peak activation memory "
            "stays within the budget on every rank: CP-SAT (exact) for small sizes, a Zero-Bubble-style "
            "greedy for large ones. The result is checked by the validator and timed by the simulator."
        ),
    )
    add_flags(parser, SearchRequest, required=REQUIRED)
    add_extras(parser, ("grid", "json", "out", "keep_best_on_interrupt"))


def _clean(value: float) -> float:
    """Sums of durations leave crumbs like 27.000000000000004: 12 significant digits are plenty."""
    return float(f"{value:.12g}")


def _summary(result: SearchResult) -> dict:
    summary = result.summary()
    for key in ("makespan", "lower_bound", "gap", "bubble_fraction", "span_idle_fraction", "wall_time_s"):
        summary[key] = _clean(summary[key])
    summary["lower_bounds"] = {name: _clean(value) for name, value in summary["lower_bounds"].items()}
    summary["peak_memory"] = [_clean(value) for value in summary["peak_memory"]]
    return summary


def search_command(args) -> int:
    if args.out is not None:  # fail before the search, not after it
        check_output(args.out, what="schedule")
    every_space = args.chunks == "auto"
    chunks = None if args.chunks in (None, "auto") else int(args.chunks)
    ranks = whole_number("ranks", args.num_ranks, 1, MAX_RANKS, "search")
    num_stages = ranks * PLACEMENTS[args.placement].chunks(chunks)
    if every_space and PER_STAGE_SEPARATOR in args.costs:  # a stage is another part of the model in each space
        raise ValueError("search: --chunks auto takes one cost per kind (a rank's share), not one per stage")
    costs = Costs.parse(args.costs, num_stages=None if every_space else num_stages, where="the search", comm=args.comm)
    # the limit is the visitor's: counted from the command's start (its imports take about half a second)
    left = max(MIN_TIME_LIMIT_S, args.time_limit_s - command_age_s())
    problem = SearchProblem(
        ranks, args.num_microbatches, costs, args.memory_budget, args.placement, left, args.objective, chunks
    )
    try:
        result = search_every_space(problem, args.method) if every_space else search(problem, args.method)
    except SearchInterrupted as interrupted:
        keep = args.keep_best_on_interrupt and args.out is not None
        if keep and interrupted.best is not None:  # atomically: a temporary file renamed into place
            write_text(args.out, interrupted.best.schedule.to_csv(), what="schedule")
            say(
                f"the best schedule found before the interrupt (makespan {interrupted.best.makespan:g}, not "
                f"proven optimal) written to {args.out}"
            )
        elif keep:
            say(f"nothing found before the interrupt: {args.out} left as it was")
        raise interrupted.stop from None
    if args.out is not None:
        write_text(args.out, result.schedule.to_csv(), what="schedule")
    summary = _summary(result)
    if args.json:
        if args.grid:
            summary["grid"] = result.schedule.grid()
        print_json(summary)
        return 0
    if args.grid:
        print(result.schedule.grid())
        print()
    print(f"searched: {result.problem.describe()}")
    print(f"status          {result.claim}")
    print(f"makespan        {summary['makespan']:g}")
    print(
        f"period          {summary['period']:g}  (longest rank span; Zero Bubble's bubble rate "
        f"{summary['period_bubble_rate']:.4f})"
    )
    bounds = ", ".join(f"{name} {value:g}" for name, value in summary["lower_bounds"].items())
    print(f"lower bound     {summary['lower_bound']:g} on the {problem.objective} ({bounds})")
    print(f"gap             {result.gap:.2%}")
    print(f"bubble_fraction {summary['bubble_fraction']:.4f}  (idle / (ranks × makespan))")
    print(f"span idle       {summary['span_idle_fraction']:.4f}  (idle inside each rank's span, Zero Bubble's count)")
    peaks = ", ".join(f"{peak:g}" for peak in summary["peak_memory"])
    print(f"peak memory     {peaks}  (budget {args.memory_budget:g})")
    print(f"method          {result.method}: {result.detail}, {result.wall_time_s:.2f} s")
    if args.out is not None:
        print(f"schedule written to {args.out} (python -m engine simulate --from-csv {args.out} reads it)")
    return 0
