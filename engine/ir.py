"""The schedule IR: actions, per-rank action lists and the stage→rank placement.

Text forms follow PyTorch's ``torch.distributed.pipelining`` (``_Action.__repr__`` / ``_Action.from_str``):
``"2F0"`` is stage 2, forward, micro-batch 0. Kinds:

* ``F`` forward
* ``B`` full backward (input and weight gradients together)
* ``I`` backward for the input only (the Zero Bubble paper calls this pass "B")
* ``W`` backward for the weights only

An overlapped forward/backward pair on one rank (DualPipeV) is one slot holding two actions; its CSV text is
PyTorch's ``(0F7;7B3)OVERLAP_F_B``.

Placement (see [Note: placement]):

* ``loop``: stage s runs on rank ``s mod p`` (GPipe, 1F1B, interleaved 1F1B, ZB-H1/H2).
* ``v``: rank r holds stages ``r`` and ``2p-1-r``, so the model goes down the ranks and back up
  (ZB-V, DualPipeV). The last stage then sits on rank 0, next to the first.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, NamedTuple, Union

import numpy as np


class Kind(str, enum.Enum):
    F = "F"
    B = "B"
    I = "I"  # noqa: E741 - PyTorch's letter for the input-gradient pass
    W = "W"


class Action(NamedTuple):
    """One unit of work of one stage on one micro-batch (a named tuple: generators make 100k of them)."""

    stage: int
    """Index of the model stage (0 = first layers)."""
    kind: Kind
    """F, B, I or W."""
    microbatch: int
    """Index of the micro-batch."""

    def __str__(self) -> str:
        return f"{self.stage}{self.kind._value_}{self.microbatch}"

    def __repr__(self) -> str:
        return str(self)

    @classmethod
    def parse(cls, text: str) -> "Action":
        match = _ACTION_RE.fullmatch(text.strip())
        if not match:
            raise ValueError(f"cannot read action {text!r}: expected stage, kind, micro-batch like '2F0' or '5I3'")
        stage, kind, microbatch = match.groups()
        if len(stage) > 6 or len(microbatch) > 6:
            raise ValueError(f"cannot read action {text!r}: stage and micro-batch indices above 999999 are not supported")
        return cls(int(stage), Kind(kind), int(microbatch))


_ACTION_RE = re.compile(r"(\d+)([FBIW])(\d+)")
_OVERLAP_RE = re.compile(r"\((.+);(.+)\)OVERLAP_F_B")


@dataclass(frozen=True)
class Overlap:
    """A forward and a backward that one rank runs at the same time (DualPipeV's overlapped F&B)."""

    forward: Action
    """The forward action (kind F)."""
    backward: Action
    """The backward action (kind B or I)."""

    def __post_init__(self) -> None:
        if self.forward.kind is not Kind.F or self.backward.kind not in (Kind.B, Kind.I):
            raise ValueError(f"an overlapped pair is one F and one B or I, got {self.forward} and {self.backward}")

    @property
    def actions(self) -> tuple[Action, Action]:
        return (self.forward, self.backward)

    def __str__(self) -> str:
        return f"({self.forward};{self.backward})OVERLAP_F_B"

    __repr__ = __str__


Slot = Union[Action, Overlap]
"""One entry of a rank's list: a single action, or an overlapped pair that occupies the rank once."""


def slot_actions(slot: Slot) -> tuple[Action, ...]:
    return slot.actions if isinstance(slot, Overlap) else (slot,)


def parse_slot(text: str) -> Slot:
    text = text.strip()
    match = _OVERLAP_RE.fullmatch(text)
    if match:
        return Overlap(Action.parse(match.group(1)), Action.parse(match.group(2)))
    return Action.parse(text)


PLACEMENTS = ("loop", "v")
MAX_CSV_STAGES = 4096
MAX_CSV_MICROBATCHES = 16384


@dataclass(frozen=True)
class Schedule:
    """Per-rank ordered lists of work, plus where each stage lives.

    Every rank runs its list in order; an action waits for its inputs (see ``engine.simulate``).
    """

    name: str
    """Family name, e.g. "1f1b"; free text for imported schedules."""
    num_ranks: int
    """p: number of devices (pipeline ranks)."""
    num_microbatches: int
    """m: number of micro-batches per training step."""
    stages_per_rank: int
    """v: model chunks per rank; the model has p·v stages."""
    placement: str
    """"loop" or "v"; see [Note: placement] in the module docstring."""
    ranks: tuple[tuple[Slot, ...], ...]
    """ranks[r] is rank r's ordered work."""

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {self.placement!r}")
        if self.placement == "v" and self.stages_per_rank != 2:
            raise ValueError(f"V placement holds exactly 2 stages per rank, got {self.stages_per_rank}")
        if len(self.ranks) != self.num_ranks:
            raise ValueError(f"schedule has {len(self.ranks)} rank lists for {self.num_ranks} ranks")

    @property
    def num_stages(self) -> int:
        return self.num_ranks * self.stages_per_rank

    def rank_of(self, stage: int) -> int:
        return rank_of_stage(stage, self.num_ranks, self.placement)

    def chunk_of(self, stage: int) -> int:
        """Which of its rank's model chunks this stage is (0 = the one nearer the input)."""
        return stage // self.num_ranks

    @property
    def num_actions(self) -> int:
        return len(self.compiled.stage)

    @cached_property
    def compiled(self) -> "CompiledSchedule":
        """Integer arrays of the same schedule, built once, for the simulator's and validator's hot loops."""
        return CompiledSchedule.of(self)

    # -- text forms ------------------------------------------------------------------------------------
    def to_csv(self) -> str:
        """PyTorch's compute-only CSV: one line per rank, comma-separated actions."""
        return "\n".join(",".join(str(slot) for slot in slots) for slots in self.ranks) + "\n"

    @classmethod
    def from_csv(
        cls,
        text: str,
        *,
        num_microbatches: int | None = None,
        placement: str | None = None,
        name: str = "imported",
    ) -> "Schedule":
        """Read PyTorch/torchtitan per-rank CSV rows ("0F0,0F1,1F0,…"; empty cells are idle steps).

        The number of stages is inferred from the largest stage index; the placement is inferred from
        where the stages are (stage p on rank p-1 means "v") unless given.
        """
        rows = [line for line in text.splitlines() if line.strip()]
        if not rows:
            raise ValueError("the schedule CSV is empty: expected one line of actions per rank")
        ranks = tuple(
            tuple(parse_slot(cell) for cell in row.split(",") if cell.strip()) for row in rows
        )
        num_ranks = len(ranks)
        actions = [a for slots in ranks for slot in slots for a in slot_actions(slot)]
        if not actions:
            raise ValueError("the schedule CSV has no actions")
        num_stages = max(a.stage for a in actions) + 1
        largest_microbatch = max(a.microbatch for a in actions)
        if num_stages > MAX_CSV_STAGES or largest_microbatch >= MAX_CSV_MICROBATCHES:
            raise ValueError(f"the CSV uses stage {num_stages - 1} and micro-batch {largest_microbatch}; the lab reads up "
                             f"to {MAX_CSV_STAGES} stages and {MAX_CSV_MICROBATCHES} micro-batches")
        if num_stages % num_ranks:
            raise ValueError(
                f"the CSV uses {num_stages} stages on {num_ranks} ranks; stages must be a multiple of ranks"
            )
        if placement is None:
            # V only when every action sits where V placement (2 stages per rank) puts it; otherwise loop,
            # and the validator marks any action on the wrong rank
            fits_v = num_stages == 2 * num_ranks and all(
                rank_of_stage(action.stage, num_ranks, "v") == rank
                for rank, slots in enumerate(ranks) for slot in slots for action in slot_actions(slot))
            fits_loop = all(
                rank_of_stage(action.stage, num_ranks, "loop") == rank
                for rank, slots in enumerate(ranks) for slot in slots for action in slot_actions(slot))
            placement = "v" if fits_v and not fits_loop else "loop"
        if num_microbatches is None:
            num_microbatches = max(a.microbatch for a in actions) + 1
        return cls(name, num_ranks, num_microbatches, num_stages // num_ranks, placement, ranks)

    def grid(self, mark: dict[int, int] | None = None, notes: dict[int, str] | None = None,
             max_rows: int | None = None) -> str:
        """Step × rank table, like PyTorch's ``_format_pipeline_order``.

        ``mark`` maps rank → step index to flag with ``<-- here`` (the offending action); ``notes`` maps
        rank → a short explanation printed after the marker. With ``max_rows``, only the rows around the
        marks (or the first rows) are shown.
        """
        mark = mark or {}
        notes = notes or {}
        num_steps = max((len(slots) for slots in self.ranks), default=0)
        cells = [[str(slots[step]) if step < len(slots) else "" for slots in self.ranks] for step in range(num_steps)]
        width = max([len(c) for row in cells for c in row] + [len(f"Rank {self.num_ranks - 1}")])
        step_width = len(str(max(num_steps - 1, 0)))
        header = " " * (step_width + 7) + "  ".join(f"Rank {r}".ljust(width) for r in range(self.num_ranks))
        lines = [header.rstrip()]
        shown = range(num_steps)
        if max_rows is not None and num_steps > max_rows:
            focus = sorted(set(mark.values())) or [0]
            keep = set()
            for step in focus:
                keep.update(range(max(0, step - max_rows // 2), min(num_steps, step + max_rows // 2 + 1)))
            shown = sorted(keep)
        previous = -1
        for step in shown:
            if step != previous + 1:
                lines.append("       ...")
            previous = step
            row = f"Step {str(step).zfill(step_width)}: " + "  ".join(c.ljust(width) for c in cells[step])
            flagged = [r for r, s in mark.items() if s == step]
            if flagged:
                row = row.rstrip() + "  <-- here: " + "; ".join(
                    f"rank {r} {self.ranks[r][step]}" + (f" {notes[r]}" if r in notes else "") for r in flagged
                )
            lines.append(row.rstrip())
        if num_steps and previous != num_steps - 1:
            lines.append("       ...")
        return "\n".join(lines)


KIND_CODES = {Kind.F: 0, Kind.B: 1, Kind.I: 2, Kind.W: 3}
KIND_LETTERS = "FBIW"
_CODE_OF_LETTER = {letter: code for code, letter in enumerate(KIND_LETTERS)}


@dataclass(frozen=True, eq=False)
class CompiledSchedule:
    """The schedule as flat integer arrays, one entry per action in rank-then-list order.

    ``slots[r]`` is rank r's list with each slot a tuple of ``(kind_code, stage, microbatch)`` triples;
    ``slot_index`` numbers the slots 0..total−1 across ranks (both halves of an overlapped pair share one).
    """

    slots: tuple[tuple[tuple[tuple[int, int, int], ...], ...], ...]
    rank: np.ndarray
    step: np.ndarray
    stage: np.ndarray
    kind: np.ndarray
    microbatch: np.ndarray
    slot_index: np.ndarray
    overlapped: np.ndarray
    num_slots: int

    @classmethod
    def of(cls, schedule: "Schedule") -> "CompiledSchedule":
        slots = []
        ranks, steps, stages, kinds, microbatches, slot_indices, overlapped = [], [], [], [], [], [], []
        flat = 0
        for rank, rank_slots in enumerate(schedule.ranks):
            compiled_rank = []
            for step, slot in enumerate(rank_slots):
                actions = slot.actions if type(slot) is Overlap else (slot,)
                # Enum hashing is slow at 100k actions; the plain _value_ attribute is not
                triples = tuple((_CODE_OF_LETTER[kind._value_], stage, mb) for stage, kind, mb in actions)
                compiled_rank.append(triples)
                for code, stage, microbatch in triples:
                    ranks.append(rank)
                    steps.append(step)
                    stages.append(stage)
                    kinds.append(code)
                    microbatches.append(microbatch)
                    slot_indices.append(flat)
                    overlapped.append(len(triples) > 1)
                flat += 1
            slots.append(tuple(compiled_rank))
        arrays = dict(rank=ranks, step=steps, stage=stages, kind=kinds, microbatch=microbatches,
                      slot_index=slot_indices)
        arrays = {name: np.asarray(values, dtype=np.int64) for name, values in arrays.items()}
        arrays["overlapped"] = np.asarray(overlapped, dtype=bool)
        return cls(tuple(slots), num_slots=flat, **arrays)

    @cached_property
    def rank_first_slot(self) -> list[int]:
        """Flat index of each rank's first slot (and the total at the end)."""
        return np.concatenate([[0], np.cumsum([len(r) for r in self.slots])]).astype(int).tolist()

    @cached_property
    def slot_first_action(self) -> list[int]:
        """Index of each slot's first action in the action arrays (the actions of a slot are contiguous)."""
        return np.searchsorted(self.slot_index, np.arange(self.num_slots)).tolist()


def rank_of_stage(stage: int, num_ranks: int, placement: str) -> int:
    """[Note: placement] loop: s mod p. V: stages 0..p-1 go down ranks 0..p-1, stages p..2p-1 come back up."""
    if placement == "loop":
        return stage % num_ranks
    if stage < num_ranks:
        return stage
    return 2 * num_ranks - 1 - stage


def all_actions(schedule: Schedule) -> Iterable[tuple[int, Action]]:
    for rank, slots in enumerate(schedule.ranks):
        for slot in slots:
            for action in slot_actions(slot):
                yield rank, action
