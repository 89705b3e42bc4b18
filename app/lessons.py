"""Lessons as data (``lessons/*.toml``), and what turns them into numbers: every figure a lesson states is
computed by the engine, and the checker (``tests/test_lessons.py``) fails when the text and the engine
disagree.

A lesson is ordered steps. A step has text (markdown), a live configuration (the Playground's URL keys), named
extra configurations to compare with, optionally real runs, a question and "try this" suggestions.

Numbers in the text are marked:

* ``[[33.3%|bubble_fraction]]`` — a claim: the checker requires the engine's value, formatted like the
  literal (here one decimal, as a percentage), to equal it; the page shows the engine's value.
* ``{{real.max_grad_error:.1e}}`` — a live value (a measurement), shown as computed, never claimed.

Expressions: a metric of the step's configuration (``makespan``), of a named one (``m24.bubble_fraction``),
or arithmetic on those (``slow.makespan - makespan``). Questions never use real runs, whose numbers vary.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from engine import Schedule, Timeline, build_schedule, simulate
from engine.model_config import ModelConfig
from engine.runtime import RunConfig

from .settings import LabSettings

LESSONS = Path(__file__).resolve().parents[1] / "lessons"
CLAIM = re.compile(r"\[\[([^|\]]+)\|([^\]]+)\]\]")
LIVE = re.compile(r"\{\{([^}:]+)(?::([^}]+))?\}\}")
MAIN = "main"

SIMULATED_METRICS = {
    "makespan": lambda t: t.makespan,
    "bubble_fraction": lambda t: t.bubble_fraction,
    "bubble_ratio": lambda t: t.bubble_ratio,
    "idle_inside_span": lambda t: t.span_idle_fraction,
    "idle_per_rank": lambda t: max(t.idle_per_rank()),
    "peak_memory": lambda t: max(t.peak_memory_per_rank()),
    "peak_memory_last_rank": lambda t: t.peak_memory_per_rank()[-1],
    "held_between_actions": lambda t: float(t.frame["memory_after"].max()),
    "transfers": lambda t: t.num_transfers,
    "busy_per_rank": lambda t: max(t.busy_per_rank()),
}
REAL_METRICS = {
    "measured_makespan": lambda r: r.measured.makespan,
    "predicted_makespan": lambda r: r.predicted.makespan,
    "prediction_error": lambda r: r.prediction_error,
    "max_grad_error": lambda r: r.max_grad_error,
    "loss": lambda r: r.loss,
    "reference_loss": lambda r: r.reference_loss,
    "peak_bytes": lambda r: max(r.summary()["peak_memory_bytes"]),
    "peak_kib": lambda r: max(r.summary()["peak_memory_bytes"]) / 1024,
}


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
    try_this: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lesson:
    number: int
    id: str
    title: str
    summary: str
    steps: tuple[Step, ...]


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


def load_lesson(path: Path) -> Lesson:
    data = tomllib.loads(path.read_text())
    steps = []
    for index, step in enumerate(data.get("steps", [])):
        where = f"{path.name}, step {index + 1} ({step.get('id', '?')})"
        question = step.get("question")
        steps.append(
            Step(
                id=step["id"],
                title=step["title"],
                text=step["text"].strip(),
                config=_settings(step["config"], where) if "config" in step else None,
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
                ),
                try_this=tuple(step.get("try", [])),
            )
        )
    return Lesson(
        number=data["number"], id=data["id"], title=data["title"], summary=data.get("summary", ""), steps=tuple(steps)
    )


def load_lessons(folder: Path = LESSONS) -> list[Lesson]:
    return sorted((load_lesson(path) for path in sorted(folder.glob("*.toml"))), key=lambda lesson: lesson.number)


@lru_cache(maxsize=128)
def simulated(settings: LabSettings) -> tuple[Schedule, Timeline]:
    schedule = build_schedule(settings.family, settings.num_ranks, settings.num_microbatches, settings.requested_chunks)
    return schedule, simulate(schedule, settings.costs())


# -- expressions ----------------------------------------------------------------------------------------------
def _names(expression: str) -> ast.AST:
    try:
        return ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise LessonError(f"cannot read the expression {expression!r}") from None


def evaluate(expression: str, step: Step, real_results: dict | None = None) -> float:
    """The value of ``expression`` for ``step``: metrics of its configurations (and of its real runs, when
    their results are given)."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = value(node.left), value(node.right)
            return {
                ast.Add: left + right,
                ast.Sub: left - right,
                ast.Mult: left * right,
                ast.Div: left / right if right else float("nan"),
            }[type(node.op)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.Name):
            return metric(MAIN, node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return metric(node.value.id, node.attr)
        raise LessonError(f"{expression!r}: only metrics, numbers and + − × / are allowed")

    def metric(config: str, name: str) -> float:
        if config in step.real:
            if name not in REAL_METRICS:
                raise LessonError(f"{expression!r}: {name} is not a real-run metric ({', '.join(REAL_METRICS)})")
            if real_results is None or config not in real_results:
                raise LessonError(f"{expression!r}: the real run {config!r} has not run")
            return float(REAL_METRICS[name](real_results[config]))
        settings = step.config if config == MAIN else step.configs.get(config)
        if settings is None:
            raise LessonError(f"{expression!r}: no configuration named {config!r}")
        if name not in SIMULATED_METRICS:
            raise LessonError(f"{expression!r}: {name} is not a metric ({', '.join(SIMULATED_METRICS)})")
        return float(SIMULATED_METRICS[name](simulated(settings)[1]))

    return value(_names(expression))


def uses_real_runs(expression: str, step: Step) -> bool:
    return any(isinstance(node, ast.Name) and node.id in step.real for node in ast.walk(_names(expression)))


# -- claims and live values -----------------------------------------------------------------------------------
def format_like(literal: str, value: float) -> str:
    """``value`` written the way ``literal`` is: as a percentage or not, with as many decimals, with thousands
    separators if it has them."""
    text = literal.strip()
    percent = text.endswith("%")
    digits = text.rstrip("%").strip()
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    separator = "," if "," in digits else ""
    shown = value * 100 if percent else value
    return f"{shown:{separator}.{decimals}f}" + ("%" if percent else "")


def claims(text: str) -> list[tuple[str, str]]:
    return CLAIM.findall(text)


def render(text: str, step: Step, real_results: dict | None = None) -> str:
    """The text with every marked number replaced by the engine's (live values left as "…" until run)."""

    def claim(match: re.Match) -> str:
        literal, expression = match.groups()
        return f"**{format_like(literal, evaluate(expression, step))}**"

    def live(match: re.Match) -> str:
        expression, spec = match.group(1), match.group(2) or ".3g"
        try:
            return f"**{format(evaluate(expression, step, real_results), spec)}**"
        except LessonError:
            return "… (press Run)"

    return LIVE.sub(live, CLAIM.sub(claim, text))


def check_answer(question: Question, step: Step, given) -> tuple[bool, str]:
    """Whether ``given`` is right, and the engine's answer in words."""
    if question.kind == "choice":
        values = {label: evaluate(expression, step) for label, expression in question.options}
        best = (min if question.pick == "min" else max)(values.values())
        winners = [label for label, value in values.items() if abs(value - best) <= 1e-9 * max(1.0, abs(best))]
        right = question.tie if len(winners) > 1 and question.tie else winners[0]
        shown = ", ".join(f"{label} {value:.4g}" for label, value in values.items())
        return given == right, f"{right} ({shown})"
    value = evaluate(question.answer, step)
    scaled = value * 100 if question.percent else value
    unit = "%" if question.percent else ""
    try:
        number = float(str(given).replace("%", "").strip())
    except ValueError:
        return False, f"{scaled:.4g}{unit}"
    return abs(number - scaled) <= question.tolerance + 1e-9, f"{scaled:.4g}{unit}"
