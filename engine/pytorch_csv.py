"""Schedules in PyTorch's CSV format: one line per rank, comma-separated actions.

This is what ``torch.distributed.pipelining`` writes with ``_dump_csv`` and torchtitan reads with
``pipeline_parallel_schedule_csv``. Two forms exist:

* compute-only: ``0F0,0F1,1F0,…`` (``F``, ``B``, ``I``, ``W``, ``(0F7;7B3)OVERLAP_F_B``; empty cells are idle
  steps; PyTorch 2.13 also writes ``0REDUCE_GRAD`` into it);
* lowered ("compute_comms"): the same plus ``0SEND_F0``, ``1RECV_F0``, ``SEND_B``, ``RECV_B`` and FSDP's
  ``UNSHARD``/``RESHARD``/``REDUCE_GRAD``.

Both read here. The compute actions drive the simulation; the communication actions are counted and set
aside (``CsvReading.set_aside``), because the simulator derives every transfer from the hand-off rules.

The micro-batch count, unless given, is the most forwards any one stage runs — not the largest index + 1 — so
a rank that numbers its micro-batches off by one (PyTorch 2.13's ``Schedule1F1B`` writes ``3F1,…,3F8`` on
its last rank) is blamed where its own out-of-range action stands.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from .files import quoted, read_regular_file, shown
from .ir import PLACEMENTS, Action, Kind, Schedule, Slot, parse_slot, slot_actions
from .limits import MAX_CSV_BYTES, MAX_CSV_CELLS, MAX_MICROBATCHES, MAX_RANKS, check_pairs, whole_number

COMMUNICATION = ("SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD")
_COMMUNICATION_RE = re.compile(r"([0-9]+)(SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD)([0-9]*)")
_NOT_CSV_TEXT = re.compile(r"[^\t\n\r\x20-\x7e]")
"""A schedule CSV is printable ASCII in lines: anything else is a pasted invisible character (U+200B, U+00A0,
a mid-file U+FEFF), a line break Python would split on (U+2028, \\x1c) or a look-alike digit (０, ٣)."""
_INVISIBLE = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"))
"""Unicode categories drawn as nothing (or as nothing of their own): controls, formats, spaces, marks."""


@dataclass(frozen=True)
class CsvReading:
    """A schedule read from CSV text, and what was read besides its compute actions."""

    schedule: Schedule
    set_aside: dict[str, int] = field(default_factory=dict)
    """Communication actions read and not simulated, by type (e.g. {"SEND_F": 12})."""
    microbatches_inferred: bool = False
    """True when the micro-batch count was not given but inferred (see the module docstring)."""

    def describe(self) -> str:
        """One line for the CLI and the app: what was read."""
        schedule = self.schedule
        text = (
            f"read {schedule.num_actions} compute actions on {schedule.num_ranks} ranks "
            f"({schedule.num_stages} stages, {schedule.num_microbatches} micro-batches"
            f"{', inferred' if self.microbatches_inferred else ''}, {schedule.placement} placement)"
        )
        if self.set_aside:
            counts = ", ".join(f"{name} {count}" for name, count in sorted(self.set_aside.items()))
            text += (
                f"; set aside {sum(self.set_aside.values())} communication actions ({counts}): the simulator "
                f"derives transfers from the hand-off rules"
            )
        return text


def _parse_cell(text: str, rank: int, column: int, set_aside: Counter):
    """A compute slot, or None for a communication action (counted in ``set_aside``)."""
    match = _COMMUNICATION_RE.fullmatch(text)
    if match:
        set_aside[match.group(2)] += 1
        return None
    try:
        return parse_slot(text)
    except ValueError as error:
        raise ValueError(
            f"rank {rank}, column {column + 1}: {error} (also read: an overlapped pair "
            f"(0F7;7B3)OVERLAP_F_B, and PyTorch's {', '.join(COMMUNICATION)})"
        ) from None


def _stray_character(text: str, index: int) -> str:
    """Where the character at ``text[index]`` is (rank, line, column, position in its cell) and what it is."""
    line_start = text.rfind("\n", 0, index) + 1
    rank = sum(1 for line in text[:line_start].splitlines() if line.strip())
    line_number = text.count("\n", 0, index) + 1
    cell_start = max(line_start, text.rfind(",", line_start, index) + 1)
    cell_end = min(end for end in (text.find(",", index), text.find("\n", index), len(text)) if end >= 0)
    cell = text[cell_start:cell_end]
    char = text[index]
    name = f"U+{ord(char):04X}" + (f" {unicodedata.name(char)}" if unicodedata.name(char, "") else "")
    what = "an invisible character" if unicodedata.category(char) in _INVISIBLE else "a character outside ASCII"
    return (
        f"rank {rank} (line {line_number}), column {text.count(',', line_start, index) + 1}: {quoted(cell)} "
        f"holds {what}, {name}, at position {index - cell_start + 1}; a schedule CSV is plain ASCII "
        f"(delete or retype it)"
    )


def read_csv(
    text: str, *, num_microbatches: int | None = None, placement: str | None = None, name: str = "imported"
) -> CsvReading:
    """Read PyTorch/torchtitan per-rank CSV rows (compute-only or lowered with communication actions).

    The number of stages is the largest stage index + 1; the placement is inferred from where the stages
    are (stage p on rank p−1 means "v") unless given.
    """
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark at the very start, as Excel writes
    if len(text) > MAX_CSV_BYTES:
        raise ValueError(f"the schedule CSV has {len(text):,} characters; the lab reads up to {MAX_CSV_BYTES:,}")
    cells = text.count(",") + text.count("\n") + 1
    if cells > MAX_CSV_CELLS:
        raise ValueError(f"the schedule CSV has about {cells:,} cells; the lab reads up to {MAX_CSV_CELLS:,}")
    stray = _NOT_CSV_TEXT.search(text)
    if stray:
        raise ValueError(_stray_character(text, stray.start()))
    if num_microbatches is not None:
        whole_number("micro-batches", num_microbatches, 1, MAX_MICROBATCHES)
    set_aside: Counter = Counter()
    ranks: list[tuple[Slot, ...]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if len(ranks) == MAX_RANKS:
            raise ValueError(
                f"the schedule CSV has more than {MAX_RANKS} non-empty lines (one per rank); the lab "
                f"reads up to {MAX_RANKS} ranks"
            )
        rank = len(ranks)
        slots = (
            _parse_cell(cell.strip(), rank, column, set_aside)
            for column, cell in enumerate(line.split(","))
            if cell.strip()
        )
        ranks.append(tuple(slot for slot in slots if slot is not None))
    if not ranks:
        raise ValueError("the schedule CSV is empty: expected one line of actions per rank")
    num_ranks = len(ranks)
    actions = [(rank, a) for rank, slots in enumerate(ranks) for slot in slots for a in slot_actions(slot)]
    if not actions:
        raise ValueError("the schedule CSV has no compute actions (F, B, I, W)")
    num_stages = max(a.stage for _, a in actions) + 1
    if num_stages % num_ranks:
        raise ValueError(
            f"the CSV uses {num_stages} stages on {num_ranks} ranks; stages must be a multiple of ranks "
            f"({num_stages} = {num_stages // num_ranks}×{num_ranks} + {num_stages % num_ranks})"
        )
    num_chunks = num_stages // num_ranks
    if placement is None:
        placement = _infer_placement(actions, num_ranks, num_stages)
    inferred = num_microbatches is None
    if num_microbatches is None:  # each copy of the model sees its share of them (DualPipe: half)
        forwards_per_stage = Counter(a.stage for _, a in set(actions) if a.kind is Kind.F)
        num_microbatches = max(forwards_per_stage.values(), default=1) * PLACEMENTS[placement].copies
    check_pairs(num_ranks, num_microbatches, num_chunks, "the schedule CSV")
    schedule = Schedule(name, num_ranks, num_microbatches, num_chunks, placement, tuple(ranks))
    return CsvReading(schedule, dict(set_aside), inferred)


def _infer_placement(actions: list[tuple[int, Action]], num_ranks: int, num_stages: int) -> str:
    """V only when every action sits where V placement (2 chunks per rank) puts it; otherwise loop, and the
    validator marks any action on the wrong rank. A V in which no micro-batch crosses from stage p − 1 to stage
    p is DualPipe's two copies ("dual": micro-batches 0..m/2−1 down stages 0..p−1, the others up p..2p−1): how
    the lab writes two directions in PyTorch's one-model CSV."""
    v, loop = PLACEMENTS["v"], PLACEMENTS["loop"]
    fits_v = num_stages == v.chunks() * num_ranks and all(v.stage_rank(a.stage, num_ranks) == r for r, a in actions)
    fits_loop = all(loop.stage_rank(a.stage, num_ranks) == rank for rank, a in actions)
    if not fits_v or fits_loop:
        return loop.name
    halves: dict[int, set[bool]] = {}
    for _, action in actions:
        halves.setdefault(action.microbatch, set()).add(action.stage >= num_ranks)
    one_half_each = all(len(sides) == 1 for sides in halves.values())
    both_used = {True, False} == set().union(*halves.values())
    return "dual" if one_half_each and both_used else v.name


def read_csv_file(path: str, **options) -> CsvReading:
    """Read a schedule CSV file: a regular file (a FIFO or device is refused at once, see ``engine.files``) of
    at most ``MAX_CSV_BYTES`` (refused beyond, before parsing), UTF-8 with or without a byte-order mark. Every
    error names the file."""
    data = read_regular_file(path, MAX_CSV_BYTES)
    if len(data) > MAX_CSV_BYTES:
        raise ValueError(
            f"{shown(path)} is larger than {MAX_CSV_BYTES // (1024 * 1024)} MiB, the most the lab reads as a "
            f"schedule CSV"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{shown(path)} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}): "
            f"expected PyTorch's schedule CSV"
        ) from None
    if "\x00" in text:
        raise ValueError(f"{shown(path)} holds NUL bytes: it is not a schedule CSV")
    try:
        return read_csv(text, **options)
    except ValueError as error:
        raise ValueError(f"{shown(path)}: {error}") from None
