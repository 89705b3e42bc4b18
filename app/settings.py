"""What one visitor chose, as plain data, and its public URL form (pure: no Streamlit here).

The URL keys are a contract — lessons and the README link to them:

    /?schedule=gpipe&ranks=4&microbatches=6&chunks=2&costs=F=1,B=2&comm=0&recompute=0&projector=1
    /compare?schedules=gpipe,1f1b,zb-h1&ranks=4&microbatches=8   (plus the keys above)

A bad value never stops the page: it is reported and its default used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from engine import FAMILIES, Costs

MAX_RANKS, MAX_MICROBATCHES, MIN_CHUNKS, MAX_CHUNKS = 32, 256, 2, 8
MAX_COST = 100.0
APP_MAX_PAIRS = 16_384
"""What one visitor may ask the public app for: ranks × micro-batches × chunks (stage, micro-batch pairs).
32 ranks × 256 micro-batches × 2 chunks fit; 32 × 256 × 8 = 65,536 does not."""
URL_KEYS = ("schedule", "ranks", "microbatches", "chunks", "costs", "comm", "recompute", "projector", "scale")
COMPARE_DEFAULT = ("gpipe", "1f1b", "zb-h1")


@dataclass(frozen=True)
class LabSettings:
    """One schedule's configuration: family, sizes and costs (per micro-batch through one rank's share)."""

    schedule: str = "1f1b"
    ranks: int = 4
    microbatches: int = 8
    chunks: int = 2
    """Used only by the families that take chunks."""
    forward: float = 1.0
    backward: float = 2.0
    """B, for families with a full backward."""
    backward_input: float = 1.0
    """I, for families that split the backward."""
    backward_weight: float = 1.0
    """W, for families that split the backward."""
    overlapped: float | None = None
    """DualPipeV's overlapped F&B pair; None: F + B, no gain."""
    comm: float = 0.0
    recompute: bool = False
    keep: float = 0.1
    """With recomputation, the share of its activations a forward keeps."""
    scale: tuple[float, ...] | None = None
    """Optional cost multiplier per stage (an imbalanced model); one entry per stage."""

    @property
    def family(self):
        return FAMILIES[self.schedule]

    @property
    def num_chunks(self) -> int | None:
        return self.chunks if self.family.takes_chunks else None

    @property
    def pairs(self) -> int:
        chunks = self.num_chunks or self.family.fixed_chunks
        return self.ranks * self.family.built_for(self.ranks, self.microbatches) * chunks

    def check(self) -> None:
        """Refuse what the public app does not draw, with the arithmetic."""
        chunks = self.num_chunks or self.family.fixed_chunks
        built = self.family.built_for(self.ranks, self.microbatches)
        if self.pairs > APP_MAX_PAIRS:
            raise ValueError(
                f"{self.ranks} ranks × {built} micro-batches × {chunks} chunk(s) = {self.pairs:,} "
                f"(stage, micro-batch) pairs; this app draws up to {APP_MAX_PAIRS:,} "
                f"(the command line simulates more)"
            )
        stages = self.ranks * chunks
        if self.scale is not None and len(self.scale) != stages:
            raise ValueError(
                f"{len(self.scale)} stage cost multiplier(s) given, but the schedule has {stages} stages "
                f"({self.ranks} ranks × {chunks} chunk(s) each): give one per stage"
            )
        costs = self.costs()
        if costs.forward + costs.backward == 0:
            raise ValueError("every cost is 0, so nothing takes any time: give the forward a duration")

    def costs(self) -> Costs:
        split = self.family.splits_backward
        return Costs(
            forward=self.forward,
            backward=None if split else self.backward,
            backward_input=self.backward_input if split else None,
            backward_weight=self.backward_weight if split else None,
            overlapped=self.overlapped if self.schedule == "dualpipev" else None,
            comm=self.comm,
            recompute=self.recompute,
            recompute_memory_fraction=self.keep,
            stage_scale=self.scale,
        )

    def split_costs(self) -> Costs:
        """F, I and W whatever the family (B = I + W): the editor's and Compare's shared costs."""
        return replace(self, schedule="zb-h1").costs()

    def costs_text(self) -> str:
        if self.family.splits_backward:
            text = f"F={self.forward:g},I={self.backward_input:g},W={self.backward_weight:g}"
        else:
            text = f"F={self.forward:g},B={self.backward:g}"
        if self.schedule == "dualpipev" and self.overlapped is not None:
            text += f",F&B={self.overlapped:g}"
        return text

    def to_query(self) -> dict[str, str]:
        return {
            "schedule": self.schedule,
            "ranks": str(self.ranks),
            "microbatches": str(self.microbatches),
            "chunks": str(self.chunks),
            "costs": self.costs_text(),
            "comm": f"{self.comm:g}",
            "recompute": str(int(self.recompute)),
            **({"scale": ",".join(f"{x:g}" for x in self.scale)} if self.scale else {}),
        }

    def title(self) -> str:
        """What ran, with the effective sizes."""
        built = self.family.built_for(self.ranks, self.microbatches)
        text = f"{self.family.title}: {plural(self.ranks, 'rank')}, {plural(self.microbatches, 'micro-batch')}"
        if built != self.microbatches:
            text += f" (built for {built}, {built - self.microbatches} dropped)"
        if self.num_chunks:
            text += f", {self.num_chunks} chunks per rank"
        return text


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}{'es' if noun.endswith('ch') else 's'}"


def _whole(query, key, low, high, problems, default):
    text = query.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        problems.append(f"{key}={text}: expected a whole number from {low} to {high}; using {default}")
        return default
    return value


def _number(query, key, problems, default):
    text = query.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_COST:
        problems.append(f"{key}={text}: expected a number from 0 to {MAX_COST:g}; using {default:g}")
        return default
    return value


def _flag(query, key, problems, default=False) -> bool:
    text = query.get(key)
    if text is None:
        return default
    if text in ("0", "1", "true", "false"):
        return text in ("1", "true")
    problems.append(f"{key}={text}: expected 0 or 1; using {int(default)}")
    return default


def _costs(query, settings: LabSettings, problems) -> LabSettings:
    text = query.get("costs")
    if text is None:
        return settings
    try:
        costs = Costs.parse(text)
        values = (costs.forward, costs.backward, costs.backward_input, costs.backward_weight, costs.overlapped)
        if max(values) > MAX_COST:
            raise ValueError(f"each cost must be at most {MAX_COST:g}")
    except ValueError as error:
        problems.append(f"costs={text}: {error}; using {settings.costs_text()}")
        return settings
    overlapped = costs.overlapped if "F&B" in text.upper() else None
    return replace(
        settings,
        forward=costs.forward,
        backward=costs.backward,
        backward_input=costs.backward_input,
        backward_weight=costs.backward_weight,
        overlapped=overlapped,
    )


def settings_from_query(query: Mapping[str, str], base: LabSettings = LabSettings()) -> tuple[LabSettings, list[str]]:
    """The settings a URL asks for (each key over ``base``), and a line per value that was refused."""
    problems: list[str] = []
    schedule = query.get("schedule", base.schedule)
    if schedule not in FAMILIES:
        problems.append(
            f"schedule={schedule}: not a schedule; choose one of {', '.join(FAMILIES)}; using {base.schedule}"
        )
        schedule = base.schedule
    settings = replace(
        base,
        schedule=schedule,
        ranks=_whole(query, "ranks", 1, MAX_RANKS, problems, base.ranks),
        microbatches=_whole(query, "microbatches", 1, MAX_MICROBATCHES, problems, base.microbatches),
        chunks=_whole(query, "chunks", MIN_CHUNKS, MAX_CHUNKS, problems, base.chunks),
        comm=_number(query, "comm", problems, base.comm),
        recompute=_flag(query, "recompute", problems, base.recompute),
    )
    return _scale(query, _costs(query, settings, problems), problems), problems


def _scale(query, settings: LabSettings, problems) -> LabSettings:
    text = query.get("scale")
    if not text:
        return settings
    try:
        scale = tuple(float(part) for part in text.split(","))
        if not all(0 < x <= MAX_COST for x in scale):
            raise ValueError
    except ValueError:
        problems.append(
            f"scale={text}: expected numbers from 0 to {MAX_COST:g} separated by commas, one per stage; using none"
        )
        return settings
    return replace(settings, scale=scale)


@dataclass(frozen=True)
class CompareSettings:
    schedules: tuple[str, ...] = COMPARE_DEFAULT
    lab: LabSettings = field(default_factory=lambda: LabSettings(schedule="zb-h1"))
    """Sizes and costs shared by every schedule (B = I + W for the schedules without a split backward)."""

    def settings_for(self, schedule: str) -> LabSettings:
        lab = self.lab
        overlapped = lab.forward + lab.backward_input + lab.backward_weight if schedule == "dualpipev" else None
        return replace(lab, schedule=schedule, backward=lab.backward_input + lab.backward_weight, overlapped=overlapped)

    def to_query(self) -> dict[str, str]:
        query = self.settings_for("zb-h1").to_query()
        del query["schedule"]
        return {"schedules": ",".join(self.schedules), **query}


def compare_from_query(query: Mapping[str, str]) -> tuple[CompareSettings, list[str]]:
    # the shared costs are read as F, I, W (the lab's schedule is a split-backward one) whatever the URL wrote
    lab, problems = settings_from_query({k: v for k, v in query.items() if k != "schedule"}, CompareSettings().lab)
    names = tuple(name.strip() for name in query.get("schedules", ",".join(COMPARE_DEFAULT)).split(",") if name.strip())
    unknown = [name for name in names if name not in FAMILIES]
    unique = tuple(dict.fromkeys(name for name in names if name in FAMILIES))
    if unknown:
        problems.append(f"schedules: {', '.join(unknown)} not known; choose from {', '.join(FAMILIES)}")
    if not 2 <= len(unique) <= 4:
        problems.append(
            f"schedules: compare 2 to 4 different schedules (got {len(unique)}); using {', '.join(COMPARE_DEFAULT)}"
        )
        unique = COMPARE_DEFAULT
    return CompareSettings(unique, lab), problems
