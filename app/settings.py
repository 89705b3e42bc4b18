"""What a visitor chose on the simulated pages, in one typed object per kind of page (pure: no Streamlit here).

``LabSettings`` (Playground, lessons, the editor's "start from a family") and ``CompareSettings`` (Compare) each
own, in one place (DESIGN.md habit 14):

* their fields, under the engine's names (``num_ranks``, ``backward_input``, ``recompute_memory_fraction``…);
* their URL codec — ``from_query`` / ``to_query`` — whose keys are a public contract (README "Links you can
  share"; lessons link to them):

      /?schedule=gpipe&ranks=4&microbatches=6&chunks=2&costs=F=1,B=2&comm=0&recompute=1&keep=0.5&scale=1,2,1,1
      /compare?schedules=gpipe,1f1b,dualpipev&ranks=4&microbatches=8&costs=F=1,I=1,W=1,F%26B=2.5

* their widget keys and values (``widget_values`` / ``from_widgets``), prefixed by the page;
* their limits (``app/limits.py``) and their conversion to the engine's ``Costs``.

A bad value never stops the page: it is named in a problem line and its default used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from engine import FAMILIES, Costs
from engine.schedules import Family

from . import limits
from .codec import choice, flag, number, numbers, plain, shown, whole, written

LAB_KEYS = ("schedule", "ranks", "microbatches", "chunks", "costs", "comm", "links", "recompute", "keep", "scale")
"""The URL keys ``LabSettings`` reads and writes (``projector`` belongs to every page: ``app/state.py``)."""
COMPARE_KEYS = ("schedules",) + tuple(key for key in LAB_KEYS if key != "schedule")
COMPARE_DEFAULT = ("gpipe", "1f1b", "zb-h1")


@dataclass(frozen=True)
class LabSettings:
    """One schedule's configuration: family, sizes and costs (per micro-batch through one rank's share)."""

    family: str = "1f1b"
    """The schedule family's name (URL ``schedule``)."""
    num_ranks: int = 4
    """p (URL ``ranks``)."""
    num_microbatches: int = 8
    """m (URL ``microbatches``)."""
    num_chunks: int = 2
    """v, used only by the families that take chunks (URL ``chunks``)."""
    forward: float = 1.0
    """F (URL ``costs``, as are B, I, W and F&B)."""
    backward: float = 2.0
    """B, for the families with a full backward."""
    backward_input: float = 1.0
    """I, for the families that split the backward."""
    backward_weight: float = 1.0
    """W, for the families that split the backward."""
    overlapped: float | None = 2.5
    """F&B, one overlapped forward-and-backward pair, for the families that overlap; None: F + B (no gain)."""
    comm: float = 0.0
    """Transfer time between ranks (URL ``comm``)."""
    shared_links: bool = False
    """Transfers occupy their link, one at a time per direction (URL ``links=shared``; ``engine.links``)."""
    recompute: bool = False
    """URL ``recompute``."""
    recompute_memory_fraction: float = 0.1
    """With recomputation, the share of its activations a forward keeps (URL ``keep``)."""
    stage_scale: tuple[float, ...] | None = None
    """Optional cost multiplier per stage (an imbalanced model), one per stage (URL ``scale``)."""

    # -- what the family makes of it ---------------------------------------------------------------------
    @property
    def spec(self) -> Family:
        """The family's record (``engine.schedules.Family``)."""
        return FAMILIES[self.family]

    @property
    def requested_chunks(self) -> int | None:
        """v as ``build_schedule`` takes it: None for a family that fixes its own."""
        return self.num_chunks if self.spec.takes_chunks else None

    @property
    def chunks(self) -> int:
        """v as it runs."""
        return self.spec.chunks(self.num_chunks)

    @property
    def built_microbatches(self) -> int:
        return self.spec.built_for(self.num_ranks, self.num_microbatches)

    @property
    def pairs(self) -> int:
        return self.num_ranks * self.built_microbatches * self.chunks

    def check(self) -> None:
        """Refuse what the public app does not draw, with the arithmetic."""
        if self.pairs > limits.MAX_PAIRS:
            raise ValueError(
                f"{self.num_ranks} ranks × {self.built_microbatches} micro-batches × {self.chunks} chunk(s) = "
                f"{self.pairs:,} (stage, micro-batch) pairs; this app draws up to {limits.MAX_PAIRS:,} "
                f"(the command line simulates more)"
            )
        stages = self.num_ranks * self.chunks
        if self.stage_scale is not None and len(self.stage_scale) != stages:
            raise ValueError(
                f"{len(self.stage_scale)} stage cost multiplier(s) given, but the schedule has {stages} stages "
                f"({self.num_ranks} ranks × {self.chunks} chunk(s) each): give one per stage"
            )
        costs = self.costs()
        if costs.forward + costs.backward == 0:
            raise ValueError("every cost is 0, so nothing takes any time: give the forward a duration")

    def costs(self) -> Costs:
        """The engine's costs as this family reads them: B, or I and W; F&B when it overlaps."""
        durations = {"F": self.forward, "B": self.backward, "I": self.backward_input, "W": self.backward_weight}
        return self.spec.costs({**durations, "F&B": self.overlapped}, **self._shared_costs())

    def split_costs(self) -> Costs:
        """F, I, W (B = I + W) and F&B whatever the family: the costs of a pasted schedule (the editor)."""
        durations = {"F": self.forward, "I": self.backward_input, "W": self.backward_weight, "F&B": self.overlapped}
        return Costs.of(durations, **self._shared_costs())  # F&B None: F + B

    def _shared_costs(self) -> dict:
        return dict(
            comm=self.comm,
            shared_links=self.shared_links,
            recompute=self.recompute,
            recompute_memory_fraction=self.recompute_memory_fraction,
            stage_scale=self.stage_scale,
        )

    def title(self) -> str:
        """What ran, with the effective sizes."""
        built, m = self.built_microbatches, self.num_microbatches
        text = f"{self.spec.title}: {plural(self.num_ranks, 'rank')}, {plural(m, 'micro-batch')}"
        if built != m:
            text += f" (built for {built}, {built - m} dropped)"
        if self.spec.takes_chunks:
            text += f", {self.num_chunks} chunks per rank"
        return text

    # -- the address bar -----------------------------------------------------------------------------------
    def costs_text(self, *, split: bool | None = None, overlapped: bool | None = None) -> str:
        """The URL's ``costs`` value: "F=1,B=2" or "F=1,I=1,W=1", with ",F&B=2.5" for an overlapping family
        (always written then, so a link never changes the number it shows)."""
        split = self.spec.splits_backward if split is None else split
        overlapped = self.spec.overlaps_forward_backward if overlapped is None else overlapped
        parts = [f"F={written(self.forward)}"]
        if split:
            parts += [f"I={written(self.backward_input)}", f"W={written(self.backward_weight)}"]
        else:
            parts.append(f"B={written(self.backward)}")
        if overlapped:
            parts.append(f"F&B={written(self.overlapped_or_none_gained(split))}")
        return ",".join(parts)

    def overlapped_or_none_gained(self, split: bool) -> float:
        """F&B as a number: the given one, or F + B, no gain (B = I + W when the costs are split)."""
        if self.overlapped is not None:
            return self.overlapped
        return self.forward + (self.backward_input + self.backward_weight if split else self.backward)

    def to_query(self) -> dict[str, str]:
        query = {
            "schedule": self.family,
            "ranks": str(self.num_ranks),
            "microbatches": str(self.num_microbatches),
            "chunks": str(self.num_chunks),
            "costs": self.costs_text(),
            "comm": written(self.comm),
            "recompute": str(int(self.recompute)),
        }
        if self.shared_links:
            query["links"] = "shared"
        if self.recompute:
            query["keep"] = written(self.recompute_memory_fraction)
        if self.stage_scale:
            query["scale"] = ",".join(map(written, self.stage_scale))
        return query

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: LabSettings | None = None) -> tuple[LabSettings, list[str]]:
        """The settings a URL asks for (each key over ``base``), and a line per value that was refused."""
        base = base or cls()
        problems: list[str] = []
        family = query.get("schedule", base.family)
        if family not in FAMILIES:
            problems.append(
                f"schedule={shown(family)}: not a schedule; choose one of {', '.join(FAMILIES)}; using {base.family}"
            )
            family = base.family
        settings = replace(
            base,
            family=family,
            num_ranks=whole(query, "ranks", 1, limits.MAX_RANKS, base.num_ranks, problems),
            num_microbatches=whole(query, "microbatches", 1, limits.MAX_MICROBATCHES, base.num_microbatches, problems),
            num_chunks=whole(query, "chunks", limits.MIN_CHUNKS, limits.MAX_CHUNKS, base.num_chunks, problems),
            comm=number(query, "comm", limits.MAX_COST, base.comm, problems),
            shared_links=choice(
                query, "links", ("delay", "shared"), "shared" if base.shared_links else "delay", problems
            )
            == "shared",  # fmt: skip
            recompute=flag(query, "recompute", base.recompute, problems),
            recompute_memory_fraction=number(query, "keep", 1.0, base.recompute_memory_fraction, problems),
        )
        settings = _read_costs(query, settings, problems)
        return _read_scale(query, settings, problems), problems

    # -- the widgets ---------------------------------------------------------------------------------------
    @staticmethod
    def widget_key(prefix: str, name: str) -> str:
        """The widget of field ``name`` on the page whose keys start with ``prefix`` (pg, cp, ed, ls)."""
        return f"{prefix}_{name}"

    def widget_values(self, prefix: str) -> dict[str, object]:
        """Every field as its widget holds it: F&B as a number, the multipliers as text."""
        values: dict[str, object] = {self.widget_key(prefix, f.name): getattr(self, f.name) for f in fields(self)}
        values[self.widget_key(prefix, "overlapped")] = self.overlapped_or_none_gained(self.spec.splits_backward)
        values[self.widget_key(prefix, "stage_scale")] = ",".join(map(written, self.stage_scale or ()))
        return values

    @classmethod
    def from_widgets(cls, prefix: str, values: Mapping[str, object]) -> tuple[LabSettings, list[str]]:
        """The settings the widgets hold (a field without a widget keeps its default), and a line per value
        that could not be read (the multipliers are typed text)."""
        given = {
            f.name: values[cls.widget_key(prefix, f.name)]
            for f in fields(cls)
            if cls.widget_key(prefix, f.name) in values
        }
        problems: list[str] = []
        text = str(given.pop("stage_scale", "") or "")
        settings = cls(**given)  # type: ignore[arg-type]  # widget values have the fields' types
        if text.strip():
            try:
                settings = replace(settings, stage_scale=numbers(text))
            except ValueError:
                problems.append(
                    f"stage cost multipliers are numbers separated by commas, got {shown(text)}; using none"
                )
        return settings, problems


def _read_costs(query: Mapping[str, str], settings: LabSettings, problems: list[str]) -> LabSettings:
    text = query.get("costs")
    if text is None:
        return settings
    try:
        costs = Costs.parse(text)
        values = (costs.forward, costs.backward, costs.backward_input, costs.backward_weight)
        if max(values) > limits.MAX_COST or costs.overlapped > limits.MAX_OVERLAPPED:
            raise ValueError(f"each cost must be at most {limits.MAX_COST:g} (F&B at most {limits.MAX_OVERLAPPED:g})")
    except ValueError as error:
        problems.append(f"costs={shown(text)}: {plain(error)}; using {settings.costs_text()}")
        return settings
    return replace(
        settings,
        forward=costs.forward,
        backward=costs.backward,
        backward_input=costs.backward_input,
        backward_weight=costs.backward_weight,
        overlapped=costs.overlapped if "F&B" in text.upper() else None,
    )


def _read_scale(query: Mapping[str, str], settings: LabSettings, problems: list[str]) -> LabSettings:
    text = query.get("scale")
    if not text:
        return settings
    try:
        scale = numbers(text)
        if not all(0 < x <= limits.MAX_COST for x in scale):
            raise ValueError
    except ValueError:
        problems.append(
            f"scale={shown(text)}: expected numbers from 0 to {limits.MAX_COST:g} separated by commas, one per "
            f"stage; using none"
        )
        return settings
    return replace(settings, stage_scale=scale)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}{'es' if noun.endswith('ch') else 's'}"


@dataclass(frozen=True)
class CompareSettings:
    """Two to four schedules under the same sizes and costs (B = I + W for those without a split backward)."""

    schedules: tuple[str, ...] = COMPARE_DEFAULT
    """Family names (URL ``schedules``)."""
    lab: LabSettings = field(default_factory=LabSettings)
    """The sizes and costs every schedule shares; its ``family`` is not used."""

    @property
    def overlaps(self) -> bool:
        """Whether any chosen family takes an F&B cost (then the page asks for it and the URL carries it)."""
        return any(FAMILIES[name].overlaps_forward_backward for name in self.schedules)

    @property
    def takes_chunks(self) -> bool:
        return any(FAMILIES[name].takes_chunks for name in self.schedules)

    def settings_for(self, schedule: str) -> LabSettings:
        lab = self.lab
        return replace(lab, family=schedule, backward=lab.backward_input + lab.backward_weight)

    def check(self) -> None:
        if not 2 <= len(self.schedules) <= 4:
            raise ValueError(f"choose 2 to 4 schedules to compare (chosen: {len(self.schedules)})")

    def to_query(self) -> dict[str, str]:
        query = {"schedules": ",".join(self.schedules), **self.lab.to_query()}
        del query["schedule"]
        query["costs"] = self.lab.costs_text(split=True, overlapped=self.overlaps)
        return query

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> tuple[CompareSettings, list[str]]:
        lab, problems = LabSettings.from_query({k: v for k, v in query.items() if k != "schedule"})
        schedules, more = cls.schedules_from_query(query)
        return cls(schedules, lab), problems + more

    @staticmethod
    def schedules_from_query(query: Mapping[str, str]) -> tuple[tuple[str, ...], list[str]]:
        """The URL's ``schedules``: 2 to 4 known families, or the defaults and a line saying why."""
        problems: list[str] = []
        text = query.get("schedules", ",".join(COMPARE_DEFAULT))
        names = tuple(name.strip() for name in text.split(",") if name.strip())
        unknown = [name for name in names if name not in FAMILIES]
        unique = tuple(dict.fromkeys(name for name in names if name in FAMILIES))
        if unknown:
            problems.append(f"schedules: {shown(', '.join(unknown))} not known; choose from {', '.join(FAMILIES)}")
        if not 2 <= len(unique) <= 4:
            problems.append(
                f"schedules: compare 2 to 4 different schedules (got {len(unique)}); using {', '.join(COMPARE_DEFAULT)}"
            )
            unique = COMPARE_DEFAULT
        return unique, problems
