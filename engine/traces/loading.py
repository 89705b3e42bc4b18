"""Reading every rank's file of one job (step 1 of ``engine.traces.imported``): one by one in this process when
they are small, side by side in worker processes when they are large, and the lab's own one-file traces split
into their ranks."""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from .names import MAX_NAME
from .reading import RankTrace, TraceError, keeps, read_rank_trace

MAX_FILES = 256
PARALLEL_BYTES = 64 * 1024**2
"""Files larger than this in all are read by worker processes side by side (a 100 MB trace takes ~3 s alone)."""
MAX_WORKERS = 4


def keeps_pattern(pattern: re.Pattern) -> Callable[[dict], bool]:
    """What the pipeline view keeps, and the spans a user's pattern names."""
    return lambda event: (
        keeps(event)
        or (event.get("ph") == "X" and pattern.fullmatch(str(event.get("name", ""))[:MAX_NAME]) is not None)
    )


def read_all(paths: Sequence[str | Path], progress, keep: Callable[[dict], bool]) -> list[RankTrace]:
    """Every file, in order: in this process when they are small, else side by side in worker processes (one
    rank's file per worker at a time; each returns only the events it kept), reporting each file as it ends."""
    if not paths:
        raise TraceError("no trace files given")
    if len(paths) > MAX_FILES:
        raise TraceError(f"{len(paths)} files given; the lab reads up to {MAX_FILES} ranks")
    sizes = [Path(path).stat().st_size if Path(path).is_file() else 0 for path in paths]
    total = sum(sizes)
    workers = min(len(paths), os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2 or total < PARALLEL_BYTES or keep is not keeps:
        return _read_here(paths, sizes, progress, keep)
    context = multiprocessing.get_context("spawn")  # no fork of a threaded server (the app)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(read_rank_trace, path) for path in paths]
        done = 0
        for future, path, size in zip(futures, paths, sizes, strict=True):
            future.exception()  # wait for it, in order
            done += size
            if progress is not None:
                progress(str(path), done, total)
        return [trace for future in futures for trace in _split_lab_trace(future.result())]


def _read_here(paths, sizes, progress, keep) -> list[RankTrace]:
    total, done = sum(sizes), 0
    traces = []
    for path, size in zip(paths, sizes, strict=True):
        report = None if progress is None else (lambda read, p=str(path), d=done: progress(p, d + read, total))
        traces += _split_lab_trace(read_rank_trace(path, progress=report, keep=keep))
        done += size
    return traces


def _split_lab_trace(trace: RankTrace) -> list[RankTrace]:
    """The lab's own ``--trace`` output (``Timeline.to_chrome_trace``) holds every rank, one process each, its
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
            path=f"{trace.path}#rank{rank}",
        )  # fmt: skip
        for rank, events in sorted(per_rank.items())
    ]
