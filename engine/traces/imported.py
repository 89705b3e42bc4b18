"""A real job's step, from its per-rank profiler traces: the lab's own measured ``Timeline``, so every view,
the idle-by-cause split, the Perfetto export and the comparison with the simulator work on it unchanged.

The steps, in order:

1. read every file, streaming, side by side when large (``engine.traces.loading``); one file of one rank's
   overlapped chunks (DeepSeek's profile of DualPipe) is read as such instead (``engine.traces.chunks``);
2. give each file its rank: ``distributedInfo``, else the number in its name, else the order the user gives;
   refuse two files with one rank, a missing rank, different world sizes;
3. choose the step: ``ProfilerStep#N`` present on every rank (default: the last such step with actions on every
   rank); refuse steps that do not line up;
4. read each rank's actions in that step (``engine.traces.actions``; labels, else autograd inference);
5. put the ranks on one clock (``engine.traces.clocks``);
6. build the schedule from the order read (PyTorch's CSV form, ``engine.pytorch_csv``), then the Timeline:
   each action from its compute start to its end, the waits before, the hand-offs as transfers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..attribution import IdleAttribution, attribute, measured_levels
from ..costs import Costs, Durations
from ..ir import Action, Schedule
from ..runtime.result import measured_stage_costs
from ..schedules import FAMILIES
from ..timeline import Timeline
from .actions import RankStep, rank_step
from .check import check_order, comparable
from .chunks import OverlappedChunks, chunk_trace, keeps_chunk_labels, read_chunks
from .clocks import common_clock
from .evidence import few, refuse_broken_order, refuse_unless_pipeline
from .flow import refuse_unpipelined_flow
from .groups import refuse_other_groups
from .inferred import inferred_rank_step, keeps_autograd
from .loading import keeps_pattern, read_all
from .missing import refuse_missing_neighbours
from .names import compile_pattern, read_label
from .notes import step_notes
from .profiled_steps import steps_to_read
from .reading import KeptBudget, RankTrace, TraceError, keeps, read_rank_trace
from .step_timeline import measured_timeline, schedule_of


@dataclass(frozen=True)
class ImportOptions:
    step: int | None = None
    """``ProfilerStep#N`` to read; None: the last step found on every rank with actions on every rank."""
    ranks: tuple[int, ...] | None = None
    """The rank of each file, in the order given, for traces that do not say (no ``distributedInfo``)."""
    pattern: str | None = None
    """A name pattern for other frameworks' labels (``engine.traces.names.compile_pattern``)."""
    kinds: str | None = None
    """With ``pattern``: an explicit map of its kind words, "fwd=F,bwd_in=I,bwd_w=W" (``names.kind_map``)."""
    offsets_ms: dict[int, float] | None = None
    """Clock offset per rank to add (traces from several hosts); None: estimated when the clocks disagree."""
    expected: str | None = None
    """A family name or a schedule CSV the order read is checked against."""


@dataclass(frozen=True)
class StepFigures:
    """One profiled step's step time (ms) and bubble fraction."""

    step: int | None
    makespan_ms: float
    bubble_fraction: float


@dataclass(frozen=True)
class ImportedRun:
    """One step of a real job, as the lab's measured timeline."""

    files: tuple[str, ...]
    """Each rank's file, by rank."""
    backend: str | None
    step: int | None
    schedule: Schedule
    timeline: Timeline
    """Times in ms from the first action of the step."""
    stage_costs: tuple[Durations, ...]
    """Mean measured compute of each kind on each stage, ms (``Costs.stage_costs``)."""
    transfer_ms: float
    """Median hand-off time (receive's arrival − producer's end), ms."""
    inferred: bool
    """The actions were read from autograd events, not labels (``engine.traces.inferred``)."""
    estimated_offsets_ms: dict[int, float]
    applied_offsets_ms: dict[int, float]
    notes: tuple[str, ...] = field(default=())
    order_check: str | None = None
    """The first difference from the expected schedule, drawn on the grid; None when equal or not asked."""
    order_checkable: bool = True
    """False when the expected schedule could not be built or compared at all (``order_check`` says why)."""
    profiled_steps: tuple[StepFigures, ...] = ()
    """Every profiled step read (this one is their median by step time), in order."""
    steps_left_out: tuple[tuple[int | None, str], ...] = ()
    """Profiled steps that could not be read (a first step cut short), and why."""

    @property
    def costs(self) -> Costs:
        """The measured per-stage costs and transfer time, as the simulator takes them."""
        return Costs.of(stage_costs=self.stage_costs, comm=self.transfer_ms)

    def idle_attribution(self) -> IdleAttribution:
        """Each rank's idle time split by cause ([Note: idle attribution], ``engine.attribution``)."""
        costs = self.costs
        assert costs.stage_costs is not None
        return attribute(self.schedule, measured_levels(costs.stage_costs, costs), self.timeline)

    def summary(self) -> dict:
        summary = self.timeline.summary()
        summary.update(
            files=list(self.files),
            backend=self.backend,
            profiler_step=self.step,
            schedule=self.schedule.name,
            ranks=self.schedule.num_ranks,
            microbatches=self.schedule.num_microbatches,
            chunks=self.schedule.num_chunks,
            placement=self.schedule.placement,
            time_unit="ms",
            inferred=self.inferred,
            transfer_ms=self.transfer_ms,
            stage_costs_ms=[dict(row) for row in self.stage_costs],
            clock_offsets_ms={"estimated": self.estimated_offsets_ms, "applied": self.applied_offsets_ms},
            idle_by_cause=self.idle_attribution().as_dict(),
            notes=list(self.notes),
            order_check=self.order_check,
            profiled_steps=[figures.__dict__ for figures in self.profiled_steps],
            steps_left_out=[{"step": step, "reason": reason} for step, reason in self.steps_left_out],
            step_spread=self.step_spread(),
        )
        return summary

    def step_spread(self) -> dict[str, list[float]]:
        """The lowest and highest step time (ms) and bubble fraction over every profiled step read."""
        figures = self.profiled_steps or (
            StepFigures(self.step, self.timeline.makespan, self.timeline.bubble_fraction),
        )
        times = [f.makespan_ms for f in figures]
        bubbles = [f.bubble_fraction for f in figures]
        return {"makespan_ms": [min(times), max(times)], "bubble_fraction": [min(bubbles), max(bubbles)]}

    def describe_steps(self) -> str:
        """One line: how many steps were read, their spread, and which one is shown."""
        figures = self.profiled_steps
        left = "".join(f"; ProfilerStep#{step} left out: {reason}" for step, reason in self.steps_left_out)
        if len(figures) < 2:
            said = "one profiled step read" if figures and figures[0].step is not None else "the whole trace read"
            return said + left
        spread = self.step_spread()
        low, high = spread["makespan_ms"]
        least, most = spread["bubble_fraction"]
        return (
            f"{len(figures)} profiled steps read (ProfilerStep#{', #'.join(str(f.step) for f in figures)}): step "
            f"{low:.3g}–{high:.3g} ms, bubble {least:.1%}–{most:.1%}; shown: the median step after the first, "
            f"#{self.step}{left}"
        )


def read_traces(
    paths: Sequence[str | Path],
    options: ImportOptions = ImportOptions(),
    progress: Callable[[str, int, int], None] | None = None,
    names: Sequence[str] | None = None,
) -> ImportedRun | OverlappedChunks:
    """What the files hold: one rank's overlapped chunks (one file labelling ``attn(F)``, ``mlp(B)``… and no
    pipeline action: ``engine.traces.chunks``), else a pipeline's step (as ``import_traces``)."""
    pattern = compile_pattern(options.pattern, options.kinds) if options.pattern else None
    budget = KeptBudget()
    keep = keeps_pattern(pattern) if pattern is not None else keeps_chunk_labels if len(paths) == 1 else keeps
    traces = read_all(paths, progress, keep, names, budget)
    chunked = chunk_trace(traces) if pattern is None else None
    if chunked is not None:
        if options.ranks is not None and len(options.ranks) != 1:
            raise TraceError(f"{len(options.ranks)} ranks given for 1 file: give one rank per file, in order")
        unused = tuple(what for what, given in (("the order check", options.expected),
                                                ("the clock offsets", options.offsets_ms)) if given)  # fmt: skip
        rank = None if options.ranks is None else options.ranks[0]
        return read_chunks(chunked, budget, step=options.step, rank=rank, unused=unused)
    return _pipeline(traces, pattern, budget, options)


def import_traces(
    paths: Sequence[str | Path],
    options: ImportOptions = ImportOptions(),
    progress: Callable[[str, int, int], None] | None = None,
    names: Sequence[str] | None = None,
) -> ImportedRun:
    """Read the per-rank traces of one job and return its chosen step (TraceError in one line otherwise).
    ``progress(file, bytes read, bytes in all files)`` is called as the files are read. ``names``: each file as
    the user named it (what messages and ``files`` say; default the paths). In this process: a stranger's files
    go through ``engine.traces.isolated.read_traces_isolated``, which calls ``read_traces`` in a child with
    limits. One rank's overlapped chunks are refused here, in one line (``read_traces`` reads them)."""
    found = read_traces(paths, options, progress, names)
    if isinstance(found, OverlappedChunks):
        raise TraceError(f"{found.describe()}: not a pipeline's step (read_traces reads it)")
    return found


def _pipeline(traces: list[RankTrace], pattern, budget: KeptBudget, options: ImportOptions) -> ImportedRun:
    """Steps 2 to 6, for the files read."""
    if options.expected is not None and options.expected.lower() in FAMILIES:  # "1F1B" is the family 1f1b
        options = replace(options, expected=options.expected.lower())
    by_rank = _ranks(traces, options.ranks)
    refuse_other_groups(by_rank)  # a data-parallel pair of a pipeline × data-parallel job is no pipeline
    by_rank, group = _pipeline_group(by_rank)
    offsets = options.offsets_ms
    if offsets is not None and group is not None:  # the user names ranks as the traces do
        offsets = {group.index(rank) if rank in group else rank: ms for rank, ms in offsets.items()}
    candidates = steps_to_read(by_rank, options.step)
    reread: dict[int, RankTrace] = {}  # the autograd events, read once for every step (unlabelled traces)
    runs: list[ImportedRun] = []
    left_out: list[tuple[int | None, str]] = []
    for index, (step, windows) in enumerate(candidates):
        try:
            runs.append(_one_step(by_rank, step, windows, pattern, budget, reread, options, offsets, group))
        except TraceError as error:
            if runs or index < len(candidates) - 1:  # another step may read (a first step cut short)
                left_out.append((step, str(error).splitlines()[0][:200]))
                continue
            raise
    if not runs:  # every step failed: the last one's reason
        step, windows = candidates[-1]
        _one_step(by_rank, step, windows, pattern, budget, reread, options, offsets, group)
    figures = tuple(StepFigures(run.step, run.timeline.makespan, run.timeline.bubble_fraction) for run in runs)
    # shown: the median step after the first — a job's first profiled step is its warm-up (PyTorch's pipelining
    # exchanges the stages' shapes there, outside the step's own time): with two steps, the second
    settled = [run for run in runs if run.step != runs[0].step] if len(runs) > 1 else runs
    by_makespan = sorted(settled, key=lambda run: run.timeline.makespan)
    median = by_makespan[(len(settled) - 1) // 2]  # the lower of the two middle steps
    return replace(median, profiled_steps=figures, steps_left_out=tuple(left_out))


def _one_step(by_rank, step, windows, pattern, budget, reread, options, offsets, group) -> ImportedRun:
    """Steps 4 to 6 for one profiled step."""
    steps, inferred = _rank_steps(by_rank, windows, pattern, budget, step, reread)
    refuse_missing_neighbours(steps, inferred, group)
    origins, estimated, applied = common_clock(by_rank, steps, offsets, must_bound=inferred)
    schedule = schedule_of(steps, name=_name(options.expected))
    gpu = any(trace.has_gpu for trace in by_rank.values()) and not inferred  # inferred hands are CPU ops' times
    timeline, compute_ms, transfer_ms = measured_timeline(schedule, steps, origins, gpu)
    notes = step_notes(by_rank, steps, inferred, estimated, applied, offsets is not None)
    if group is not None:
        notes = (
            f"a pipeline group of a larger job: ranks {', '.join(map(str, group))} of {by_rank[0].world_size}, "
            "read as pipeline ranks 0 to " + f"{len(group) - 1} in that order",
        ) + notes
    return ImportedRun(
        files=tuple(by_rank[rank].name for rank in sorted(by_rank)),
        backend=next((t.backend for t in by_rank.values() if t.backend), None),
        step=step,
        schedule=schedule,
        timeline=timeline,
        stage_costs=measured_stage_costs(schedule, compute_ms),
        transfer_ms=transfer_ms,
        inferred=inferred,
        estimated_offsets_ms=estimated,
        applied_offsets_ms=applied,
        notes=notes,
        order_check=None if options.expected is None else check_order(schedule, options.expected),
        order_checkable=options.expected is None or comparable(schedule, options.expected),
    )


# -- 2. ranks ----------------------------------------------------------------------------------------------------
def _ranks(traces: list[RankTrace], given: tuple[int, ...] | None) -> dict[int, RankTrace]:
    if given is not None and len(given) != len(traces):
        raise TraceError(f"{len(given)} ranks given for {len(traces)} files: give one rank per file, in order")
    sizes = {t.world_size for t in traces if t.world_size is not None}
    if len(sizes) > 1:
        said = ", ".join(f"{Path(t.name).name} says {t.world_size}" for t in traces if t.world_size is not None)
        raise TraceError(f"the traces disagree on the world size: {said}")
    by_rank: dict[int, RankTrace] = {}
    for index, trace in enumerate(traces):
        rank = given[index] if given is not None else trace.rank if trace.rank is not None else _rank_in_name(trace)
        if rank is None:
            raise TraceError(
                f"{trace.name}: the trace does not say its rank (no distributedInfo) and its name has no rank<N>; "
                "give the ranks in order (--ranks 0,1,2,3)"
            )
        if rank in by_rank:
            raise TraceError(f"two files claim rank {rank}: {by_rank[rank].name} and {trace.name}")
        by_rank[rank] = replace(trace, rank=rank)
    world = sizes.pop() if sizes else max(by_rank) + 1  # unsaid: at least up to the highest rank given
    extra = sorted(rank for rank in by_rank if rank >= world)
    if extra:
        raise TraceError(
            f"world size {world} means ranks 0 to {world - 1}; the traces claim rank(s) {few(extra)} beyond it"
        )
    missing = sorted(set(range(world)) - set(by_rank))
    group = set(by_rank)
    said_a_group = any(set(ranks) == group for trace in traces for ranks in trace.groups)
    if missing and given is None and not said_a_group:
        raise TraceError(
            f"world size {world} means ranks 0 to {world - 1}, one file each; missing rank(s) {few(missing)}. If "
            "these files are one pipeline group of a larger job, their traces' process groups do not say so: give "
            "their ranks with --ranks"
        )
    return by_rank


def _pipeline_group(by_rank: dict[int, RankTrace]) -> tuple[dict[int, RankTrace], list[int] | None]:
    """The files given are one pipeline: when their ranks are not 0 to n−1 (a pipeline group of a larger job:
    ranks 0, 2, 4, 6 of 8), the i-th lowest is pipeline rank i. Returns the traces by pipeline rank, and the
    job's ranks in that order (None when they were already 0 to n−1)."""
    ranks = sorted(by_rank)
    if ranks == list(range(len(ranks))):
        return by_rank, None
    return {index: replace(by_rank[rank], rank=index) for index, rank in enumerate(ranks)}, ranks


RANK_IN_NAME = re.compile(r"(?<![a-z])rank[_-]?([0-9]+)(?![0-9])", re.IGNORECASE)
"""The only file names that say a rank: rank3, rank-3, rank_3 (never a timestamp, a version or a model's size)."""


def _rank_in_name(trace: RankTrace) -> int | None:
    found = {int(match.group(1)) for match in RANK_IN_NAME.finditer(Path(trace.name).name)}
    return found.pop() if len(found) == 1 else None


# -- 4. each rank's actions ------------------------------------------------------------------------------------
def _rank_steps(
    by_rank, windows, pattern, budget: KeptBudget, step: int | None, reread: dict[int, RankTrace]
) -> tuple[dict[int, RankStep], bool]:
    num_stages = _stages_named(by_rank, windows, pattern) if pattern is not None else None
    steps = {rank: rank_step(trace, rank, windows[rank], pattern, num_stages) for rank, trace in by_rank.items()}
    if all(step.actions for step in steps.values()):
        return steps, False
    if any(step.actions for step in steps.values()) or pattern is not None:
        empty = [rank for rank, step in steps.items() if not step.actions]
        raise TraceError(f"rank(s) {', '.join(map(str, empty))} ran no labelled pipeline action in the chosen step")
    # no labels anywhere: a pipeline only if the ranks hand data to each other; then read again with the autograd
    # events, and infer (Schedule1F1B)
    seen = refuse_unless_pipeline(by_rank, windows, step)
    if not reread:
        reread.update(
            {
                rank: replace(
                    read_rank_trace(trace.path, name=trace.name, keep=keeps_autograd, budget=budget), rank=rank
                )
                for rank, trace in by_rank.items()
            }
        )
    steps = {rank: inferred_rank_step(trace, rank, windows[rank]) for rank, trace in reread.items()}
    if not all(_forwards_and_backwards_pair(step) for step in steps.values()):
        trace = next(iter(by_rank.values()))
        found = ", ".join(f"{count:,} {category or 'uncategorised'}" for category, count in
                          sorted(trace.counts.items(), key=lambda item: -item[1])[:6])  # fmt: skip
        raise TraceError(
            f"{trace.name}: no pipeline annotations (found {found}); PyTorch's pipelining labels its actions "
            "PP:0F3 (or Forward i / Backward i), and a name pattern with (?P<stage>…)(?P<kind>…)(?P<microbatch>…) "
            "reads other frameworks' labels"
        )
    refuse_unpipelined_flow(steps, seen)  # before the order: a ring's actions may well be in order
    refuse_broken_order(steps)
    return steps, True


def _stages_named(by_rank, windows, pattern) -> int:
    """How many stages a user's pattern names across every rank's step (the highest stage, plus one)."""
    highest = -1
    for rank, trace in by_rank.items():
        low, high = windows[rank]
        for event in trace.events:
            if low <= event.start <= high and isinstance(action := read_label(event.name, pattern).compute, Action):
                highest = max(highest, action.stage)
    return highest + 1


def _forwards_and_backwards_pair(step: RankStep) -> bool:
    """Inference found a forward for every backward (and at least one): the bursts were a pipeline's."""
    kinds = [str(action.slot)[len(str(step.rank)) :][:1] for action in step.actions]
    return kinds.count("F") > 0 and kinds.count("F") == kinds.count("B")


def _name(expected: str | None) -> str:
    return "imported" if expected is None or "\n" in expected or "," in expected else expected
