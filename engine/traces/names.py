"""What a span's name says: a pipeline action, a communication action, a step, or nothing.

PyTorch's ``_PipelineScheduleRuntime`` (every multi-stage schedule in ``torch.distributed.pipelining``)
wraps each action in ``record_function("PP:" + str(action))`` (``schedules._get_profiler_function_name``):
``PP:0F3``, ``PP:2B1``, ``PP:1I2``, ``PP:1W2``, ``PP:(0F3;3B1)OVERLAP_F_B``, ``PP:2RECV_F0``, ``PP:0SEND_F1``,
``PP:0UNSHARD``, ``PP:2REDUCE_GRAD`` — the text of ``_Action.__repr__``, read here with the same grammar as its
``_Action.from_str``. ``ScheduleGPipe`` writes ``Forward i`` / ``Backward i`` (its one stage per rank);
``Schedule1F1B`` writes no label (``engine.traces.inferred`` reads it from its autograd events). Any other
framework: a user's pattern with named groups ``stage``, ``kind`` and ``microbatch``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

from ..codecs import escaped
from ..ir import Action, Kind, Overlap

COMPUTE = ("F", "B", "I", "W")
COMMUNICATION = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
SHARDING = ("UNSHARD", "RESHARD", "REDUCE_GRAD")
"""FSDP's actions in a PyTorch schedule: not compute, not a pipeline hand-off."""
ACTION = re.compile(rf"([0-9]+)({'|'.join(SHARDING + COMMUNICATION + COMPUTE)})([0-9]*)")
"""PyTorch's ``_action_regex`` (ASCII digits only)."""
OVERLAP = re.compile(r"\(([^;()]+);([^;()]+)\)OVERLAP_F_B")
GPIPE = re.compile(r"(Forward|Backward) ([0-9]+)")
STEP = re.compile(r"ProfilerStep#([0-9]+)")
MAX_NAME = 1_000
"""Longer span names are not read (no pipeline label is that long)."""
MAX_PATTERN = 300
PATTERN_MEMORY_BYTES = 8 * 1024**2
"""RE2's memory for one compiled pattern (its default); a pattern that needs more is refused."""


@dataclass(frozen=True)
class Label:
    """What one span stands for."""

    compute: Action | Overlap | None = None
    """A pipeline action (or DualPipeV's overlapped pair)."""
    transfer: tuple[int, str, int] | None = None
    """(stage, SEND_F | RECV_F | SEND_B | RECV_B, micro-batch): a pipeline hand-off."""
    sharding: str | None = None
    """An FSDP action (UNSHARD, RESHARD, REDUCE_GRAD)."""
    step: int | None = None
    """``ProfilerStep#N``."""
    stageless: bool = False
    """The name carries no stage (GPipe's ``Forward i``): the rank's own stage is meant."""


NOTHING = Label()


def read_label(name: str, pattern: Any = None) -> Label:
    """The label of a span called ``name`` (``NOTHING`` when it is no pipeline event); ``pattern``: a user's,
    from ``compile_pattern``."""
    if len(name) > MAX_NAME:
        return NOTHING
    if pattern is not None:  # the user's names for the compute; PyTorch's hand-offs and steps still read as its own
        label = _by_pattern(name, pattern)
        if label is not NOTHING:
            return label
        own = read_label(name)
        return NOTHING if own.compute is not None else own
    if name.startswith("PP:"):
        return _pytorch(name[3:])
    if (match := GPIPE.fullmatch(name)) is not None:
        kind = Kind.F if match.group(1) == "Forward" else Kind.B
        return Label(compute=Action(0, kind, int(match.group(2))), stageless=True)
    if (match := STEP.fullmatch(name)) is not None:
        return Label(step=int(match.group(1)))
    return NOTHING


def _pytorch(text: str) -> Label:
    if (match := OVERLAP.fullmatch(text)) is not None:
        first, second = (_pytorch(part.strip()).compute for part in match.groups())
        if isinstance(first, Action) and isinstance(second, Action):
            forward, backward = (first, second) if first.kind is Kind.F else (second, first)
            try:
                return Label(compute=Overlap(forward, backward))
            except ValueError:
                return NOTHING
        return NOTHING
    match = ACTION.fullmatch(text)
    if match is None:
        return NOTHING
    stage, kind, microbatch = int(match.group(1)), match.group(2), match.group(3)
    if kind in COMPUTE and microbatch:
        return Label(compute=Action(stage, Kind[kind], int(microbatch)))
    if kind in COMMUNICATION and microbatch:
        return Label(transfer=(stage, kind, int(microbatch)))
    if kind in SHARDING:
        return Label(sharding=kind)
    return NOTHING


def _by_pattern(name: str, pattern: Any) -> Label:
    match = pattern.fullmatch(name)
    if match is None:
        return NOTHING
    word = match.group("kind") or ""
    kinds = getattr(pattern, "kinds", None) or {}
    kind = kinds.get(_plain(word))
    if kind is None:  # not "or": Kind.F is 0
        kind = kind_of(word)
    if kind is None:
        return NOTHING
    try:
        stage, microbatch = int(match.group("stage")), int(match.group("microbatch"))
    except (TypeError, ValueError):
        return NOTHING
    return Label(compute=Action(stage, kind, microbatch))


KIND_WORDS = (
    (Kind.I, ("backwardinput", "bwdinput", "inputgrad", "input", "dgrad", "i")),
    (Kind.W, ("backwardweight", "bwdweight", "weightgrad", "weight", "wgrad", "w")),
    (Kind.F, ("forward", "fwd", "f")),
    (Kind.B, ("backward", "bwd", "b")),
)
"""What other frameworks call each kind, most specific first: "BackwardInput" is I, not B by its first letter."""


def kind_of(word: str) -> Kind | None:
    """The kind a pattern's ``kind`` group names: F, B, I or W, or a word for one (Forward, fwd, Backward, bwd,
    BackwardInput, Input, BackwardWeight, Weight…; case, spaces, "-" and "_" ignored); None for any other."""
    plain = _plain(word)
    for kind, words in KIND_WORDS:
        if plain in words:
            return kind
    return None


def _plain(word: str) -> str:
    return re.sub(r"[^a-z]", "", word.lower())


@dataclass(frozen=True)
class NamePattern:
    """A user's compiled name pattern (RE2), and the explicit map of its kind words, if given."""

    regex: Any
    kinds: dict[str, Kind]

    def fullmatch(self, name: str):
        return self.regex.fullmatch(name)


def kind_map(text: str) -> dict[str, Kind]:
    """ "fwd=F,bwd_in=I,bwd_w=W" → each word (case, spaces, "-" and "_" ignored) and the kind it names; ValueError
    with the reason for anything else."""
    found: dict[str, Kind] = {}
    for part in (p for p in text.split(",") if p.strip()):
        word, _, letter = part.partition("=")
        if not _plain(word) or letter.strip().upper() not in COMPUTE:
            raise ValueError(
                f"a kind map takes WORD=KIND pairs with KIND one of F, B, I, W, like fwd=F,bwd_w=W; got {part[:40]!r}"
            )
        found[_plain(word)] = Kind[letter.strip().upper()]
    return found


def compile_pattern(text: str, kinds: str | None = None) -> NamePattern:
    """A user's name pattern, e.g. ``stage(?P<stage>[0-9]+)_(?P<kind>fwd|bwd)_mb(?P<microbatch>[0-9]+)``:
    named groups ``stage``, ``kind`` (F, B, I or W, or a word for one: ``kinds``, an explicit ``kind_map``, else
    ``kind_of``) and
    ``microbatch``. It runs on RE2 (``google-re2``), whose matching takes time linear in the name whatever the
    pattern holds: a pattern from a link reaches the server, and on Python's backtracking matcher twenty ``.*``
    in a row never finish. RE2 has no backreferences and no look-arounds; such a pattern is
    refused with RE2's reason (ValueError), as is one longer than ``MAX_PATTERN`` characters."""
    if len(text) > MAX_PATTERN:
        raise ValueError(f"a name pattern is at most {MAX_PATTERN} characters (this one has {len(text)})")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr: the reason goes into the message instead
    options.max_mem = PATTERN_MEMORY_BYTES
    try:
        compiled = re2.compile(text, options)
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        reason = escaped(reason)  # RE2 quotes the pattern's text
        raise ValueError(
            f"the name pattern is not a regular expression the lab's linear-time matcher (RE2) reads: {reason} "
            "(RE2 has no backreferences and no look-ahead or look-behind)"
        ) from None
    missing = {"stage", "kind", "microbatch"} - set(compiled.groupindex)
    if missing:
        raise ValueError(
            f"the name pattern needs the named groups {', '.join(sorted(missing))}, e.g. (?P<stage>[0-9]+)"
        )
    return NamePattern(compiled, kind_map(kinds) if kinds else {})
