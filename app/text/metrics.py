"""Every metric the lab names, once: what it is computed from and how (the engine accessor), and — for the ones
drawn as metric cards — the card's label, its value's format and the glossary term that is its help. The cards
(``app.frame.timeline_panels``), the glossary's card terms (``app.text.glossary.METRICS``) and the lessons' expressions
(``app.views.lessons.answers``; ``lessons/*.toml`` name metrics by ``Metric.name``) all read this table (pure data, no
Streamlit here).

A metric is read from one of four things (``Metric.reads``):

* ``"timeline"`` — a simulated ``engine.Timeline`` (the step of a lesson's configuration, a Playground card);
* ``"causes"``  — that step's idle time by cause, ``engine.attribution.IdleAttribution``;
* ``"plan"``    — a plan of a real model on real GPUs, ``engine.scale.Plan`` (exact, so lessons may claim it);
* ``"real"``    — a real run's ``engine.runtime.RunResult`` (measured: lessons show it live, never claim it).

The same name may mean the same quantity of two things (``bubble_fraction`` of a timeline and of a plan); a name
is unique within what it reads. Adding a metric is one entry in ``METRICS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from app.text import glossary
from engine.attribution import CAUSES

SOURCES = ("timeline", "causes", "plan", "real")
"""What a metric can be read from (see the module's docstring)."""


@dataclass(frozen=True)
class Metric:
    """One named quantity: how the engine computes it and, for a card, how the page shows it."""

    name: str
    """As lessons and cards name it: ``bubble_fraction``, written ``m24.bubble_fraction`` for a named
    configuration in a lesson."""
    reads: str
    """What ``compute`` takes: one of ``SOURCES``."""
    compute: Callable[[Any], float]
    """The engine accessor: the value, from a Timeline, an IdleAttribution, a Plan or a RunResult."""
    card: str = ""
    """The metric card's label ("Bubble fraction"); "" when no card draws it."""
    format: str = ".4g"
    """The card's format spec for the value (".1%": a share; ",": thousands separated)."""
    unit: str = ""
    """Written after the card's value (" s", " GB")."""
    timed: bool = False
    """The value is in the page's time unit (simulated units, ms): the card writes the one it is given."""
    term: str = ""
    """The glossary term that defines it (``app.text.glossary``): a card's help, and what a lesson introducing the
    card writes in bold."""
    explains: str = ""
    """The card's help where no glossary term defines it: how the number is made ("TP × PP × DP × CP")."""

    def __post_init__(self) -> None:
        if self.reads not in SOURCES:
            raise ValueError(f"metric {self.name!r} reads {self.reads!r}; choose from {', '.join(SOURCES)}")
        if self.term and self.term not in glossary.BY_NAME:
            raise ValueError(f"metric {self.name!r}: its term {self.term!r} is not in the glossary")
        format(0.5, self.format)  # a spec that cannot format a number fails here, not on a page

    @property
    def help(self) -> str:
        """The card's help: its term's definition, one sentence (else ``explains``)."""
        return glossary.definition(self.term) if self.term else self.explains

    def value(self, subject: Any) -> float:
        """The metric of ``subject`` (what ``reads`` names), as a number."""
        return float(self.compute(subject))

    def shown(self, subject: Any, *, time_unit: str = "") -> str:
        """The value as its card writes it: "33.3%", "24", "12,288", "1.2 s"; a time with ``time_unit`` after it."""
        return f"{self.compute(subject):{self.format}}" + (time_unit if self.timed else self.unit)


def _idle_by_cause(cause: str) -> str:
    """A cause of idle time (``engine.attribution.CAUSES``) as a metric name: "cost ratios" → idle_cost_ratios."""
    return "idle_" + cause.replace(" ", "_")


def _total_of(cause: str) -> Callable[[Any], float]:
    """``cause``'s idle time, summed over the ranks, of an ``IdleAttribution``."""
    return lambda split: split.total(cause)


def _measured_total_of(cause: str) -> Callable[[Any], float]:
    """``cause``'s idle time, summed over the ranks, of a real run (milliseconds)."""
    return lambda result: result.idle_attribution().total(cause)


def _last_over_middle(busy: list[float]) -> float:
    """The last rank's busy time over the mean of the ranks between the first and the last (lesson 8: how much
    the output layer adds, simulated or measured)."""
    middle = busy[1:-1] or busy[:1]
    return busy[-1] / (sum(middle) / len(middle))


# -- a simulated step -----------------------------------------------------------------------------------------
# the cards come first, in the order they are drawn
TIMELINE_METRICS = (
    Metric("last_stage_ratio", "timeline", lambda t: _last_over_middle(t.busy_per_rank())),
    Metric("makespan", "timeline", lambda t: t.makespan, card="Makespan", timed=True, term="makespan"),
    Metric("idle", "timeline", lambda t: sum(t.idle_per_rank()), card="Idle time", timed=True, term="idle time"),
    Metric(
        "bubble_fraction",
        "timeline",
        lambda t: t.bubble_fraction,
        card="Bubble fraction",
        format=".1%",
        term="bubble fraction",
    ),
    Metric(
        "bubble_ratio",
        "timeline",
        lambda t: t.bubble_ratio,
        card="Bubble ratio",
        format=".3f",
        term="bubble ratio",
    ),
    Metric(
        "idle_inside_span",
        "timeline",
        lambda t: t.span_idle_fraction,
        card="Idle inside span",
        format=".1%",
        term="idle inside span",
    ),
    Metric(
        "period_bubble_rate",
        "timeline",
        lambda t: t.period_bubble_rate,
        card="Bubble, repeated",
        format=".1%",
        term="period",
    ),
    Metric("period", "timeline", lambda t: t.period),
    Metric(
        "peak_memory",
        "timeline",
        lambda t: max(t.peak_memory_per_rank(), default=0.0),
        card="Peak memory",
        format=".3g",
        term="peak memory",
    ),
    Metric("transfers", "timeline", lambda t: t.num_transfers, card="Transfers", format=",", term="transfer"),
    Metric(
        "all_to_all_hidden",
        "timeline",
        lambda t: t.expert_comm["hidden_fraction"] if t.expert_comm else 0.0,
        card="All-to-all hidden",
        format=".0%",
        term="all-to-all",
    ),
    Metric("all_to_all_waited", "timeline", lambda t: t.expert_comm["exposed"] if t.expert_comm else 0.0),
    Metric("all_to_all_total", "timeline", lambda t: t.expert_comm["total"] if t.expert_comm else 0.0),
    # what lessons say without a card
    Metric("idle_per_rank", "timeline", lambda t: max(t.idle_per_rank())),
    Metric("peak_memory_last_rank", "timeline", lambda t: t.peak_memory_per_rank()[-1]),
    Metric("held_between_actions", "timeline", lambda t: float(t.frame["memory_after"].max())),
    Metric("busy_per_rank", "timeline", lambda t: max(t.busy_per_rank())),
)
CAUSE_METRICS = tuple(
    Metric(_idle_by_cause(cause), "causes", _total_of(cause))
    for cause in CAUSES
    if cause != "overhead"  # a simulated step ends at the last simulation: no overhead (engine.attribution)
)
"""A simulated step's idle time by cause, summed over the ranks, e.g. idle_imbalance."""

# -- a plan of a real model on real GPUs ----------------------------------------------------------------------
PLAN_METRICS = (
    # the Plan page's cards first, in the order they are drawn
    Metric(
        "step_seconds",
        "plan",
        lambda r: r.step_seconds,
        card="Step time",
        format=".3g",
        unit=" s",
        explains="the simulated pipeline plus the DP gradient all-reduce",
    ),
    Metric(
        "tokens_per_second",
        "plan",
        lambda r: r.tokens_per_second,
        card="Tokens / s",
        format=",.0f",
        explains="global batch × sequence length / step time",
    ),
    Metric(
        "mfu",
        "plan",
        lambda r: r.mfu,
        card="MFU",
        format=".1%",
        explains="model FLOPs per step / (GPUs × peak × step time)",
    ),
    Metric(
        "bubble_fraction",
        "plan",
        lambda r: r.bubble_fraction,
        card="Bubble",
        format=".1%",
        explains="idle / (ranks × makespan) of one simulated pipeline",
    ),
    Metric("gpus", "plan", lambda r: r.num_gpus, card="GPUs", format=",", explains="TP × PP × DP × CP"),
    Metric(
        "peak_memory_gb",
        "plan",
        lambda r: r.peak_memory_bytes / 1e9,
        card="Peak memory / GPU",
        format=".1f",
        unit=" GB",  # its help is against the plan's GPU: the Plan page writes it
    ),
    Metric("pipeline_seconds", "plan", lambda r: r.pipeline_seconds),
    Metric("microbatches", "plan", lambda r: r.num_microbatches),
    Metric("parameters_billion", "plan", lambda r: r.parameters / 1e9),
    Metric("first_stage_memory_gb", "plan", lambda r: r.memory[0].total / 1e9),
    Metric("busiest_rank", "plan", lambda r: max(range(len(r.memory)), key=lambda rank: r.memory[rank].total)),
    Metric("activations_rank0_gb", "plan", lambda r: r.memory[0].activations / 1e9),
    Metric("in_flight_rank0", "plan", lambda r: r.memory[0].peak_microbatches_in_flight),
    Metric("fits", "plan", lambda r: float(r.fits)),
    Metric("ranks_over_memory", "plan", lambda r: sum(not rank.fits for rank in r.memory)),
    Metric("layers", "plan", lambda r: r.model.num_layers),
    Metric("gpu_memory_gb", "plan", lambda r: r.gpu.memory_gb),
    Metric("layers_first_stage", "plan", lambda r: r.layers_per_stage[0]),
    Metric("layers_second_stage", "plan", lambda r: r.layers_per_stage[1]),
    Metric("rank0_busy_seconds", "plan", lambda r: r.timeline.busy_per_rank()[0]),
    Metric("rank1_busy_seconds", "plan", lambda r: r.timeline.busy_per_rank()[1]),
    Metric("idle_gpu_hours_per_step", "plan", lambda r: r.bubble_fraction * r.num_gpus * r.pipeline_seconds / 3600),
    Metric("tflops_per_gpu", "plan", lambda r: r.tflops_per_gpu),
    Metric("chunks", "plan", lambda r: r.layout.num_chunks),
    Metric("stages", "plan", lambda r: r.layout.num_stages),
    Metric("gemm_share", "plan", lambda r: r.gpu.gemm_share),
    Metric("kept_per_layer_mb", "plan", lambda r: r.kept_per_layer_bytes / 1e6),
    Metric("shortfall_gb", "plan", lambda r: 0.0 if r.shortfall is None else r.shortfall.excess / 1e9),
    Metric("needed_per_layer_mb", "plan", lambda r: 0.0 if r.shortfall is None else r.shortfall.needed_per_layer / 1e6),
    Metric("largest_kept_mb", "plan", lambda r: max(size for _, size in r.kept_per_layer) / 1e6),
)


# -- a real run -----------------------------------------------------------------------------------------------
REAL_METRICS = (
    Metric("measured_makespan", "real", lambda r: r.measured.makespan),
    Metric("predicted_makespan", "real", lambda r: r.predicted.makespan),
    Metric("prediction_error", "real", lambda r: r.prediction_error),
    Metric("max_grad_error", "real", lambda r: r.max_grad_error),
    Metric("loss", "real", lambda r: r.loss),
    Metric("reference_loss", "real", lambda r: r.reference_loss),
    Metric("peak_bytes", "real", lambda r: max(r.summary()["peak_memory_bytes"])),
    Metric("last_stage_ratio", "real", lambda r: _last_over_middle(r.measured.busy_per_rank())),
    Metric("peak_kib", "real", lambda r: max(r.summary()["peak_memory_bytes"]) / 1024),
    Metric("idle_ms", "real", lambda r: float(r.idle_attribution().idle.sum())),
    *(Metric(f"{_idle_by_cause(cause)}_ms", "real", _measured_total_of(cause)) for cause in CAUSES),
)

METRICS: tuple[Metric, ...] = TIMELINE_METRICS + CAUSE_METRICS + PLAN_METRICS + REAL_METRICS
"""The whole registry."""


def read_from(source: str) -> Mapping[str, Metric]:
    """The metrics read from ``source`` (one of ``SOURCES``), by name, in the registry's order."""
    if source not in SOURCES:
        raise ValueError(f"no metrics read from {source!r}; choose from {', '.join(SOURCES)}")
    chosen = [metric for metric in METRICS if metric.reads == source]
    by_name = {metric.name: metric for metric in chosen}
    assert len(by_name) == len(chosen), f"a metric name is used twice among those read from {source}"
    return MappingProxyType(by_name)


SIMULATED = read_from("timeline")
CAUSES_OF_IDLE = read_from("causes")
PLANNED = read_from("plan")
MEASURED = read_from("real")

CARDS: Mapping[str, Metric] = MappingProxyType({name: metric for name, metric in SIMULATED.items() if metric.card})
"""Every card of a simulated step, by name, in the order the cards are drawn (the ones lessons teach)."""
PLAYGROUND_CARDS = (
    "makespan", "bubble_fraction", "bubble_ratio", "idle_inside_span", "period_bubble_rate", "peak_memory", "transfers",
    "all_to_all_hidden",
)  # fmt: skip
"""The Playground's cards (idle inside span and the repeated step's bubble rate only where the span differs from
the plain idle time: ``app.frame.timeline_panels``)."""
assert set(PLAYGROUND_CARDS) <= set(CARDS)
PLAN_CARDS: Mapping[str, Metric] = MappingProxyType({name: metric for name, metric in PLANNED.items() if metric.card})
"""The Plan page's cards, by name, in the order they are drawn."""
LESSON_PLAN_CARDS = ("step_seconds", "bubble_fraction", "mfu", "peak_memory_gb")
"""The cards a lesson's plan step draws."""
assert set(LESSON_PLAN_CARDS) <= set(PLAN_CARDS)
