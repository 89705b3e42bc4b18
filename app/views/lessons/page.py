"""Lessons: guided steps from one idle GPU to zero bubble, each with a live configuration, questions whose
answers the engine computes, and real runs on demand. Deep links: /lessons?lesson=2&step=3.

A step is drawn in this order: its text; the numbers the learner may change in place (``explore``) and its "try
this" buttons; the metric cards the course has taught so far and the chart; the question; once answered, the
reveal — the text kept back, and the chart with the part the question was about outlined ([Note: predict, then
reveal] in ``app/views/lessons/course.py``).

The text goes with the chart (beside it on a projector, after it on a phone) where the chart comes first. A
projected step is a slide: the chart, and beside it the question (at the head of the column, so the first screen
holds both), its feedback and the step's words; before the answer, a step whose chart waits for it shows the
question's own picture in the chart's place (``slides.py``)."""

from dataclasses import replace

import streamlit as st

from app.charts import timeline_figure
from app.charts.plan import memory_figure
from app.charts.player import player
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.clicker import NEXT_STEP, PREVIOUS_STEP
from app.frame.engine_calls import planned
from app.frame.lab_settings import LabSettings
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import shown
from app.frame.sidebar import page_heading
from app.frame.timeline_panels import chart_summary, legend_notes, metric_cards
from app.lecture.controls import chart_with_lecture, lecture_controls
from app.text.metrics import LESSON_PLAN_CARDS, PLAN_CARDS
from app.views.lessons.answers import (
    evaluate,
    pretty,
    render,
    taught_metrics,
)
from app.views.lessons.course import (
    Lesson,
    Step,
    load_lessons,
    simulated,
)
from app.views.lessons.explore import changes, explore_and_try, learner_values
from app.views.lessons.question import question, revealed
from app.views.lessons.runs import real_results, real_runs
from app.views.lessons.slides import kept_back, layout_of, question_picture
from app.views.navigation import keep_projector, link_to
from app.views.plan.panels import pipeline_gantt

PAGE = "ls"
LESSON, STEP = f"{PAGE}_lesson", f"{PAGE}_step"
LESSON_KEYS = ("lesson", "step")


@st.cache_resource(show_spinner=False)
def lessons() -> dict[int, Lesson]:
    """The lesson files, read once per server (they are data shipped with the app), by number."""
    return {lesson.number: lesson for lesson in load_lessons()}


def go(number: int, step_index: int) -> None:
    """The Previous/Next buttons' callback: it runs before the rerun, when the lesson picker may still be set."""
    st.session_state[LESSON], st.session_state[STEP] = number, step_index


def start_of_lesson() -> None:
    """Choosing another lesson in the sidebar starts it at its first step."""
    st.session_state[STEP] = 0


def ascii_whole(text: str) -> int:
    """A lesson or step number from a link: ASCII digits only (Python's ``int`` would read "٣" as 3)."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(text)
    return int(text)


def bind(by_number: dict[int, Lesson]) -> tuple[Lesson, int, bool]:
    """The address bar (when the visitor opened a link) and the sidebar → the lesson and step shown."""
    link = state.opened_link(PAGE, LESSON_KEYS + (state.PROJECTOR_KEY,))
    if link and set(link) & set(LESSON_KEYS):  # a deep link: /lessons?lesson=2&step=3
        try:
            number = ascii_whole(link.get("lesson", "1"))
            index = ascii_whole(link.get("step", "1")) - 1
            if number not in by_number or not 0 <= index < len(by_number[number].steps):
                raise ValueError
        except ValueError:
            st.warning(
                f"The link asks for lesson {shown(link.get('lesson'))}, step {shown(link.get('step', 1))}, which "
                f"does not exist; showing the first lesson."
            )
            number, index = 1, 0
        state.seed({LESSON: number, STEP: index})
    state.restore({LESSON: 1, STEP: 0})
    projector = projector_toggle(link)
    st.sidebar.radio(
        "Lessons",
        list(by_number),
        key=LESSON,
        format_func=lambda n: f"{n}. {by_number[n].title}",
        on_change=start_of_lesson,
    )
    state.remember([LESSON, STEP])
    lesson = by_number[st.session_state[LESSON]]
    index = min(st.session_state[STEP], len(lesson.steps) - 1)
    state.write_url(PAGE, {"lesson": str(lesson.number), "step": str(index + 1)} | projector_query(projector))
    return lesson, index, projector


def progress_in_sidebar(by_number: dict[int, Lesson], lesson: Lesson, visited: set) -> None:
    seen = sum((lesson.id, s.id) in visited for s in lesson.steps)
    st.sidebar.progress(seen / len(lesson.steps), text=f"This lesson: {seen} of {len(lesson.steps)} steps seen")
    done = [str(n) for n, one in by_number.items() if all((one.id, s.id) in visited for s in one.steps)]
    st.sidebar.caption(
        f"Lessons finished: {', '.join(done)}" if done else "Your progress is kept while this tab is open."
    )


# -- the chart ------------------------------------------------------------------------------------------------
def chart_block(
    step: Step,
    settings: LabSettings,
    *,
    key: str,
    cards: tuple[str, ...],
    projector: bool,
    highlight: str = "",
    lecture_for=None,
    words=None,
    ask=None,
) -> None:
    """Cards, chart and legend notes of one configuration of the step (``lecture_for``: offer lecture mode;
    ``words``: what to draw beside the chart on a projector, the step's text; ``ask``: its question, drawn
    above the text there)."""
    schedule, timeline = simulated(settings)
    costs = settings.costs()

    def lecture(narrow: bool):
        if lecture_for is None:
            return None
        return lecture_controls(
            PAGE,
            schedule,
            timeline,
            costs.comm,
            lecture_for,
            chart_key=key,
            start_on=step.mode == "steps",
            narrow=narrow,
        )

    label = None
    if step.bubble_label:
        idle = max(timeline.idle_per_rank(), default=0.0)
        formula = evaluate(step.bubble_label, replace(step, config=settings))  # p, F, B… of the drawn configuration
        if abs(formula - idle) <= 1e-9 * max(1.0, idle):  # the term names the bubble only where it is its size
            label = (pretty(step.bubble_label), idle)
    title = (
        step.chart_title.format(p=settings.num_ranks, m=settings.num_microbatches)
        if step.chart_title
        else settings.title()
    )

    def chart(lectured) -> None:
        for note in settings.family_spec.size_notes(settings.num_ranks, settings.num_microbatches):
            st.info(note)  # with the chart it is about (a phone draws the chart before the step's text)
        figure = timeline_figure(
            timeline,
            title=title,
            projector=projector,
            cursor_at=None if lectured is None else lectured.time,
            phases=step.phases,
            highlight=highlight or None,
            bubble_label=label,
        )
        player(key, figure, name=title, summary=chart_summary(timeline, title))
        live_chart(figure, key=key)  # redrawn in place on a change, with the lab's Plotly (charts/live_chart.py)

    built_at = changes()

    @st.fragment
    def lectured_step() -> None:
        """A partial rerun: a lecture step (its switch, its buttons) redraws this block only, not the page. A
        change of the step's values (inputs and buttons drawn here, beside the chart) redraws the whole page."""
        if changes() != built_at:
            st.rerun()
        chart_with_lecture(
            lecture,
            chart,
            lambda stacked=False: metric_cards(timeline, cards=cards, stacked=stacked),
            stage=key,
            projector=projector,
            words=words,
            ask=ask,
        )

    lectured_step()
    legend_notes(timeline, costs, schedule, key=key)


# -- navigation -----------------------------------------------------------------------------------------------
def step_buttons(by_number: dict[int, Lesson], lesson: Lesson, index: int) -> None:
    before = (
        (lesson.number, index - 1)
        if index > 0
        else ((lesson.number - 1, len(by_number[lesson.number - 1].steps) - 1) if lesson.number > 1 else None)
    )
    after = (
        (lesson.number, index + 1)
        if index < len(lesson.steps) - 1
        else ((lesson.number + 1, 0) if lesson.number < max(by_number) else None)
    )
    previous, _, following = st.columns([1, 4, 1])
    previous.button(PREVIOUS_STEP, key=f"{PAGE}_previous", disabled=before is None, on_click=go, args=before or (1, 0))
    following.button(
        NEXT_STEP, key=f"{PAGE}_next", type="primary", disabled=after is None, on_click=go, args=after or (1, 0)
    )


def plan_block(step: Step, projector: bool, words=None, ask=None) -> None:
    """A step about a real model: the plan's cards, one pipeline's step in seconds (the staircase), its memory per
    GPU, and the way to the Plan page (``words``: the step's text, drawn beside the staircase on a projector, after
    ``ask``, its question)."""
    settings = step.plans[step.plan]
    result = planned(settings)

    def cards(**_layout) -> None:  # a row of cards, under the staircase on a slide
        for column, name in zip(st.columns(len(LESSON_PLAN_CARDS)), LESSON_PLAN_CARDS, strict=True):
            column.metric(PLAN_CARDS[name].card, PLAN_CARDS[name].shown(result))

    # the slide's layout is the lesson chart's (no lecture here): the staircase, and beside it the words
    chart_with_lecture(
        lambda narrow: None,
        lambda lectured: pipeline_gantt(settings, result, projector, key=f"{PAGE}_plan_gantt"),
        cards,
        stage=f"{PAGE}_plan",
        projector=projector and words is not None,
        words=words,
        ask=ask,
    )
    live_chart(memory_figure(result, projector=projector), key=f"{PAGE}_plan_memory")
    link_to("pl", settings.to_query(), "Open this on the Plan page", icon=":material/dns:")


def after_the_answer(
    live: Step, config, results, real_key, *, cards, projector: bool, drawn: tuple[str, ...], words_beside: bool
) -> None:
    """Once a question is answered: the reveal's words, the step's chart where it waited for the answer, and the
    chart the reveal adds — less the charts already ``drawn`` ("chart", "reveal chart") and the words a projected
    slide draws beside its chart (``words_beside``)."""
    highlight = live.highlight
    if live.reveal and not words_beside:
        st.markdown(keep_projector(render(live.reveal, live, results)))
    if config is not None and "chart" not in drawn:
        chart_block(
            live,
            config,
            key=f"{PAGE}_chart",
            cards=cards,
            projector=projector,
            highlight="" if live.reveal_chart else highlight,
            lecture_for=(real_key, config),
        )
    if live.reveal_chart and "reveal chart" not in drawn:
        chart_block(
            live,
            live.configs[live.reveal_chart],
            key=f"{PAGE}_reveal_chart",
            cards=cards,
            projector=projector,
            highlight=highlight,
        )


STAND_IN_NOTE = (
    "Simulated stand-in for the real runs, drawn until they have run: the same schedule, each stage's cost "
    "modelled from its share of the model."
)


def headings(lesson: Lesson, index: int, projector: bool):
    """The lesson's title and the step's; on a projected step with real runs, the column beside the step's title
    that holds the run's button (the chart keeps the first screen), else None."""
    step = lesson.steps[index]
    page_heading(f"Lesson {lesson.number} · {lesson.title}", lesson.summary)
    heading = f"Step {index + 1} of {len(lesson.steps)}: {step.title}"
    if projector and step.real:
        title, run_at = st.columns([5, 1], vertical_alignment="bottom")
        title.subheader(heading)
        return run_at
    st.subheader(heading)
    return None


def lessons_page() -> None:
    by_number = lessons()
    visited: set = st.session_state.setdefault(f"{PAGE}_visited", set())
    lesson, index, projector = bind(by_number)
    step = lesson.steps[index]
    visited.add((lesson.id, step.id))
    progress_in_sidebar(by_number, lesson, visited)

    run_at = headings(lesson, index, projector)
    real_key = (lesson.id, step.id)
    done = revealed(step, real_key)
    live = step.with_values(learner_values(step, real_key)) if done else step
    results = real_runs(step, real_key, PAGE, button_at=run_at)
    config = live.config if not (step.stand_in and results) else None
    chart_first = step.shows_before_answer("chart")  # drawn above the question (a reveal draws it below)

    stand_in = config is not None and step.stand_in

    def step_text() -> None:
        if stand_in and projector and beside:  # beside the chart, not above it
            st.caption(STAND_IN_NOTE)
        st.markdown(keep_projector(render(live.text, live, results)))
        if done:
            explore_and_try(step, real_key)
        if (slide or plan_slide or shape.measured) and live.reveal:
            st.markdown(keep_projector(render(live.reveal, live, results)))

    def ask() -> None:
        question(step, real_key, results, narrow=True)

    # the text goes with the chart where the chart comes first; on a projector, slides (slides.py)
    shape = layout_of(step, projector=projector, done=done, has_config=config is not None, measured=bool(results))
    slide, plan_slide, beside, asked_beside = shape.slide, shape.plan, shape.beside, shape.asked_beside
    if shape.words_first:
        step_text()
    cards = taught_metrics(by_number, lesson, index)
    highlight = step.highlight if done and step.question is not None else ""
    drawn: tuple[str, ...] = ()
    if config is not None:
        if stand_in and not (projector and beside):
            st.caption(STAND_IN_NOTE)
        if beside:
            answer_chart = slide and bool(live.reveal_chart)  # the chart the reveal adds: the answer's
            drawn = ("reveal chart",) if answer_chart else ("chart",)
            chart_block(
                live,
                live.configs[live.reveal_chart] if answer_chart else config,
                key=f"{PAGE}_reveal_chart" if answer_chart else f"{PAGE}_chart",
                cards=cards if done or step.shows_before_answer("cards") else (),
                projector=projector,
                highlight=highlight if answer_chart or not step.reveal_chart else "",
                lecture_for=None if answer_chart else (real_key, config),
                words=step_text,
                ask=ask if asked_beside else None,
            )
        elif not done and not shape.picture:
            kept_back(step, config, cards)
    if shape.picture:
        question_picture(step, config, cards, words=step_text, ask=ask)
    if results:
        real_results(results, projector, PAGE, slide=shape.measured, words=step_text, ask=ask)
    if not asked_beside:
        question(step, real_key, results)
    if done and step.question is not None:
        after_the_answer(
            live,
            config,
            results,
            real_key,
            cards=cards,
            projector=projector,
            drawn=drawn,
            words_beside=slide or plan_slide or shape.measured,
        )
    if config is not None and (done or chart_first):  # the Playground would show what the question keeps back
        link_to("pg", config.to_query(), "Open this in the Playground", icon=":material/science:")
    if step.plan and done:
        plan_block(step, projector, words=step_text if plan_slide else None, ask=ask if asked_beside else None)
    step_buttons(by_number, lesson, index)


lessons_page()
