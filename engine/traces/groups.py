"""Which ranks form a pipeline, as the traces' process groups say (issue 46, case 3).

A pipeline × data-parallel job on a DeviceMesh names its groups for their purpose: PyTorch describes the group of
a mesh dimension named "dp" as ``mesh_dp`` and one named "pp" as ``mesh_pp`` (``distributedInfo.pg_config``,
``engine.traces.pg_config``). The two ranks of a data-parallel pair both send and receive — to their own pipeline
neighbours, not to each other — and would read as a pipeline of their own. So files that are exactly a group
named for data, tensor or another parallelism are refused as such, and files that hold several groups named
for the pipeline are refused too (two pipelines' stages read as one would interleave them).
"""

from __future__ import annotations

import re

from .reading import RankTrace, TraceError

PURPOSES = (
    ("pipeline", ("pp", "pipe", "pipeline", "stage")),
    ("data-parallel", ("dp", "ddp", "data", "fsdp", "hsdp", "replicate", "shard", "zero")),
    ("tensor-parallel", ("tp", "tensor", "sp", "sequence")),
    ("context-parallel", ("cp", "context")),
    ("expert-parallel", ("ep", "expert", "moe")),
)
"""What a group is for, by the words of its name or description ("mesh_dp" → data-parallel)."""


def purpose(name: str) -> str | None:
    """The parallelism a group's name or description names (its first word that says one), else None."""
    for word in re.split(r"[^a-z]+", name.lower()):
        for found, words in PURPOSES:
            if word in words:
                return found
    return None


def _named(by_rank: dict[int, RankTrace]) -> dict[tuple[int, ...], list[str]]:
    """Every group any trace names, by its sorted ranks (one set of ranks may have several groups)."""
    named: dict[tuple[int, ...], list[str]] = {}
    for trace in by_rank.values():
        for ranks, name in trace.group_names:
            names = named.setdefault(tuple(sorted(ranks)), [])
            if name not in names:
                names.append(name)
    return named


def refuse_other_groups(by_rank: dict[int, RankTrace]) -> None:
    """TraceError when the files given (by job rank) are a group named for another parallelism than the
    pipeline's, or hold more than one group named for the pipeline."""
    named = _named(by_rank)
    given = tuple(sorted(by_rank))
    purposes = {purpose(name): name for name in named.get(given, [])}
    pipelines = {ranks: name for ranks, names in named.items() for name in names if purpose(name) == "pipeline"}
    other = next(((kind, name) for kind, name in purposes.items() if kind not in (None, "pipeline")), None)
    if other is not None and "pipeline" not in purposes:  # a group of these ranks named for the pipeline wins
        kind, name = other
        mine = next((f"{n} (ranks {', '.join(map(str, r))})" for r, n in pipelines.items() if given[0] in r), None)
        instead = f"give one pipeline group's files instead: {mine}" if mine else "give one pipeline group's files"
        world = max((trace.world_size or 0 for trace in by_rank.values()), default=0)
        which = ("pair" if len(given) == 2 else "group") + (" of a larger job" if world > len(given) else "")
        raise TraceError(
            f"ranks {', '.join(map(str, given))} are a {kind} {which}, not a pipeline: their traces "
            f"name the process group of exactly these ranks {name!r}, and the sends and receives they make go to "
            f"their pipeline neighbours, not to each other; {instead}"
        )
    inside = sorted(ranks for ranks in pipelines if set(ranks) < set(given))
    if len(inside) > 1:
        listed = "; ".join(f"{pipelines[ranks]}: ranks {', '.join(map(str, ranks))}" for ranks in inside[:4])
        raise TraceError(
            f"these {len(given)} files hold {len(inside)} pipelines, as their process groups say ({listed}): "
            "give one pipeline group's files (their ranks are read as its stages, in order)"
        )
