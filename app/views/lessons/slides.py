"""How a lesson step is laid out, and a projected step's picture before its answer.

On a laptop the step's text comes first, then its chart (or, where the chart waits for the answer, a note that it
is kept back), then its question. A projected step is a slide: the chart, with its question, the feedback and the
step's words in the column beside it ([Note: predict, then reveal] in ``app/views/lessons/course.py``):

* a step whose chart comes first is such a slide from the start (``beside``);
* a step whose chart waits for the answer shows the question's own picture in the chart's place until then — its
  ranks and its waiting micro-batches, and nothing of what happens (``picture``, ``app/charts/setup.py``) — and
  becomes a slide with the chart the answer is about once answered (``slide``);
* a step about a real model likewise, with its staircase in seconds once answered (``plan``)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.charts.setup import setup_figure
from app.elements.live_chart import live_chart
from app.frame.engine_calls import planned
from app.frame.lab_settings import LabSettings
from app.frame.timeline_panels import metric_cards
from app.lecture.controls import chart_with_lecture
from app.views.lessons.course import Step, simulated
from app.views.lessons.explore import PAGE

KEPT_BACK = "The chart and the numbers that answer the question are kept back: predict first, then "


@dataclass(frozen=True)
class Layout:
    slide: bool
    """Projected and answered, the chart waited for the answer: now the answer's chart with the words beside."""
    plan: bool
    """Projected and answered, a step about a real model: its staircase with the words beside."""
    picture: bool
    """Projected and not yet answered, the chart waits for the answer: the question's own picture in its place."""
    beside: bool
    """The step's chart is drawn with its words beside it (a projector) or after them (the chart comes first)."""
    asked_beside: bool
    """The question heads the column beside the chart (or the picture)."""
    measured: bool = False
    """Projected, a step whose real runs have run in place of its simulated stand-in: the first run's measured
    chart with the words beside it."""

    @property
    def words_first(self) -> bool:
        """The step's words open the page (not beside a chart)."""
        return not (self.beside or self.plan or self.picture or self.measured)


def layout_of(step: Step, *, projector: bool, done: bool, has_config: bool, measured: bool = False) -> Layout:
    """``has_config``: the step draws a simulated chart; ``measured``: its real runs have run (and stand in for
    that chart where ``has_config`` is false)."""
    chart_first = step.shows_before_answer("chart")
    asks = step.question is not None
    slide = projector and done and has_config and not chart_first and asks
    plan = projector and done and not has_config and bool(step.plan)  # "" where the step has no real model
    picture = projector and not done and not chart_first and asks and (has_config or bool(step.plan))
    beside = has_config and (chart_first or slide)
    runs = projector and measured and not (has_config or plan or picture)
    return Layout(slide, plan, picture, beside, projector and (beside or plan or picture or runs) and asks, runs)


def kept_back(step: Step, config: LabSettings | None, cards: tuple[str, ...], projector: bool = False) -> None:
    """Where the chart waits for the answer: the cards the question does not keep back (a step with a simulated
    ``config``), and why the chart is not there ([Note: predict, then reveal])."""
    if config is not None and step.shows_before_answer("cards"):
        metric_cards(simulated(config)[1], cards=cards)
    reveal = "PageDown or Show me" if projector else "check your answer (or press Show me)"
    st.info(f"{KEPT_BACK}{reveal} to see them.")


def picture_of(step: Step, config: LabSettings | None):
    """The question's own picture of ``step``: its configuration's ranks and micro-batches, or its real model's
    pipeline's."""
    if config is not None:
        num_ranks, num_microbatches = config.num_ranks, config.num_microbatches
    else:
        request = step.plans[step.plan]
        num_ranks, num_microbatches = request.pp, planned(request).num_microbatches
    title = f"{num_ranks} ranks, {num_microbatches} micro-batches: what happens?"
    return setup_figure(num_ranks, num_microbatches, title=title, projector=True)


def question_picture(step: Step, config: LabSettings | None, cards: tuple[str, ...], *, words, ask) -> None:
    """The slide before the answer: the question's own picture (the step's ranks and waiting micro-batches, or its
    real model's pipeline's) where the chart will be, the question and the step's words beside it, and under it
    what is kept back."""
    figure = picture_of(step, config)
    chart_with_lecture(
        lambda narrow: None,
        lambda lectured: live_chart(figure, key=f"{PAGE}_setup"),
        lambda **_layout: kept_back(step, config, cards, projector=True),
        stage=f"{PAGE}_setup",
        projector=True,
        words=words,
        ask=ask,
    )
