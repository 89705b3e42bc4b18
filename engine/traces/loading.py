"""Reading every rank's file of one job (step 1 of ``engine.traces.imported``): one after the other, their kept
events under one memory budget, and the lab's own one-file traces split into their ranks. (A stranger's files
are read in a child process with limits: ``engine.traces.isolated``.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..codecs import escaped
from .names import MAX_NAME
from .reading import KeptBudget, RankTrace, TraceError, keeps, read_rank_trace

MAX_FILES = 256


def keeps_pattern(pattern) -> Callable[[dict], bool]:
    """What the pipeline view keeps, and the spans a user's pattern (``names.compile_pattern``) names."""

    def keep(event: dict) -> bool:
        if keeps(event):
            return True
        name = event.get("name")
        return (
            event.get("ph") == "X"
            and isinstance(name, str)
            and len(name) <= MAX_NAME
            and pattern.fullmatch(name) is not None
        )

    return keep


def read_all(
    paths: Sequence[str | Path],
    progress,
    keep: Callable[[dict], bool],
    names: Sequence[str] | None = None,
    budget: KeptBudget | None = None,
) -> list[RankTrace]:
    """Every file, in order, one after the other (each streamed; the kept events of all of them share one
    ``budget``), reporting the bytes read as they go. ``names``: each file as the user named it (an upload's
    own name), for the messages and the progress; default: the paths as given. Either is escaped here
    (``codecs.escaped``): a name's control characters never reach a message, a progress bar or a page."""
    if not paths:
        raise TraceError("no trace files given")
    if len(paths) > MAX_FILES:
        raise TraceError(f"{len(paths)} files given; the lab reads up to {MAX_FILES} ranks")
    names = [escaped(name) for name in ([str(path) for path in paths] if names is None else names)]
    if len(names) != len(paths):
        raise ValueError(f"{len(names)} names for {len(paths)} files")
    sizes = [_size(path) for path in paths]
    budget = budget or KeptBudget()
    total, done = sum(sizes), 0
    traces = []
    for path, name, size in zip(paths, names, sizes, strict=True):
        report = None if progress is None else (lambda read, n=name, d=done: progress(n, d + read, total))
        traces += _split_lab_trace(read_rank_trace(path, name=name, progress=report, keep=keep, budget=budget))
        done += size
    return traces


def _size(path: str | Path) -> int:
    try:
        return Path(path).stat().st_size if Path(path).is_file() else 0
    except OSError:
        return 0


def _split_lab_trace(trace: RankTrace) -> list[RankTrace]:
    """The lab's own ``--trace`` output (``engine.chrome_trace``) holds every rank, one process each, its
    actions named like "2F0" and filed under their kind, an overlapped pair as two events marked ``overlapped``
    at one time: one RankTrace per rank, labelled as PyTorch labels them ("PP:2F0", "PP:(0F3;3B1)OVERLAP_F_B")."""
    lab = [e for e in trace.events if e.category in ("F", "B", "I", "W") and "source" in e.args]
    if not lab:
        return [trace]
    per_rank: dict[int, list] = {}
    pairs: dict[tuple[int, float], list] = {}
    for event in lab:
        rank = int(event.process) if str(event.process).isdigit() else 0
        if event.args.get("overlapped"):
            pairs.setdefault((rank, event.start), []).append(event)
            continue
        per_rank.setdefault(rank, []).append(replace(event, name="PP:" + event.name, category="user_annotation"))
    for (rank, _), halves in pairs.items():
        halves.sort(key=lambda e: e.category != "F")  # the forward first, as PyTorch writes the pair
        name = (
            "PP:(" + ";".join(e.name for e in halves) + ")OVERLAP_F_B" if len(halves) == 2 else "PP:" + halves[0].name
        )
        per_rank.setdefault(rank, []).append(replace(halves[0], name=name, category="user_annotation"))
    return [
        replace(
            trace,
            rank=rank,
            world_size=len(per_rank),
            events=tuple(sorted(events, key=lambda e: e.start)),
            name=f"{trace.name}#rank{rank}",
        )  # fmt: skip
        for rank, events in sorted(per_rank.items())
    ]
