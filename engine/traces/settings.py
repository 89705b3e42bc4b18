"""The settings ``python -m engine trace`` takes, each declared once (``engine.options``): ``TraceSettings``, from
which the command's flags derive (``engine.traces.cli``). The texts are read by the command once every flag is in
(``ImportOptions``), each refused in one line that says what it takes."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import Declared, declared, verbatim, whole

MAX_STEP = 10**9
"""The largest ProfilerStep#N asked for (a step the traces do not hold is refused with the ones they do)."""


@dataclass(frozen=True)
class TraceSettings(Declared):
    """What ``trace`` takes beside the files: which step, whose rank each file is, how to read other frameworks'
    names, the hosts' clock offsets, and what the order is checked against."""

    step: int | None = declared(
        None, whole("step", 0, MAX_STEP, "Profiler step", "ProfilerStep#N to read (default: the last on every rank)")
    )
    ranks: str | None = declared(
        None,
        verbatim("ranks", "Ranks", "each file's rank, in order, for traces that do not say", metavar="R0,R1,..."),
    )
    pattern: str | None = declared(
        None,
        verbatim(
            "pattern",
            "Action names",
            "names of other frameworks' actions: a regex with groups (?P<stage>…)(?P<kind>…)(?P<microbatch>…)",
        ),  # fmt: skip
    )
    kinds: str | None = declared(
        None,
        verbatim(
            "kinds",
            "Kind words",
            "with --pattern: what its kind words mean, e.g. fwd=F,bwd_in=I,bwd_w=W",
            metavar="WORD=K,...",
        ),  # fmt: skip
    )
    offsets: str | None = declared(
        None,
        verbatim(
            "offsets",
            "Clock offsets",
            "clock offset per rank, ms (traces from several hosts)",
            metavar="RANK:MS,...",
        ),  # fmt: skip
    )
    expect: str | None = declared(
        None,
        verbatim(
            "expect", "Expected order", "check the order read against a family or a CSV", metavar="FAMILY|FILE.csv"
        ),
    )
