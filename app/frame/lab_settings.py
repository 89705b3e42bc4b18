"""What a visitor chose on the simulated pages, in one typed object per kind of page (pure: no Streamlit here).

``LabSettings`` (Playground, lessons, the editor's "start from a family") and ``CompareSettings`` (Compare) are
lists of declared settings (``engine.options``): each field's URL key, codec, bounds, widget, label and help are
in its declaration, and the URL codec, the widget keys and values and the bound checks follow from it. The keys
are a public contract (docs/links.md; lessons link to them):

    /?schedule=gpipe&ranks=4&microbatches=6&chunks=2&costs=F=1,B=2&comm=0&recompute=1&keep=0.5&scale=1,2,1,1
    /compare?schedules=gpipe,1f1b,dualpipev&ranks=4&microbatches=8&costs=F=1,I=1,W=1,F%26B=2.5

A bad value never stops the page: it is named in a problem line and its default used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from app.frame import limits
from app.frame.safe_text import numbers
from engine import FAMILIES, Costs
from engine.costs import COST_KEYS, COST_KINDS, PAIR_KEY, Durations, costs_text
from engine.options import Choice, Declared, Option, Text, code_span, declared, real, toggle, written
from engine.schedules import Family

SPLIT_KEYS, FULL_KEYS = ("F", "I", "W"), ("F", "B")
"""The costs a family with a split backward reads, and one with a full backward."""


def _read_costs(text: str) -> Durations:
    """A link's costs: F, B, I, W (resolved from what is given) and F&B only when given, each within the app's
    bounds."""
    durations = Costs.parse(text).durations
    if max(durations[key] for key in ("F", "B", "I", "W")) > limits.MAX_COST or (
        durations[PAIR_KEY] > limits.MAX_OVERLAPPED
    ):
        raise ValueError(f"each cost must be at most {limits.MAX_COST:g} (F&B at most {limits.MAX_OVERLAPPED:g})")
    given_pair = PAIR_KEY in text.upper()
    return Durations({key: value for key, value in durations.items() if key != PAIR_KEY or given_pair})


def _costs_written(durations: Durations) -> str:
    """Every cost given, as a link writes it (F=1,B=2,I=1,W=1,F&B=2.5)."""
    return costs_text(durations, tuple(key for key in COST_KEYS if key in durations))


COSTS = Text(_read_costs, _costs_written, "costs like F=1,B=2 or F=1,I=1,W=1,F&B=2.5")


def _read_scale(text: str) -> tuple[float, ...] | None:
    if not text.strip():
        return None
    try:
        scale = numbers(text)
    except ValueError:
        raise ValueError("not all of them are numbers") from None
    if not all(0 < x <= limits.MAX_COST for x in scale):
        raise ValueError(f"each multiplier is above 0 and at most {limits.MAX_COST:g}")
    return scale


LINKS_LABEL = "Transfers share a link"
LINKS_HELP = (
    "A transfer occupies its link: one at a time in each direction between two ranks, so a burst of hand-offs "
    "queues. Off: each is a pure delay."
)
RECOMPUTE_HELP = "A forward keeps only part of its activations; the backward re-runs it first."
KEEP_HELP = "The stage input and little else; the rest is rebuilt by re-running the forward."
SCALE = Text(
    _read_scale,
    lambda scale: ",".join(map(written, scale or ())),
    f"numbers separated by commas, one per stage, each above 0 and at most {limits.MAX_COST:g}",
)
SCALE_HELP = "One number per stage: an imbalanced model, where one stage is slower than the others."
COST_BOXES = {
    cost.key: real(
        f"cost_{cost.key}",
        0.0,
        limits.MAX_OVERLAPPED if cost.key == PAIR_KEY else limits.MAX_COST,
        cost.label,
        cost.help or "",
        step=0.25,
    )
    for cost in COST_KINDS
}
"""One number box per cost kind (``engine.costs.COST_KINDS``: its label and help), keyed ``{page}_cost_{key}``."""
DEFAULT_COSTS = Durations({"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0, PAIR_KEY: 2.5})


@dataclass(frozen=True)
class LabSettings(Declared):
    """One schedule's configuration: family, sizes and costs (per micro-batch through one rank's share)."""

    family: str = declared("1f1b", limits.FAMILY)
    num_ranks: int = declared(6, limits.RANKS)
    num_microbatches: int = declared(12, limits.MICROBATCHES)
    num_chunks: int = declared(2, limits.CHUNKS)
    """v, used only by the families that take chunks."""
    durations: Durations = declared(
        DEFAULT_COSTS,
        Option(
            "costs",
            Text(_read_costs, _costs_written, "costs like F=1,B=2 or F=1,I=1,W=1,F&B=2.5"),
            "Costs",
            widget="none",
        ),
    )
    """F, B, I, W and (when given) F&B: each family reads its own (``Family.costs``); no F&B means F + B."""
    comm: float = declared(0.0, limits.COMM)
    expert_comm: float = declared(0.0, limits.EXPERT_COMM)
    shared_links: bool = declared(
        False,
        Option("links", Choice((False, True), texts=("delay", "shared")), LINKS_LABEL, LINKS_HELP, widget="toggle"),
    )
    recompute: bool = declared(False, toggle("recompute", "Recompute activations", RECOMPUTE_HELP))
    recompute_memory_fraction: float = declared(
        0.1, real("keep", 0.0, 1.0, "Share a forward keeps", KEEP_HELP, widget="slider", step=0.05)
    )
    stage_scale: tuple[float, ...] | None = declared(
        None, Option("scale", SCALE, "Stage cost multipliers (optional)", SCALE_HELP, widget="text")
    )

    # -- what the family makes of it ---------------------------------------------------------------------
    @property
    def family_spec(self) -> Family:
        """The family's record (``engine.schedules.Family``)."""
        return FAMILIES[self.family]

    @classmethod
    def _after_query(cls, settings, query, problems):
        """A link that names a family without chunks (GPipe, 1F1B…) gets no warning about its chunks, a value that
        family does not use (``/?schedule=gpipe&chunks=1`` says nothing of chunks); a link that
        names no family, or one that cannot be read, is warned as before."""
        options = dict(cls.options())
        named = query.get(options["family"].key)
        if named == settings.family and not settings.family_spec.takes_chunks:
            key = options["num_chunks"].key
            problems = [problem for problem in problems if not problem.startswith(f"{key}=")]
        return settings, problems

    @property
    def requested_chunks(self) -> int | None:
        """v as ``build_schedule`` takes it: None for a family that fixes its own."""
        return self.num_chunks if self.family_spec.takes_chunks else None

    @property
    def chunks(self) -> int:
        """v as it runs."""
        return self.family_spec.chunks(self.num_chunks)

    @property
    def built_microbatches(self) -> int:
        return self.family_spec.built_for(self.num_ranks, self.num_microbatches)

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
        return self.family_spec.costs(self.durations, **self._shared_costs())

    def split_costs(self) -> Costs:
        """F, I, W (B = I + W) and F&B whatever the family: the costs of a pasted schedule (the editor)."""
        given = {key: value for key, value in self.durations.items() if key != "B"}
        return Costs.of(given, **self._shared_costs())

    def _shared_costs(self) -> dict:
        return dict(
            comm=self.comm,
            expert_comm=self.expert_comm,
            shared_links=self.shared_links,
            recompute=self.recompute,
            recompute_memory_fraction=self.recompute_memory_fraction,
            stage_scale=self.stage_scale,
        )

    def title(self) -> str:
        """What ran, with the effective sizes."""
        built, m = self.built_microbatches, self.num_microbatches
        text = f"{self.family_spec.title}: {plural(self.num_ranks, 'rank')}, {plural(m, 'micro-batch')}"
        if built != m:
            text += f" (built for {built}, {built - m} dropped)"
        if self.family_spec.takes_chunks:
            text += f", {self.num_chunks} chunks per rank"
        return text

    # -- the address bar -----------------------------------------------------------------------------------
    def costs_text(self, *, split: bool | None = None, overlapped: bool | None = None) -> str:
        """The URL's ``costs`` value: "F=1,B=2" or "F=1,I=1,W=1", with ",F&B=2.5" for an overlapping family
        (always written then, so a link never changes the number it shows)."""
        split = self.family_spec.splits_backward if split is None else split
        overlapped = self.family_spec.overlaps_forward_backward if overlapped is None else overlapped
        keys = (SPLIT_KEYS if split else FULL_KEYS) + ((PAIR_KEY,) if overlapped else ())
        return costs_text(self.cost_values(split), keys)

    def cost_values(self, split: bool) -> dict[str, float]:
        """Every cost as a number: F&B the given one, or F + B, no gain (B = I + W when the costs are split)."""
        values = dict(self.durations)
        if PAIR_KEY not in values:
            backward = values["I"] + values["W"] if split else values["B"]
            values[PAIR_KEY] = values["F"] + backward
        return values

    def omitted_keys(self) -> set[str]:
        """A link carries ``links`` only when shared, ``keep`` only with recomputation, ``scale`` only when set."""
        return {
            name
            for name, unused in (
                ("shared_links", not self.shared_links),
                ("expert_comm", not self.expert_comm),
                ("recompute_memory_fraction", not self.recompute),
                ("stage_scale", not self.stage_scale),
            )
            if unused
        }

    def to_query(self) -> dict[str, str]:
        return super().to_query() | {"costs": self.costs_text()}

    # -- the widgets: one box per cost kind instead of one text ----------------------------------------------
    def widget_values(self, prefix: str | None = None) -> dict[str, object]:
        values = super().widget_values(prefix)
        del values[self.widget_key("durations", prefix)]
        costs = self.cost_values(self.family_spec.splits_backward)
        return values | {self.widget_key(box.key, prefix): costs[key] for key, box in COST_BOXES.items()}

    @classmethod
    def from_widgets(cls, values: Mapping[str, object], prefix: str | None = None) -> tuple[LabSettings, list[str]]:
        settings, problems = super().from_widgets(values, prefix)
        given: dict[str, float] = dict(settings.durations)
        for key, box in COST_BOXES.items():
            widget = cls.widget_key(box.key, prefix)
            if widget in values:
                try:
                    given[key] = box.codec.check(values[widget])
                except ValueError as error:
                    problems.append(f"{box.label}: {error}, got {code_span(values[widget])}")
        return replace(settings, durations=Durations(given)), problems


LAB_KEYS = LabSettings.url_keys()
"""The URL keys ``LabSettings`` reads and writes (``projector`` belongs to every page: ``app/frame/state.py``)."""


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}{'es' if noun.endswith('ch') else 's'}"
