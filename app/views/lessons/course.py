"""Lessons as data (``lessons/*.toml``), and what turns them into numbers: every figure a lesson states is
computed by the engine, and the checker (``tests/app/lessons/test_lessons.py``) fails when the text and the engine
disagree — or when a question's answer is on the screen before the learner has answered it.

A lesson is ordered steps. A step has text (markdown), a live configuration (the Playground's URL keys), named
extra configurations to compare with, optionally real runs, a question and "try this" actions.

Numbers in the text are marked:

* ``[[33.3%|bubble_fraction]]`` — a claim: the checker requires the engine's value, formatted like the
  literal (here one decimal, as a percentage), to equal it; the page shows the engine's value.
* ``{{real.max_grad_error:.1e}}`` — a live value (a measurement), shown as computed, never claimed.

Expressions: a metric of the step's configuration (``makespan``), of a named one (``m24.bubble_fraction``),
a size or cost of either (``p``, ``m``, ``v``, ``F``, ``B``, ``I``, ``W``, ``comm``, ``a2a``; ``weights``, the most
weights a rank holds in rank's shares; ``m24.m``), or arithmetic
on those (``slow.makespan - makespan``, ``m + p - 1``). Questions never use real runs, whose numbers vary.

[Note: predict, then reveal] A step with a question keeps back what would answer it until the learner has
answered right or pressed "Show me": its ``hide`` parts (the metric cards, the chart; both by default), its
``reveal`` text, its "try this" actions and its ``explore`` inputs. Then the chart is drawn with the part the
question was about outlined (``highlight``: "idle" or a kind's letter), for the configuration it was about
(``reveal_chart``). A wrong answer shows the hint and keeps the answer back.

Other TOML keys, per lesson: ``metrics`` (the cards it introduces; later lessons keep them). Per step:
``metrics`` (cards introduced from this step on), ``phases = true`` (tint each rank's warm-up, steady state and
cool-down), ``bubble_label`` (an expression in size names, e.g. ``"(p - 1) * (F + B)"``: the checker requires
it to equal the engine's idle time per rank, and the chart names the bubble with it), ``explore`` (URL keys —
ranks, microbatches, chunks, comm — the learner can change in place: text, numbers and chart follow),
``try`` (``{ label = "…", set = { microbatches = 24 } }``: a button that sets those values, with a way back;
a plain string stays a suggestion), ``chart_title`` (the chart's title in the step's own words, ``{p}`` and ``{m}``
the drawn ranks and micro-batches: "{p} ranks, one batch" before the lesson has said GPipe or micro-batch; else
the Playground's title), ``stand_in = true`` (the configuration is a simulated stand-in for the
step's real runs, drawn until they have run).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.frame import engine_calls, limits
from app.frame.lab_settings import LabSettings
from app.text import metrics
from engine import Schedule, Timeline
from engine.model_config import ModelConfig
from engine.runtime import RunConfig
from engine.scale.request import PlanRequest

LESSONS = Path(__file__).resolve().parents[3] / "lessons"
CLAIM = re.compile(r"\[\[([^|\]]+)\|([^\]]+)\]\]")
LIVE = re.compile(r"\{\{([^}:]+)(?::([^}]+))?\}\}")
MAIN = "main"

SIMULATED_METRICS, REAL_METRICS = metrics.SIMULATED, metrics.MEASURED
"""Metric names a lesson may use of a simulated step and of a real run (the registry's, ``app.text.metrics``; also
``metrics.CAUSES_OF_IDLE`` and ``metrics.PLANNED``), which a configuration's name must not shadow."""


SIZE_NAMES = {
    "p": lambda s, c: s.num_ranks,
    "m": lambda s, c: s.num_microbatches,
    "v": lambda s, c: s.chunks,
    "F": lambda s, c: c.forward,
    "B": lambda s, c: c.backward,
    "I": lambda s, c: c.backward_input,
    "W": lambda s, c: c.backward_weight,
    "FB": lambda s, c: c.overlapped,
    "comm": lambda s, c: c.comm,
    "a2a": lambda s, c: c.expert_comm,
    "weights": lambda s, c: max(engine_calls.simulated(s)[0].weights_per_rank()),
}
"""Sizes and costs a claim may use, e.g. ``[[3|p - 1]]/[[9|m + p - 1]]``: they follow the learner's values."""
EXPLORE = {
    "ranks": replace(limits.RANKS.narrowed(high=16), label="ranks p", widget="number", step=1),
    "microbatches": replace(limits.MICROBATCHES.narrowed(high=64), label="micro-batches m", widget="number", step=1),
    "chunks": replace(limits.CHUNKS, label="chunks v", widget="number", step=1),
    "comm": replace(limits.COMM.narrowed(high=4.0), label="transfer time", step=0.5),
}
"""URL keys a step may let the learner change in place (``explore``): the Playground's declarations, narrowed to
what a lesson's sentence still reads well at, drawn as number boxes."""
HIDEABLE = ("cards", "chart")
HIGHLIGHTS = ("idle", "F", "B", "I", "W", "overlapped")


@dataclass(frozen=True)
class TryAction:
    """A "try this" line: a suggestion, or (with ``values``) a button that sets those values on the chart."""

    label: str
    values: tuple[tuple[str, str], ...] = ()
    """URL keys and values (``LabSettings.from_query`` over the step's configuration); empty: words only."""


@dataclass(frozen=True)
class Question:
    prompt: str
    hint: str
    kind: str = "numeric"
    """"numeric" (answer within a tolerance) or "choice" (the option whose value is smallest/largest)."""
    answer: str = ""
    """numeric: the expression whose value is right."""
    percent: bool = False
    """numeric: the learner answers in percent (27.3 for 0.273)."""
    tolerance: float = 0.0
    """numeric: accepted distance from the answer, in the learner's units."""
    options: tuple[tuple[str, str], ...] = ()
    """choice: (label, expression) pairs."""
    pick: str = "min"
    """choice: the right option is the one with the "min" or "max" value (ties: ``tie`` is right)."""
    tie: str = ""
    explanation: str = ""
    """Shown with the engine's value once answered (may hold markers)."""
    hide: tuple[str, ...] = HIDEABLE
    """What the step keeps back until this is answered ([Note: predict, then reveal]): "cards", "chart"."""
    unrelated: tuple[str, ...] = ()
    """Phrases on the page where the answer's digits stand for something else ("4 ranks" when the answer is
    a peak of 4 micro-batches): the checker leaves them out before it looks for the answer."""


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    text: str
    config: LabSettings | None
    """What the step draws (Playground URL keys in the file)."""
    configs: dict[str, LabSettings] = field(default_factory=dict)
    real: dict[str, RunConfig] = field(default_factory=dict)
    mode: str = "play"
    """"play" (the animated chart) or "steps" (lecture mode: event by event)."""
    question: Question | None = None
    try_this: tuple[TryAction, ...] = ()
    metrics: tuple[str, ...] = ()
    """Metric cards this step introduces (its text defines them); the step and every later one shows them."""
    reveal: str = ""
    """Text shown once the question is answered (may hold markers)."""
    highlight: str = ""
    """What the chart outlines once the question is answered: "idle", a kind's letter or "overlapped"."""
    reveal_chart: str = ""
    """The configuration the answer's chart draws (a name from ``configs``; "" for the step's own)."""
    phases: bool = False
    """Tint each rank's warm-up, steady state and cool-down on the chart."""
    bubble_label: str = ""
    """An expression in size names equal to the idle time per rank, shown on the chart as the bubble's term."""
    explore: tuple[str, ...] = ()
    """URL keys the learner can change in place (``EXPLORE``)."""
    chart_title: str = ""
    """The chart's title, ``{p}`` and ``{m}`` filled in from the drawn configuration; "" for the Playground's."""
    stand_in: bool = False
    """The configuration stands in for the step's real runs until they have run (or after they failed)."""
    plans: dict[str, PlanRequest] = field(default_factory=dict)
    """Named plans of a real model on real GPUs (the Plan page's URL keys; ``app.text.metrics.PLANNED``)."""
    plan: str = ""
    """The plan the step draws (its cards, memory per GPU and Gantt in seconds), by name."""

    def with_values(self, values: Mapping[str, str]) -> Step:
        """This step as the learner set it (explore inputs, try buttons): ``values`` (URL keys) over its
        configuration; a named configuration follows a key only where it had the step's own value (so
        ``m24``, 24 micro-batches against the step's 6, follows a change of ranks but keeps its 24)."""
        if not values or self.config is None:
            return self
        own = self.config.to_query()
        config = _settings({**own, **values}, "the learner's values")
        configs = {}
        for name, settings in self.configs.items():
            theirs = settings.to_query()
            shared = {key: value for key, value in values.items() if theirs.get(key) == own.get(key)}
            configs[name] = _settings({**theirs, **shared}, f"the learner's values for {name}") if shared else settings
        return replace(self, config=config, configs=configs)

    def shows_before_answer(self, part: str) -> bool:
        """Whether ``part`` ("cards", "chart", "reveal", "try", "explore") is drawn before the question is
        answered ([Note: predict, then reveal])."""
        if self.question is None:
            return part != "reveal"
        return part in HIDEABLE and part not in self.question.hide


@dataclass(frozen=True)
class Lesson:
    number: int
    id: str
    title: str
    summary: str
    steps: tuple[Step, ...]
    metrics: tuple[str, ...] = ()
    """Metric cards introduced at the lesson's first step (later lessons keep them)."""


class LessonError(ValueError):
    """A lesson file that cannot be used, with the file and step in the message."""


def _settings(query: dict, where: str) -> LabSettings:
    query = {key: str(value) for key, value in query.items()}
    settings, problems = LabSettings.from_query(query)
    if problems:
        raise LessonError(f"{where}: {'; '.join(problems)}")
    settings.check()
    return settings


def _real(spec: dict, where: str) -> RunConfig:
    spec = dict(spec)
    model_keys = {"model", "layers", "hidden", "batch", "seq_len", "vocab", "heads"}
    model = ModelConfig(kind=spec.pop("model", "mlp"), **{k: spec.pop(k) for k in list(spec) if k in model_keys})
    try:
        return RunConfig(
            family=spec.pop("schedule", "1f1b"),
            num_ranks=spec.pop("ranks", 4),
            num_microbatches=spec.pop("microbatches", 8),
            model=model,
            **spec,
        )
    except (TypeError, ValueError) as error:
        raise LessonError(f"{where}: {error}") from None


def _try_actions(items: list, config: LabSettings | None, where: str) -> tuple[TryAction, ...]:
    actions = []
    for item in items:
        if isinstance(item, str):
            actions.append(TryAction(item))
            continue
        values = tuple((key, str(value)) for key, value in item.get("set", {}).items())
        if values:
            if config is None:
                raise LessonError(f"{where}: a try action sets values, but the step has no configuration")
            _settings({**config.to_query(), **dict(values)}, f"{where}, try {item['label']!r}")
        actions.append(TryAction(item["label"], values))
    return tuple(actions)


def _metric_names(names: list, where: str) -> tuple[str, ...]:
    unknown = [name for name in names if name not in metrics.CARDS]
    if unknown:
        raise LessonError(f"{where}: unknown metric card(s) {unknown}; choose from {', '.join(metrics.CARDS)}")
    return tuple(names)


def _plan(query: dict, where: str) -> PlanRequest:
    settings, problems = PlanRequest.from_query({key: str(value) for key, value in query.items()})
    if problems:
        raise LessonError(f"{where}: {'; '.join(problems)}")
    return settings


def load_lesson(path: Path) -> Lesson:
    data = tomllib.loads(path.read_text())
    steps = []
    for index, step in enumerate(data.get("steps", [])):
        where = f"{path.name}, step {index + 1} ({step.get('id', '?')})"
        question = step.get("question")
        config = _settings(step["config"], where) if "config" in step else None
        explore = tuple(step.get("explore", []))
        if set(explore) - set(EXPLORE):
            raise LessonError(f"{where}: explore takes {', '.join(EXPLORE)}, got {explore}")
        if step.get("highlight", "") not in ("", *HIGHLIGHTS):
            raise LessonError(f"{where}: highlight is one of {', '.join(HIGHLIGHTS)}")
        hide = tuple(question.get("hide", HIDEABLE)) if question else HIDEABLE
        if set(hide) - set(HIDEABLE):
            raise LessonError(f"{where}: hide takes {', '.join(HIDEABLE)}, got {hide}")
        steps.append(
            Step(
                id=step["id"],
                title=step["title"],
                text=step["text"].strip(),
                config=config,
                configs={
                    name: _settings(query, f"{where}, configs.{name}")
                    for name, query in step.get("configs", {}).items()
                },
                real={name: _real(spec, f"{where}, real.{name}") for name, spec in step.get("real", {}).items()},
                mode=step.get("mode", "play"),
                question=None
                if question is None
                else Question(
                    prompt=question["prompt"],
                    hint=question.get("hint", ""),
                    kind=question.get("kind", "numeric"),
                    answer=question.get("answer", ""),
                    percent=question.get("percent", False),
                    tolerance=question.get("tolerance", 0.0),
                    options=tuple((o["label"], o["value"]) for o in question.get("options", [])),
                    pick=question.get("pick", "min"),
                    tie=question.get("tie", ""),
                    explanation=question.get("explanation", ""),
                    hide=hide,
                    unrelated=tuple(question.get("unrelated", [])),
                ),
                try_this=_try_actions(step.get("try", []), config, where),
                metrics=_metric_names(step.get("metrics", []), where),
                reveal=step.get("reveal", "").strip(),
                highlight=step.get("highlight", ""),
                reveal_chart=step.get("reveal_chart", ""),
                phases=step.get("phases", False),
                bubble_label=step.get("bubble_label", ""),
                explore=explore,
                chart_title=step.get("chart_title", ""),
                stand_in=step.get("stand_in", False),
                plans={name: _plan(query, f"{where}, plans.{name}") for name, query in step.get("plans", {}).items()},
                plan=step.get("plan", ""),
            )
        )
    return Lesson(
        number=data["number"],
        id=data["id"],
        title=data["title"],
        summary=data.get("summary", ""),
        steps=tuple(steps),
        metrics=_metric_names(data.get("metrics", []), path.name),
    )


def load_lessons(folder: Path = LESSONS) -> list[Lesson]:
    return sorted((load_lesson(path) for path in sorted(folder.glob("*.toml"))), key=lambda lesson: lesson.number)


def simulated(settings: LabSettings) -> tuple[Schedule, Timeline]:
    """A lesson configuration's schedule and simulated step: the pages' cached engine call
    (``app.frame.engine_calls``)."""
    return engine_calls.simulated(settings)
