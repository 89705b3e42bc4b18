"""The schedule IR: actions, per-rank action lists and the stage→rank placement.

Text forms follow PyTorch's ``torch.distributed.pipelining`` (``_Action.__repr__`` / ``_Action.from_str``):
``"2F0"`` is stage 2, forward, micro-batch 0. Kinds (one enumeration, ``Kind``, used everywhere):

* ``F`` forward
* ``B`` full backward (input and weight gradients together)
* ``I`` backward for the input only (the Zero Bubble paper calls this pass "B")
* ``W`` backward for the weights only

An overlapped forward/backward pair on one rank (DualPipeV) is one slot holding two actions; its CSV text is
PyTorch's ``(0F7;7B3)OVERLAP_F_B``.

Placement (the ``PLACEMENTS`` registry of ``Placement`` records; see [Note: placement]):

* ``loop``: stage s runs on rank ``s mod p`` (GPipe, 1F1B, interleaved 1F1B, ZB-H1/H2).
* ``v``: rank r holds stages ``r`` and ``2p-1-r``, so the model goes down the ranks and back up
  (ZB-V, DualPipeV). The last stage then sits on rank 0, next to the first.
* ``dual``: the ranks of ``v``, but two copies of the model instead of two halves (DualPipe): stages
  ``0..p-1`` are the first copy, down the ranks; stages ``p..2p-1`` the second copy, back up (stage ``p+j`` is
  block ``j``). The first half of the micro-batches goes through the first copy only, the second half through
  the second: each micro-batch has its own *route* (``Schedule.route``).

Words: a rank holds ``num_chunks`` (v) model chunks; ``chunk`` is the index of one of them (0 = nearer the
input). Reading and writing PyTorch's CSV lives in ``engine.pytorch_csv``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeVar, cast

from .files import quoted


class Kind(enum.IntEnum):
    """The kinds of action. The integer is the code the compiled arrays use; the name is PyTorch's letter."""

    F = 0
    B = 1
    I = 2  # noqa: E741 - PyTorch's letter for the input-gradient pass
    W = 3

    def __str__(self) -> str:
        return self.name


KIND_NAMES = {
    Kind.F: "forward",
    Kind.B: "full backward",
    Kind.I: "input-gradient backward",
    Kind.W: "weight-gradient backward",
}
"""How the app and the lessons say each kind in words."""


class Action(NamedTuple):
    """One unit of work of one stage on one micro-batch (a named tuple: generators make 100k of them)."""

    stage: int
    """Index of the model stage (0 = first layers)."""
    kind: Kind
    """F, B, I or W."""
    microbatch: int
    """Index of the micro-batch."""

    def __str__(self) -> str:
        return f"{self.stage}{self.kind.name}{self.microbatch}"

    def __repr__(self) -> str:
        return str(self)

    @classmethod
    def parse(cls, text: str) -> Action:
        match = _ACTION_RE.fullmatch(text.strip())
        if not match:
            raise ValueError(
                f"cannot read action {quoted(text)}: expected stage, kind, micro-batch like '2F0' or '5I3'"
            )
        stage, kind, microbatch = match.groups()
        if len(stage) > 6 or len(microbatch) > 6:
            raise ValueError(
                f"cannot read action {quoted(text)}: stage and micro-batch indices above 999999 are not supported"
            )
        return cls(int(stage), Kind[kind], int(microbatch))


_ACTION_RE = re.compile(r"([0-9]+)([FBIW])([0-9]+)")  # ASCII digits only: \d would read "0F٣" as 0F3
_OVERLAP_START, _OVERLAP_END = "(", ")OVERLAP_F_B"


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


T = TypeVar("T")

Slot = Action | Overlap
"""One entry of a rank's list: a single action, or an overlapped pair that occupies the rank once."""


def slot_actions(slot: Slot) -> tuple[Action, ...]:
    return slot.actions if isinstance(slot, Overlap) else (slot,)


def parse_slot(text: str) -> Slot:
    """An action ("2F0") or an overlapped pair ("(0F7;7B3)OVERLAP_F_B"), read in one pass: a regular
    expression like ``\\((.+);(.+)\\)OVERLAP_F_B`` backtracks quadratically on a long run of "(;" (a 32 KiB
    cell takes 6 s; 8 MiB would never end)."""
    text = text.strip()
    if text.startswith(_OVERLAP_START) and text.endswith(_OVERLAP_END):
        forward, semicolon, backward = text[len(_OVERLAP_START) : -len(_OVERLAP_END)].partition(";")
        if semicolon:
            return Overlap(Action.parse(forward), Action.parse(backward))
    return Action.parse(text)


@dataclass(frozen=True)
class Placement:
    """[Note: placement] Where a schedule's stages live: which rank holds stage s, and how many chunks that
    gives each rank. The registry ``PLACEMENTS`` holds the two the lab knows; ``Schedule.placement`` names one.

    * loop: stage s on rank s mod p, for any number of chunks per rank v (stages 0..p−1 on ranks 0..p−1,
      then p..2p−1 again from rank 0, and so on: interleaved 1F1B's loop).
    * V: stages 0..p−1 go down ranks 0..p−1, stages p..2p−1 come back up, so rank r holds stages r and
      2p−1−r: exactly two chunks per rank, and the last stage sits on rank 0 next to the first."""

    name: str
    """The key: ``Schedule.placement``, the URL's and the CLI's ``placement`` value ("loop", "v", "dual")."""
    title: str
    """How messages name it ("loop", "V", "bidirectional")."""
    chunks_per_rank: int | None
    """The model chunks every rank holds under this placement (2 for V), or None when it takes any v ≥ 1."""
    stage_rank: Callable[[int, int], int]
    """(stage, num_ranks) -> the rank that holds the stage."""
    copies: int = 1
    """Copies of the model the stages make: 1, or 2 for DualPipe's two directions. With c copies, stages
    ``k·S/c .. (k+1)·S/c − 1`` are copy k, and micro-batches ``k·m/c .. (k+1)·m/c − 1`` go through copy k only."""

    def chunks(self, requested: int | None = None) -> int:
        """Chunks per rank a schedule in this placement has: its fixed count, else ``requested``, else 1 (one
        stage per rank, what the search builds in a loop)."""
        if self.chunks_per_rank is not None:
            return self.chunks_per_rank
        return 1 if requested is None else requested

    def check_chunks(self, num_chunks: int) -> None:
        """ValueError unless ``num_chunks`` per rank fit this placement."""
        if self.chunks_per_rank is not None and num_chunks != self.chunks_per_rank:
            raise ValueError(
                f"{self.title} placement holds exactly {self.chunks_per_rank} chunks per rank, got {num_chunks}"
            )


def _loop_rank(stage: int, num_ranks: int) -> int:
    return stage % num_ranks


def _v_rank(stage: int, num_ranks: int) -> int:
    return stage if stage < num_ranks else 2 * num_ranks - 1 - stage


PLACEMENTS: dict[str, Placement] = {
    placement.name: placement
    for placement in (
        Placement("loop", "loop", None, _loop_rank),
        Placement("v", "V", 2, _v_rank),
        Placement("dual", "bidirectional", 2, _v_rank, copies=2),
    )
}
"""The placements by name (see [Note: placement]); iterating gives the names, as the CLI's choices want."""


def rank_of_stage(stage: int, num_ranks: int, placement: str) -> int:
    """The rank that holds ``stage`` under the placement named ``placement`` ([Note: placement])."""
    return PLACEMENTS[placement].stage_rank(stage, num_ranks)


@dataclass(frozen=True)
class Schedule:
    """Per-rank ordered lists of work, plus where each stage lives.

    Every rank runs its list in order; an action waits for its inputs (see ``engine.dependencies``).
    """

    name: str
    """Family name, e.g. "1f1b"; free text for imported schedules."""
    num_ranks: int
    """p: number of devices (pipeline ranks)."""
    num_microbatches: int
    """m: number of micro-batches per training step."""
    num_chunks: int
    """v: model chunks (stages) per rank; the model has p·v stages."""
    placement: str
    """"loop", "v" or "dual": a key of ``PLACEMENTS`` (see [Note: placement])."""
    ranks: tuple[tuple[Slot, ...], ...]
    """ranks[r] is rank r's ordered work."""
    _derived: dict[Callable[[Schedule], Any], Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What other modules computed from this schedule, by the function that computed it (see ``derived``).
    Not part of the schedule: equality, hashing and the text forms ignore it."""

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {tuple(PLACEMENTS)}, got {self.placement!r}")
        PLACEMENTS[self.placement].check_chunks(self.num_chunks)
        if len(self.ranks) != self.num_ranks:
            raise ValueError(f"schedule has {len(self.ranks)} rank lists for {self.num_ranks} ranks")
        copies = self.copies
        if self.num_microbatches % copies:
            raise ValueError(
                f"the {PLACEMENTS[self.placement].title} placement sends half the micro-batches each way, so "
                f"it needs an even number of them, got {self.num_microbatches}"
            )

    @property
    def num_stages(self) -> int:
        return self.num_ranks * self.num_chunks

    def rank_of(self, stage: int) -> int:
        return rank_of_stage(stage, self.num_ranks, self.placement)

    @property
    def copies(self) -> int:
        """Copies of the model its stages make (2 for DualPipe, else 1; see [Note: placement])."""
        return PLACEMENTS[self.placement].copies

    @property
    def route_length(self) -> int:
        """Stages one micro-batch goes through: all of them, or one copy's."""
        return self.num_stages // self.copies

    @property
    def stage_share(self) -> float:
        """The part of one rank's share of the model that one stage is: 1/v, or 1 for DualPipe (each of its
        2p stages is a whole 1/p of the model: a rank holds two of them, two copies)."""
        return self.copies / self.num_chunks

    def route(self, microbatch: int) -> range:
        """The stages micro-batch ``microbatch`` goes through, in order."""
        per_copy = self.num_microbatches // self.copies
        copy = min(microbatch // per_copy, self.copies - 1) if per_copy else 0
        return range(copy * self.route_length, (copy + 1) * self.route_length)

    def weights_per_rank(self) -> list[float]:
        """The weights each rank holds, in units of one rank's share of the model (1/p of it): its stages times
        each stage's share. 1 on every rank but for DualPipe's two copies: 2."""
        held = [0] * self.num_ranks
        for stage in range(self.num_stages):
            held[self.rank_of(stage)] += 1
        return [count * self.stage_share for count in held]

    def block_of(self, stage: int) -> int:
        """Which part of the model stage ``stage`` runs (the stage itself, but for DualPipe's second copy)."""
        return stage % self.route_length

    def derived(self, compute: Callable[[Schedule], T]) -> T:
        """``compute(self)``, computed on first use and kept with the schedule.

        [Note: derived values] A schedule never changes after it is built, so whatever is computed from it
        alone stays true for its lifetime: the compiled arrays and the untimed walk's order
        (``engine.dependencies``) are computed once here and shared by the validator, the simulator, the
        Timeline and the runtime. They live in the declared ``_derived`` field (a frozen dataclass may hold a
        mutable dict), keyed by the function that computed them; they travel with the schedule when it is
        pickled to a rank process, so it need not compute them again."""
        if compute not in self._derived:
            self._derived[compute] = compute(self)
        return cast(T, self._derived[compute])

    @cached_property
    def num_actions(self) -> int:
        return sum(len(slot_actions(slot)) for slots in self.ranks for slot in slots)

    def to_csv(self) -> str:
        """PyTorch's compute-only CSV: one line per rank, comma-separated actions."""
        return "\n".join(",".join(str(slot) for slot in slots) for slots in self.ranks) + "\n"

    def grid(
        self, mark: dict[int, int] | None = None, notes: dict[int, str] | None = None, max_rows: int | None = None
    ) -> str:
        """Step × rank table, like PyTorch's ``_format_pipeline_order``.

        ``mark`` maps rank → step index to flag with ``<-- here`` (the offending action); ``notes`` maps
        rank → a short explanation printed after the marker. With ``max_rows``, only the rows around the
        marks (or the first rows) are shown.
        """
        mark = mark or {}
        notes = notes or {}
        num_steps = max((len(slots) for slots in self.ranks), default=0)
        shown: Sequence[int] = range(num_steps)
        if max_rows is not None and num_steps > max_rows:
            focus = sorted(set(mark.values())) or [0]
            keep: set[int] = set()
            for step in focus:
                keep.update(range(max(0, step - max_rows // 2), min(num_steps, step + max_rows // 2 + 1)))
            shown = sorted(keep)

        def cell(slots: tuple[Slot, ...], step: int) -> str:
            return str(slots[step]) if step < len(slots) else ""

        width = max(
            [len(cell(slots, step)) for step in shown for slots in self.ranks] + [len(f"Rank {self.num_ranks - 1}")]
        )
        step_width = len(str(max(num_steps - 1, 0)))
        header = " " * (step_width + 7) + "  ".join(f"Rank {r}".ljust(width) for r in range(self.num_ranks))
        lines = [header.rstrip()]
        previous = -1
        for step in shown:
            if step != previous + 1:
                lines.append("       ...")
            previous = step
            row = f"Step {str(step).zfill(step_width)}: " + "  ".join(
                cell(slots, step).ljust(width) for slots in self.ranks
            )
            flagged = [r for r, s in mark.items() if s == step]
            if flagged:
                row = (
                    row.rstrip()
                    + "  <-- here: "
                    + "; ".join(
                        f"rank {r} {cell(self.ranks[r], step)}" + (f" {notes[r]}" if r in notes else "")
                        for r in flagged
                    )
                )
            lines.append(row.rstrip())
        if num_steps and previous != num_steps - 1:
            lines.append("       ...")
        return "\n".join(lines)


def all_actions(schedule: Schedule) -> Iterable[tuple[int, Action]]:
    for rank, slots in enumerate(schedule.ranks):
        for slot in slots:
            for action in slot_actions(slot):
                yield rank, action
