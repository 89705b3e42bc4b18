"""What the lab knows about a schedule family, in one record: its generator, its names, the shape it needs,
how its costs are read, its closed forms and its story. Nothing outside ``engine/schedules/`` asks "is this
DualPipeV?": it asks the family (DESIGN.md habit 15). A family is one file that defines ``FAMILY``, plus one
line in the registry (``engine/schedules/__init__.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..closed_forms import ClosedForm, FormsOf, Setting
from ..costs import PAIR_KEY, Costs
from ..ir import PLACEMENTS, Schedule
from .depth_first import microbatch_rounds

if TYPE_CHECKING:
    from ..timeline import Timeline


@dataclass(frozen=True)
class Family:
    """A schedule family as the user sees it."""

    name: str
    """Registry key and the URL's ``schedule`` value, e.g. "zb-h1"."""
    build: Callable[..., Schedule]
    """Pure generator (num_ranks, num_microbatches[, num_chunks]) -> Schedule."""
    title: str
    """One line for menus and chart titles."""
    story: str
    """One or two sentences on why its numbers are what they are (the "Why these numbers" panel)."""
    source: str
    """Where it comes from (paper, section; PyTorch's class)."""
    pytorch_class: str | None = None
    """The class in ``torch.distributed.pipelining.schedules`` that builds this family ("Schedule1F1B"), or
    None when PyTorch has none (ZB-H1, ZB-H2, V-Half, V-Min: they run from the lab's CSV)."""
    fixed_chunks: int | None = 1
    """Model chunks per rank when the family fixes them (1, or 2 for the V-shaped ones); None when the user
    chooses (v ≥ 2, the ``--chunks`` option)."""
    placement: str = "loop"
    """Where stages live (``engine.ir`` [Note: placement]): "loop" or "v"."""
    splits_backward: bool = False
    """True when the family runs I and W instead of B, and so takes I and W costs."""
    overlaps_forward_backward: bool = False
    """True when one slot runs a forward and a backward together, and so takes an F&B cost."""
    minimum_microbatches: Callable[[int], int] | None = None
    """The fewest micro-batches the generator builds on p ranks (it builds for that many and trims the rest);
    the generator itself calls this, so the notice and the schedule agree."""
    minimum_reason: str = ""
    """Why that minimum, in words."""
    trim_note: str = ""
    """What other implementations do below the minimum, in words, for the notice."""
    refusal: Callable[[int, int], str | None] | None = None
    """(p, m) -> why the family does not build these sizes, with the arithmetic (None: it does); None when it
    builds every p ≥ 1, m ≥ 1 (DualPipe refuses odd p, odd m and m < 2p, as DeepSeek's ``step`` does)."""
    fitted: Callable[[int, int], tuple[int, int]] | None = None
    """(p, m) -> the nearest sizes at or above them that it builds, when it refuses some."""
    in_rounds: bool = False
    """True for the interleaved families, whose micro-batches go through the chunks in rounds."""
    forms: FormsOf | None = None
    """Its closed forms (``engine.closed_forms``), or None when it has none."""

    def __post_init__(self) -> None:
        held = PLACEMENTS[self.placement].chunks_per_rank  # a V holds its two chunks whatever the family
        assert held is None or self.fixed_chunks == held, f"{self.name}: {self.placement} holds {held} chunks"

    @property
    def takes_chunks(self) -> bool:
        return self.fixed_chunks is None

    @property
    def pytorch_name(self) -> str | None:
        """The name PyTorch's ``get_schedule_class`` and torchtitan's ``pipeline_parallel_schedule`` take
        ("1F1B" for ``Schedule1F1B``), or None when PyTorch has no class for this family."""
        return None if self.pytorch_class is None else self.pytorch_class.removeprefix("Schedule")

    def built_for(self, num_ranks: int, num_microbatches: int) -> int:
        """The micro-batch count the generator builds before trimming to ``num_microbatches``."""
        if self.minimum_microbatches is None:
            return num_microbatches
        return max(num_microbatches, self.minimum_microbatches(num_ranks))

    def refuses(self, num_ranks: int, num_microbatches: int) -> str | None:
        """Why it does not build ``num_ranks`` × ``num_microbatches``, in words; None when it does."""
        return None if self.refusal is None else self.refusal(num_ranks, num_microbatches)

    def accepted_sizes(self, num_ranks: int, num_microbatches: int) -> tuple[int, int]:
        """The sizes asked for when it builds them, else the nearest it builds at or above them."""
        return (num_ranks, num_microbatches) if self.fitted is None else self.fitted(num_ranks, num_microbatches)

    def chunks(self, requested: int | None) -> int:
        """Model chunks per rank this family runs for a requested v (its own when it fixes them)."""
        return self.fixed_chunks if self.fixed_chunks is not None else (requested or 2)

    def costs(self, durations: Mapping[str, float | None], **extra: Any) -> Costs:
        """The ``Costs`` this family reads from a full set of durations keyed as ``COST_KEYS``: all but B when it
        splits the backward, all but I and W when it does not, and F&B only when it overlaps (None: F + B, no
        gain). What it leaves out follows by the default rules. ``extra``: the other fields (``comm=0.5``…)."""
        unread = {"B"} if self.splits_backward else {"I", "W"}
        if not self.overlaps_forward_backward:
            unread.add(PAIR_KEY)
        return Costs.of({key: value for key, value in durations.items() if key not in unread}, **extra)

    def closed_forms(self, schedule: Schedule, costs: Costs, timeline: Timeline) -> list[ClosedForm]:
        """Its closed forms for this configuration, next to the simulated values (empty without any)."""
        return [] if self.forms is None else self.forms(Setting.of(schedule, costs), timeline)

    def size_notes(self, num_ranks: int, num_microbatches: int) -> list[str]:
        """What was run when it is not simply the sizes asked for, in words (the app shows these)."""
        p, m, notes = num_ranks, num_microbatches, []
        built = self.built_for(p, m)
        if built != m:
            notes.append(
                f"{self.title} needs at least {built} micro-batches on {p} ranks ({self.minimum_reason}): "
                f"it was built for {built} and runs the first {m}; the other {built - m} were dropped. "
                f"{self.trim_note}"
            )
        if self.in_rounds and m % p:
            sizes = microbatch_rounds(m, p)
            notes.append(
                f"m = {m} is not a multiple of p = {p}: the micro-batches go through the chunks in "
                f"{len(sizes)} round(s) of {' + '.join(map(str, sizes))}. "
                + (
                    "PyTorch takes the same rounds."
                    if len(set(sizes)) == 1
                    else "PyTorch refuses this m (its rounds must divide m evenly); the lab makes the first "
                    "round(s) one larger."
                )
                + " The bubble's closed form still holds for every m ≥ p; the peak-memory form assumes m a "
                "multiple of p."
            )
        return notes
