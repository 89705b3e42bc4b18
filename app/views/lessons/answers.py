"""A lesson's numbers, from the engine: the expressions a step names (``evaluate``), its marked claims and live
values written into the text (``render``), and a learner's answer checked against the engine's (``check_answer``);
``app.views.lessons.course`` loads and validates the lessons themselves."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from fractions import Fraction

from app.frame.engine_calls import idle_attribution, planned
from app.text import metrics
from app.views.lessons.course import (
    CLAIM,
    LIVE,
    MAIN,
    SIZE_NAMES,
    Lesson,
    LessonError,
    Question,
    Step,
    simulated,
)


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
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            if node.keywords or not node.args:
                raise LessonError(f"{expression!r}: min and max take numbers only")
            return {"min": min, "max": max}[node.func.id](value(arg) for arg in node.args)
        raise LessonError(f"{expression!r}: only metrics, sizes, numbers, + − × /, min and max are allowed")

    def metric(config: str, name: str) -> float:
        if config in step.real:
            if name not in metrics.MEASURED:
                raise LessonError(f"{expression!r}: {name} is not a real-run metric ({', '.join(metrics.MEASURED)})")
            if real_results is None or config not in real_results:
                raise LessonError(f"{expression!r}: the real run {config!r} has not run")
            return metrics.MEASURED[name].value(real_results[config])
        if config in step.plans:
            if name not in metrics.PLANNED:
                raise LessonError(f"{expression!r}: {name} is not a plan metric ({', '.join(metrics.PLANNED)})")
            return metrics.PLANNED[name].value(planned(step.plans[config]))
        settings = step.config if config == MAIN else step.configs.get(config)
        if settings is None:
            raise LessonError(f"{expression!r}: no configuration named {config!r}")
        if name in SIZE_NAMES:
            return float(SIZE_NAMES[name](settings, settings.costs()))
        if name in metrics.CAUSES_OF_IDLE:
            schedule, timeline = simulated(settings)
            split = idle_attribution(schedule, settings.costs(), timeline, key=settings)  # the Playground's key
            return metrics.CAUSES_OF_IDLE[name].value(split)
        if name not in metrics.SIMULATED:
            raise LessonError(
                f"{expression!r}: {name} is not a metric ({', '.join([*metrics.SIMULATED, *metrics.CAUSES_OF_IDLE])}) "
                f"nor a size ({', '.join(SIZE_NAMES)})"
            )
        return metrics.SIMULATED[name].value(simulated(settings)[1])

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
    close = abs(number - scaled) <= question.tolerance + 1e-9
    # a percentage asked, the right fraction given (0.467 for 46.7 %): right, and the unit said
    as_fraction = question.percent and 0 < number <= 1 < scaled and abs(100 * number - scaled) <= question.tolerance
    if as_fraction and not close:
        return True, f"{scaled:.4g}{unit} (you wrote it as the fraction {number:g}, which is {100 * number:g}%)"
    return close, f"{scaled:.4g}{unit}"


# -- what the learner sees ------------------------------------------------------------------------------------
def taught_metrics(lessons: Mapping[int, Lesson], lesson: Lesson, index: int) -> tuple[str, ...]:
    """The metric cards shown at step ``index`` of ``lesson``: those every earlier lesson introduced, this
    lesson's own, and its steps' up to this one — in the cards' order (``app.text.metrics.CARDS``)."""
    names: set[str] = set()
    for number, other in lessons.items():
        if number < lesson.number:
            names.update(other.metrics)
            names.update(name for step in other.steps for name in step.metrics)
    names.update(lesson.metrics)
    names.update(name for step in lesson.steps[: index + 1] for name in step.metrics)
    return tuple(name for name in metrics.CARDS if name in names)


def pretty(expression: str) -> str:
    """An expression as the page writes it: "(p - 1) * (F + B)" → "(p − 1)·(F + B)"."""
    return expression.replace(" * ", "·").replace("*", "·").replace(" - ", " − ").replace("-", "−")


def written_forms(value: float, *, percent: bool) -> set[str]:
    """The ways ``value`` could be written on the page: "46.7%", "46.7", "46.67", "0.467", "7/15" for 7/15
    as a percentage; "24.5", "24.50", "49/2" for 24.5. A whole number is only itself ("12")."""
    forms: set[str] = set()
    scaled = value * 100 if percent else value
    if percent:
        forms |= {f"{scaled:.1f}", f"{scaled:.2f}", f"{scaled:.0f}%", f"{value:.2f}", f"{value:.3f}", f"{value:.4f}"}
    else:
        forms |= {f"{value:g}", f"{value:.1f}", f"{value:.2f}", f"{value:.3f}"}
        if abs(value - round(value)) < 1e-9:
            forms = {f"{round(value)}"}
    fraction = Fraction(value).limit_denominator(64)
    if fraction.denominator > 1 and abs(float(fraction) - value) < 1e-9:
        forms.add(f"{fraction.numerator}/{fraction.denominator}")
    return {form for form in forms if form.strip("0.%")}  # "0.0" would match every zero


def answer_forms(question: Question, step: Step) -> list[set[str]]:
    """Every way the answer could appear on the page, as sets of written forms: the answer is on the page when
    a form of *each* set is. A numeric answer is one set; a choice is one set per option — the values that
    decide it, all of them (one alone decides nothing), each as a share or as a number."""
    if question.kind == "numeric":
        return [written_forms(evaluate(question.answer, step), percent=question.percent)]
    return [
        written_forms(value, percent=True) | written_forms(value, percent=False)
        for value in (evaluate(expression, step) for _, expression in question.options)
    ]


def appears(forms: set[str], text: str) -> list[str]:
    """The forms that stand in ``text`` as numbers of their own ("46.7" in "is 46.7 %", not in "146.75")."""
    plain = text.replace("\u2212", "-").replace(",", "")
    found = []
    for form in forms:
        digits = form.replace(",", "")
        if re.search(rf"(?<![\d.]){re.escape(digits)}(?!\d|\.\d)", plain):
            found.append(form)
    return sorted(found)
