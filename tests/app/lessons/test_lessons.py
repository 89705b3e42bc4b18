"""The lessons, checked like code: every file loads, every configuration runs, every marked number agrees with
the engine, every question can be answered by the engine and none is answered on the screen before it is asked,
every card a lesson shows it has taught, every term it uses is defined — and a learner can walk every step in
the app."""

import itertools
import re
from dataclasses import replace
from pathlib import Path

import pytest
from drawn import drawn_figures
from streamlit.testing.v1 import AppTest

from app.charts.phases import phase_intervals
from app.frame.lab_settings import LabSettings
from app.frame.timeline_panels import card_rows, chart_summary
from app.text import glossary, metrics
from app.views.lessons.answers import (
    answer_forms,
    appears,
    check_answer,
    claims,
    evaluate,
    format_like,
    render,
    taught_metrics,
    uses_real_runs,
    written_forms,
)
from app.views.lessons.course import (
    CLAIM,
    EXPLORE,
    LIVE,
    MAIN,
    REAL_METRICS,
    SIMULATED_METRICS,
    SIZE_NAMES,
    LessonError,
    Step,
    load_lessons,
    simulated,
)
from app.views.lessons.slides import layout_of, picture_of
from engine import Costs, build_schedule, simulate
from engine.runtime import run
from engine.runtime.budget import check_budget

APP = str(Path(__file__).resolve().parents[3] / "app" / "streamlit_app.py")
LESSONS = load_lessons()
BY_NUMBER = {lesson.number: lesson for lesson in LESSONS}
STEPS = [(lesson, step) for lesson in LESSONS for step in lesson.steps]
ASKED = [(lesson, step) for lesson, step in STEPS if step.question is not None]


def step_id(value):
    return f"{value[0].number}-{value[1].id}" if isinstance(value, tuple) else None


def test_lessons_are_numbered_one_to_ten_with_unique_ids():
    assert [lesson.number for lesson in LESSONS] == list(range(1, len(LESSONS) + 1)) and len(LESSONS) >= 11
    assert len({lesson.id for lesson in LESSONS}) == len(LESSONS)
    for lesson in LESSONS:
        ids = [step.id for step in lesson.steps]
        assert len(ids) == len(set(ids)), f"lesson {lesson.number}: duplicate step ids {ids}"
        assert lesson.steps and lesson.title and lesson.summary


@pytest.mark.parametrize("lesson, step", STEPS, ids=[step_id(s) for s in STEPS])
def test_every_step_is_consistent_with_the_engine(lesson, step):
    assert step.config is not None or step.real or step.plan, "a step shows a configuration, a plan or a real run"
    assert not step.plan or step.plan in step.plans, "a step draws one of its own plans"
    names = set(step.configs) | set(step.real)
    assert len(names) == len(step.configs) + len(step.real), "a name is both a configuration and a real run"
    assert not names & (set(SIMULATED_METRICS) | set(REAL_METRICS) | set(SIZE_NAMES) | {MAIN})
    if step.config is not None:
        # "open in the Playground" carries every key that changes a number: the same costs, the same link
        reopened, problems = LabSettings.from_query(step.config.to_query())
        assert problems == [] and reopened.costs() == step.config.costs()
        assert reopened.to_query() == step.config.to_query()
    texts = [step.text, step.reveal]
    if step.question is not None:
        texts += [step.question.prompt, step.question.hint, step.question.explanation]
    for text in texts:
        for literal, expression in claims(text):
            assert not uses_real_runs(expression, step), f"{literal}: a claim cannot rest on a measurement"
            assert format_like(literal, evaluate(expression, step)) == literal.strip(), (literal, expression)
    if step.bubble_label:  # the term the chart writes on the bubble is the engine's idle time per rank
        assert evaluate(step.bubble_label, step) == pytest.approx(evaluate("idle_per_rank", step))
    if step.reveal_chart:
        assert step.reveal_chart in step.configs
    if step.reveal or step.highlight or step.reveal_chart:
        assert step.question is not None, "a reveal follows a question"
    if step.stand_in:
        assert step.real and step.config is not None, "a stand-in stands in for real runs"
    for config in step.real.values():
        check_budget(config)
    question = step.question
    if question is not None:
        assert question.hint.strip(), "every question has a hint"
        expressions = [question.answer] if question.kind == "numeric" else [e for _, e in question.options]
        assert question.kind in ("numeric", "choice") and all(expressions)
        assert question.kind == "numeric" or len(question.options) >= 2
        for expression in expressions:
            assert not uses_real_runs(expression, step)
            evaluate(expression, step)  # computable


@pytest.mark.slow
def test_live_values_compute_from_real_runs():
    """Each real run a lesson asks for runs (in this process, small), and every live value it feeds computes."""
    for _, step in STEPS:
        if not step.real:
            continue
        results = {name: run(config) for name, config in step.real.items()}
        for expression, _ in LIVE.findall(step.text):
            evaluate(expression, step, results)
        assert "… (press Run)" not in render(step.text, step, results)
        assert all(result.summary()["gradients_match"] for result in results.values())


UNMARKED_FIGURE = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?\s*(?:GB|GiB|MB|MiB|KiB|TB|layers?\b)")
"""A memory figure or a count of layers: what a lesson states beside a card or a per-rank chart."""


def unmarked_figures(text: str) -> list[str]:
    return UNMARKED_FIGURE.findall(CLAIM.sub("", text))


@pytest.mark.parametrize("lesson, step", STEPS, ids=[step_id(s) for s in STEPS])
def test_every_memory_figure_and_layer_count_in_a_lesson_is_the_engines(lesson, step):
    """A sentence that states a memory figure or how many layers a rank holds writes it as a claim, so the same
    engine expression the cards read checks it (``test_every_step_is_consistent_with_the_engine``): no such
    figure can differ from the card beside it."""
    texts = [step.text, step.reveal]
    if step.question is not None:
        texts += [step.question.prompt, step.question.hint, step.question.explanation]
        texts += [label for label, _ in step.question.options]
    assert not [figure for text in texts for figure in unmarked_figures(text)]


def test_the_unmarked_figure_check_catches_a_written_number():
    assert unmarked_figures("rank 0 needs 96.8 GB and holds 8 layers") == ["96.8 GB", "8 layers"]
    assert unmarked_figures("rank 0 needs [[96.8|rule.first_stage_memory_gb]] GB") == []


def test_the_checker_catches_a_wrong_number_and_a_bad_expression():
    lesson_2 = LESSONS[1]
    step = lesson_2.steps[0]
    wrong = Step(id="x", title="x", text="idle [[30.0%|bubble_fraction]]", config=step.config)
    [(literal, expression)] = claims(wrong.text)
    assert format_like(literal, evaluate(expression, wrong)) != literal
    with pytest.raises(LessonError, match="no configuration named 'nope'"):
        evaluate("nope.makespan", wrong)
    with pytest.raises(LessonError, match="only metrics, sizes, numbers"):
        evaluate("__import__('os')", wrong)


def test_answers_are_judged_by_the_engine():
    step = LESSONS[1].steps[2]  # 8 stages, 8 micro-batches: 7/15
    value = simulated(step.config)[1].bubble_fraction * 100
    assert check_answer(step.question, step, round(value, 1))[0]
    assert not check_answer(step.question, step, value + 5)[0]
    # a percentage asked, its fraction typed: right, and the unit said
    right, said = check_answer(step.question, step, round(value / 100, 3))
    assert right and "as the fraction 0.467, which is 46.7%" in said
    assert not check_answer(step.question, step, round(value / 100, 3) + 0.05)[0]


# -- predict, then reveal: nothing answers a question before it is asked -----------------------------------------
def visible_before_answer(lesson, step) -> str:
    """Everything the page shows of ``step`` before its question is answered ([Note: predict, then reveal]):
    the lesson's and step's titles and text, the question, its hint (shown after a wrong answer, still before
    the answer), the options, and — unless the step hides them — the metric cards the lesson has taught and the
    chart's title and summary (its numbers: makespan, bubble fraction, peak memory)."""
    asked = step.question
    parts = [lesson.title, lesson.summary, step.title, render(step.text, step)]
    parts += [render(asked.prompt, step), render(asked.hint, step)] + [label for label, _ in asked.options]
    if step.config is not None:
        settings = step.config
        timeline = simulated(settings)[1]
        parts += settings.family_spec.size_notes(settings.num_ranks, settings.num_microbatches)
        if step.shows_before_answer("cards"):
            index = [s.id for s in lesson.steps].index(step.id)
            parts += [
                f"{label} {value}" for label, value, _ in card_rows(timeline, taught_metrics(BY_NUMBER, lesson, index))
            ]
        if step.shows_before_answer("chart"):
            parts += [settings.title(), chart_summary(timeline, settings.title())]
    if not step.shows_before_answer("chart") and (step.config is not None or step.plan is not None):
        parts += picture_words(picture_of(step, step.config))  # a projector draws the question's own picture
    text = "\n".join(parts)
    for phrase in asked.unrelated:
        assert phrase in text, f"{phrase!r} is listed as unrelated but is not on the page"
        text = text.replace(phrase, " ")
    return text


def picture_words(figure) -> list[str]:
    """Every word and number a figure writes: its title, its traces' names and labels, its annotations."""
    drawn = figure.to_plotly_json()
    words = [drawn["layout"].get("title", {}).get("text", "")]
    words += [a.get("text", "") for a in drawn["layout"].get("annotations", [])]
    for trace in drawn["data"]:
        words += [trace.get("name", ""), *map(str, trace.get("text", []) or [])]
    return words


def answer_on_screen(lesson, step) -> list[list[str]] | None:
    """The answer's forms found on the screen before answering (one list per value that decides it), or None
    when some deciding value is missing (the question is still open)."""
    text = visible_before_answer(lesson, step)
    found = [appears(forms, text) for forms in answer_forms(step.question, step)]
    return found if all(found) else None


@pytest.mark.parametrize("lesson, step", ASKED, ids=[step_id(s) for s in ASKED])
def test_no_question_is_answered_on_the_screen_before_it_is_asked(lesson, step):
    assert answer_on_screen(lesson, step) is None, answer_on_screen(lesson, step)
    # and the reveal, the try buttons and the explore inputs wait for the answer
    assert not step.shows_before_answer("reveal") and not step.shows_before_answer("try")
    assert not step.shows_before_answer("explore")


COMPARATIVE = re.compile(
    r"\b(smaller|larger|bigger|shorter|longer|fewer|less|more|lower|higher)\s+(\w+(?:\s+\w+)?)", re.IGNORECASE
)
RATIO_WORDS = re.compile(r"\b(half|halves|third|thirds|quarter|quarters|twice|double|triple|thrice)\b", re.IGNORECASE)
SAME_WORDS = re.compile(r"\b(same|equal|unchanged|no different)\b", re.IGNORECASE)


def title_gives_away(lesson, step) -> str | None:
    """The titles a learner reads before answering (the lesson's, shown in the header and the sidebar,
    its summary, the step's) must not state the answer in words: a tie called "the same" in a title, the
    question's own comparison ("a smaller bubble fraction") stated as a fact, or a ratio ("a third of the idle
    time") from which a number follows. Numbers are ``answer_on_screen``'s job."""
    asked = step.question
    titles = {"lesson title": lesson.title, "lesson summary": lesson.summary, "step title": step.title}
    sidebar = {f"sidebar's lesson {other.number}": other.title for other in LESSONS}  # every lesson's title
    if asked.kind == "choice":
        right = check_answer(asked, step, None)[1].split(" (")[0]
        if right == asked.tie:
            for where, title in titles.items():
                if SAME_WORDS.search(title):
                    return f"the {where} {title!r} says the answer, {asked.tie!r}"
        claim = COMPARATIVE.search(render(asked.prompt, step))
        if claim is not None:
            phrase = claim.group(0).lower()
            for where, title in (titles | sidebar).items():
                if phrase in title.lower():
                    return f"the {where} {title!r} states the question's comparison, {phrase!r}"
        return None
    for where, title in titles.items():
        if where != "lesson summary" and (ratio := RATIO_WORDS.search(title)):
            return f"the {where} {title!r} gives a ratio ({ratio.group(0)!r}) the answer follows from"
    return None


@pytest.mark.parametrize("lesson, step", ASKED, ids=[step_id(s) for s in ASKED])
def test_no_title_states_or_implies_its_questions_answer(lesson, step):
    assert title_gives_away(lesson, step) is None


def test_the_title_rule_catches_the_titles_issue_36_found():
    """As they were: lesson 4's title beside its tie question, lesson 6 step 4's comparison, lesson 6 step 2's
    ratio."""
    four, six = BY_NUMBER[4], BY_NUMBER[6]
    same = replace(four, title="1F1B: less memory, the same bubble on free links")
    assert "says the answer" in title_gives_away(same, four.steps[2])
    trap = replace(six.steps[3], title="A trap: more work, a smaller bubble fraction")
    assert "states the question's comparison" in title_gives_away(six, trap)
    third = replace(six.steps[1], title="ZB-H1: the same memory, a third of the idle time")
    assert "gives a ratio" in title_gives_away(six, third)


def test_the_checker_catches_an_answer_on_the_screen():
    """Lesson 2 step 3 as it was: the card above the question showed 46.7 %, the bubble of 8 × 8."""
    lesson, step = BY_NUMBER[2], BY_NUMBER[2].steps[2]
    assert step.question.hide == ("cards", "chart")
    shown = replace(step, question=replace(step.question, hide=()))
    assert answer_on_screen(lesson, shown) == [["46.7", "46.7%", "47%"]] or answer_on_screen(lesson, shown)
    said = replace(step, text=step.text + " The formula gives 7/15.")
    assert answer_on_screen(lesson, said) == [["7/15"]]
    # lesson 3 step 2 as it was: "the step grows from 33 to 44" — the answer in the text
    lesson, step = BY_NUMBER[3], BY_NUMBER[3].steps[1]
    assert answer_on_screen(
        lesson, replace(step, text=step.text + " From [[33|makespan]] to [[44|recompute.makespan]].")
    ) == [["44"]]
    # a choice is answered when every value that decides it is on the screen, not one alone
    lesson, step = BY_NUMBER[6], BY_NUMBER[6].steps[3]  # W = 1 against W = 3
    one = replace(step, text=step.text + " W = 1 idles [[11.1%|w1.bubble_fraction]].")
    both = replace(one, text=one.text + " W = 3 idles [[7.0%|bubble_fraction]].")
    assert answer_on_screen(lesson, one) is None and answer_on_screen(lesson, both) is not None


def test_written_forms_and_where_they_count():
    assert written_forms(7 / 15, percent=True) >= {"46.7", "47%", "0.467", "7/15"}
    assert written_forms(24.5, percent=False) >= {"24.5", "49/2"} and written_forms(16.0, percent=False) == {"16"}
    assert appears({"46.7"}, "idle 46.7 %") == ["46.7"] and appears({"46.7"}, "146.75 and 46.71") == []
    assert appears({"16"}, "16 ranks") == ["16"] and appears({"16"}, "3/16, 2.16, 160") == ["16"]


# -- the facts, as corrected against the papers ----------------------------------------------------------------
def lesson_text(number: int) -> str:
    lesson = BY_NUMBER[number]
    words = []
    for step in lesson.steps:
        words += [render(step.text, step), render(step.reveal, step) if step.reveal else ""]
        if step.question is not None:
            words += [step.question.prompt, step.question.explanation]
    return " ".join(" ".join(words).split())


def test_the_lessons_state_the_corrected_facts():
    """The fact check, where the words can be checked (the numbers are checked as claims above)."""
    six = lesson_text(6)
    assert "ZB-1p, gains up to about 15 % throughput over 1F1B in both versions" in six  # not 23 %
    assert (
        "up to 31 % (30 % in the ICLR version)" in six and "23 % of the arXiv version's abstract belongs to ZB-V" in six
    )
    seven = lesson_text(7)
    assert "A pair saves **0.25** time units" in seven and "**1.25** instead of **1.5**" in seven  # not half a unit
    assert "arXiv version (§6)" in seven and "(its §3)" in seven
    assert "its docstring calls it ZB1P, while the paper's ZB-1p is a different" in seven
    four = lesson_text(4)
    assert "with free transfers and equal stages" in four and "GPipe **39**" in four  # 1F1B 49 at comm = 1
    assert "A backward frees its micro-batch's activations before the rank's next forward starts" in four
    assert "takes **39** on the same links" in lesson_text(9)
    five = lesson_text(5)
    assert "*about* v times as many, exactly (v·p − 1)/(p − 1) times" in five and "2m(v·p − 1)" in five
    # the seed's points
    assert "inter-layer model parallelism" in lesson_text(1)
    two = lesson_text(2)
    assert "Huang et al., Google; arXiv 2018" in two and "557-million-parameter AmoebaNet to 84.4 %" in two
    assert "6-billion-parameter, 128-layer Transformer" in two
    assert "gradient checkpointing" in lesson_text(3)
    assert "YOLO26" in lesson_text(9) and "splitting frontend" in lesson_text(10)


# -- one idea at a time: the cards taught, the terms defined -------------------------------------------------
def test_a_lesson_shows_only_the_cards_it_has_taught_each_introduced_by_a_step_that_defines_it():
    assert taught_metrics(BY_NUMBER, BY_NUMBER[1], 0) == ()  # the first step: nothing taught yet
    assert taught_metrics(BY_NUMBER, BY_NUMBER[1], 1) == ("makespan", "idle", "bubble_fraction")
    assert "bubble_ratio" not in taught_metrics(BY_NUMBER, BY_NUMBER[2], 0)  # lesson 2 teaches it at its end
    introduced = {}
    for lesson, step in STEPS:
        for name in lesson.metrics + step.metrics:
            assert name not in introduced, f"{name} is introduced twice"
            introduced[name] = (lesson.number, step.id)
            term = metrics.CARDS[name].term
            assert re.search(rf"\*\*{re.escape(term)}s?\*\*", " ".join(step.text.split()), re.IGNORECASE), (
                f"lesson {lesson.number} step {step.id} shows the {term} card: its text defines it in bold"
            )
    assert set(introduced) == set(metrics.CARDS), "every card is taught somewhere"


BOLD = re.compile(r"\*\*([^*]+)\*\*")


def bold(text: str) -> set[str]:
    return {" ".join(found.split()).lower() for found in BOLD.findall(text)}


BUTTONS = {"▶ Play", "▶ ½×", "Next event ▶", "Run it for real", "Retry", "Show me"}
"""Bold text that names a button, not a term."""
GLOSSARY_WORTHY = (
    "mfu", "fsdp", "all-reduce", "reduce-scatter", "all-gather", "optimizer states", "zero", "tensor parallelism",
    "data parallelism", "sequence parallelism", "context parallelism", "activation checkpointing", "roofline",
    "hbm", "nvlink", "flash attention", "distributed optimizer", "tflop/s",
)  # fmt: skip
"""Words of real-scale training that a learner may not know: every lesson that uses one defines it (in bold, at
or before the step that first uses it) or the glossary has it — checked even where no lesson writes it in bold."""


def test_every_term_a_lesson_uses_is_defined_in_it_or_in_the_glossary():
    """A term is what some lesson writes in bold where it introduces it, or a glossary entry. A lesson that uses
    a term must define it (in bold, at or before the step that first uses it) unless the glossary has it."""
    defined_somewhere = {m for lesson, step in STEPS for m in bold(step.text)} - {b.lower() for b in BUTTONS}
    defined_somewhere |= set(GLOSSARY_WORTHY)
    in_glossary = {t.name.lower() for t in glossary.TERMS} | {a.lower() for t in glossary.TERMS for a in t.aliases}
    missing = []
    for lesson in LESSONS:
        own: set[str] = set()
        for step in lesson.steps:
            own |= bold(step.text)
            words = " ".join(" ".join([step.text, step.reveal]).split()).lower()
            for term in defined_somewhere:
                used = re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", words)
                if used and term not in own and term not in in_glossary:
                    missing.append((lesson.number, step.id, term))
    assert not missing, f"used before it is defined, and not in the glossary: {missing}"


def test_the_glossary_has_every_term_of_the_course_each_in_one_sentence():
    wanted = [
        "makespan", "bubble fraction", "bubble ratio", "idle inside span", "critical path", "warm-up",
        "steady state", "cool-down", "F", "B", "I", "W", "chunk", "stage", "rank", "micro-batch", "recomputation",
    ]  # fmt: skip
    assert set(wanted) <= set(glossary.BY_NAME)
    for term in glossary.TERMS:
        assert term.definition.endswith(".") and term.definition[0].isupper(), term
        assert not re.search(r"[.!?] [A-Z]", term.definition.replace("et al.", "")), f"one sentence: {term}"
    assert "gradient checkpointing" in glossary.definition("recomputation")
    assert "inter-layer model parallelism" in glossary.definition("pipeline parallelism")


# -- explorable numbers -----------------------------------------------------------------------------------------
def test_explore_and_try_values_move_the_sentence_the_number_and_the_chart():
    step = BY_NUMBER[2].steps[1]  # "(p − 1)/(m + p − 1) = 3/9 = 33.3 %", p and m in the learner's hands
    assert step.explore == ("ranks", "microbatches")
    mine = step.with_values({"ranks": "8", "microbatches": "8"})
    text = render(step.text, mine)
    assert "**7**/**15**" in text and "**46.7%**" in text
    assert mine.configs["m24"].num_microbatches == 24 and mine.configs["m24"].num_ranks == 8  # follows p only
    assert mine.configs["full"].num_microbatches == 8  # shared both with the step: follows both
    assert step.with_values({}) is step
    for _, step in STEPS:
        for action in step.try_this:
            if action.values:
                step.with_values(dict(action.values)).config.check()
        for name in step.explore:  # the step's own value is inside its explore box's bounds
            EXPLORE[name].read(step.config.to_query()[name])


def test_phases_against_a_hand_count():
    """GPipe on 2 ranks, 3 micro-batches, F = 1, B = 2: rank 0's forwards end at 3, its first backward starts at
    6 (rank 1's backward of micro-batch 0 runs 4–6); rank 1 forwards at 1–4 and backs at 4. No steady state.
    1F1B on 4 ranks, 8 micro-batches: rank 3 turns at 4 (F0 at 3–4, then B0); rank 0's first backward waits for
    the chain 4→6→8→10, its last forward F7 ends at 22 (8 forwards among the alternation), the step at 33."""
    gpipe = simulate(build_schedule("gpipe", 2, 3), Costs.of({"F": 1, "B": 2}))
    assert phase_intervals(gpipe) == [
        (0, "warm-up", 0.0, 6.0),
        (0, "cool-down", 6.0, 12.0),
        (1, "warm-up", 0.0, 4.0),
        (1, "cool-down", 4.0, 12.0),
    ]
    one_f_one_b = simulate(build_schedule("1f1b", 4, 8), Costs.of({"F": 1, "B": 2}))
    rank_0 = [row for row in phase_intervals(one_f_one_b) if row[0] == 0]
    rank_3 = [row for row in phase_intervals(one_f_one_b) if row[0] == 3]
    assert rank_0 == [(0, "warm-up", 0.0, 10.0), (0, "steady state", 10.0, 22.0), (0, "cool-down", 22.0, 33.0)]
    assert rank_3[0] == (3, "warm-up", 0.0, 4.0)


def test_the_reveal_chart_outlines_what_the_question_was_about():
    from app.charts import timeline_figure

    timeline = simulated(BY_NUMBER[2].steps[2].config)[1]
    figure = timeline_figure(timeline, highlight="idle", phases=True, bubble_label=("(p − 1)·(F + B)", 21.0))
    idle = next(t for t in figure.data if t.legendgroup == "idle")
    forwards = next(t for t in figure.data if t.legendgroup == "F")
    assert idle.marker.line.width >= 2 and forwards.opacity < 1
    assert [t.name for t in figure.data[:2]] == ["warm-up", "cool-down"]  # GPipe: no steady state
    texts = [a.text for a in figure.layout.annotations]
    assert "idle per rank: (p − 1)·(F + B) = 21" in texts and "warm-up" in texts


# -- the Lessons page --------------------------------------------------------------------------------------------
def open_lessons(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/lessons/page.py")
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
def test_a_deep_link_opens_the_staircase_with_a_third_idle():
    at = open_lessons({"lesson": "2"})
    assert at.title[0].value == "Lesson 2 · Micro-batches and the bubble"
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "33.3%"
    lecture = [h.proto.body for h in at.get("html") if 'class="pplab-lecture' in h.proto.body]
    assert len(lecture) == 1 and "<strong>Event 1 of " in lecture[0]  # played step by step (in the browser)
    at = open_lessons({"lesson": "3", "step": "2"})
    assert at.query_params == {"lesson": "3", "step": "2"} and "Recomputation" in at.subheader[0].value


@pytest.mark.slow
def test_a_bad_deep_link_warns_and_opens_the_first_lesson():
    at = open_lessons({"lesson": "42"})
    assert any("lesson `42`" in w.value for w in at.warning) and at.title[0].value.startswith("Lesson 1 ·")


def answer(at: AppTest, lesson, step, value) -> None:
    """Give ``value`` (a choice's label or a number) and press Check."""
    answer_key = f"ls_answer_{lesson.id}_{step.id}"
    if step.question.kind == "choice":
        at.radio(key=answer_key).set_value(value)
    else:
        at.number_input(key=answer_key).set_value(float(value))
    at.run()  # the Check button is enabled once there is an answer
    at.button(key=f"ls_check_{lesson.id}_{step.id}").click()
    at.run()


def right_and_wrong(step) -> tuple[object, object]:
    right = check_answer(step.question, step, None)[1].split(" (")[0]  # the engine's answer, as text
    if step.question.kind == "choice":
        return right, next(label for label, _ in step.question.options if label != right)
    return float(right.rstrip("%")), float(right.rstrip("%")) + 10


def page_text(at: AppTest) -> str:
    return " ".join(
        [m.value for m in at.markdown]
        + [m.value for m in at.success]
        + [m.value for m in at.info]
        + [m.value for m in at.error]
        + [f"{m.label} {m.value}" for m in at.metric]
    )


@pytest.mark.slow
def test_walk_every_lesson_answering_each_question_wrong_then_right():
    """Every step in order. Where a question hides the chart, no chart is drawn before it is answered; a wrong
    answer shows the hint and still no answer; the right one says so and draws the chart."""
    at = open_lessons({"lesson": "1", "step": "1"})
    seen = 0
    while True:
        assert not at.exception, at.exception
        lesson = next(lesson for lesson in LESSONS if at.title[0].value.startswith(f"Lesson {lesson.number} ·"))
        step = next(step for step in lesson.steps if at.subheader[0].value.endswith(step.title))
        seen += 1
        shown = {m.label for m in at.metric}
        if not (step.question and not step.shows_before_answer("cards")):
            taught = taught_metrics(BY_NUMBER, lesson, [s.id for s in lesson.steps].index(step.id))
            assert (
                shown == {label for label, _, _ in card_rows(simulated(step.config)[1], taught)}
                if step.config
                else True
            )
        question = step.question
        if question is not None:
            hidden = not step.shows_before_answer("chart")
            assert not (hidden and drawn_figures(at)), "the chart waits for the answer"
            right, wrong = right_and_wrong(step)
            answer(at, lesson, step, wrong)
            assert any(render(question.hint, step) in e.value for e in at.error) and not at.success
            assert not (hidden and drawn_figures(at)), "a wrong answer does not reveal it"
            answer(at, lesson, step, right)
            assert any(s.value.startswith("Right: the engine says") for s in at.success)
            assert drawn_figures(at) or step.config is None
        if at.button(key="ls_next").disabled:
            break
        at.button(key="ls_next").click()
        at.run()
    assert seen == len(STEPS)


@pytest.mark.slow
def test_predict_then_reveal_on_lesson_2_step_3():
    """8 × 8: nothing on the page says 46.7 % until the learner answers; then the cards and the chart, with the
    bubble outlined and named by its term."""
    lesson, step = BY_NUMBER[2], BY_NUMBER[2].steps[2]
    at = open_lessons({"lesson": "2", "step": "3"})
    assert not drawn_figures(at) and not at.metric and "46.7" not in page_text(at)
    at.button(key=f"ls_show_{lesson.id}_{step.id}").click()  # "Show me", without answering
    at.run()
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "46.7%"
    assert any(i.value.startswith("The engine says: 46.67%") for i in at.info)
    figure = drawn_figures(at)[0]
    idle = next(t for t in figure["data"] if t.get("legendgroup") == "idle")
    assert idle["marker"]["line"]["width"] >= 2
    assert any("(p − 1)·(F + B) = 21" in a["text"] for a in figure["layout"]["annotations"])


@pytest.mark.slow
def test_try_buttons_set_the_values_in_place_and_back():
    lesson, step = BY_NUMBER[2], BY_NUMBER[2].steps[1]
    at = open_lessons({"lesson": "2", "step": "2"})
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "33.3%"
    at.button(key=f"ls_try_{lesson.id}_{step.id}_0").click()  # 24 micro-batches
    at.run()
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "11.1%"
    assert at.number_input(key=f"ls_x_{lesson.id}_{step.id}_microbatches").value == 24
    assert "**3**/**27**" in page_text(at)  # the sentence follows: (p − 1)/(m + p − 1)
    link = next(p for p in at.get("page_link") if "Playground" in p.proto.label)
    assert "microbatches=24" in link.proto.query_string.split("&")  # the link opens the values tried
    at.number_input(key=f"ls_x_{lesson.id}_{step.id}_ranks").set_value(8)
    at.run()
    assert "**7**/**31**" in page_text(at)
    at.button(key="ls_try_reset").click()
    at.run()
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "33.3%" and "**3**/**9**" in page_text(at)


@pytest.mark.slow
def test_a_failed_real_run_says_retry_and_the_stand_in_stays(monkeypatch):
    import app.server.real_run_jobs

    def fail(config, *, progress, waiting):
        raise RuntimeError("the child process ended (exit code -9)")

    monkeypatch.setattr(app.server.real_run_jobs, "run_one", fail)
    at = open_lessons({"lesson": "8", "step": "2"})
    assert drawn_figures(at) and any("stand-in" in c.value for c in at.caption)  # before any run
    at.button(key="ls_run").click()
    at.run()
    assert not at.exception
    assert any("The run failed: the child process ended" in e.value and "Retry" in e.value for e in at.error)
    assert at.button(key="ls_run").label == "Retry" and drawn_figures(at)


@pytest.mark.slow
def test_the_glossary_is_in_the_sidebar_and_the_playground_points_to_lesson_1():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert any(e.label == "Glossary" for e in at.sidebar.expander)
    assert "critical path" in " ".join(m.value for m in at.sidebar.markdown)
    assert any("New here?" in m.value for m in at.markdown)
    at.button(key="pg_welcome_dismiss").click()
    at.run()
    assert not any("New here?" in m.value for m in at.markdown)
    at.switch_page("views/lessons/page.py")
    at.run()
    assert any(e.label == "Glossary" for e in at.sidebar.expander)
    at.switch_page("views/playground/page.py")
    at.run()
    assert not any("New here?" in m.value for m in at.markdown)  # dismissed for the session


def test_lesson_11s_warm_up_formula_gives_the_numbers_beside_it():
    """The text's 2(p − 1) + (v − 1)·p + 1 chunk forwards, each 1/v of a share, at p = 16 equals the
    planner's micro-batches in flight on rank 0 (before: the text had no + 1, which gives 17.75 and 23, not the
    17.875 and 23.5 shown)."""
    lesson = BY_NUMBER[11]
    step = next(s for s in lesson.steps if "2(p − 1) + (v − 1)·p + 1" in (s.reveal or ""))
    p = 16
    for name, v in (("trained", 8), ("v2", 2), ("rule", 1)):
        assert evaluate(f"{name}.in_flight_rank0", step) == pytest.approx((2 * (p - 1) + (v - 1) * p + 1) / v
                                                                          if v > 1 else p)  # fmt: skip


def test_the_playground_and_compare_open_on_what_no_question_asks_about():
    """Predict, then reveal, across the app: the Playground and Compare open on sizes no question's configuration
    has, and Compare's schedules are no pair a choice question sets against each other (its cards and sentence
    would answer "which is smaller?" at any size)."""
    from app.views.compare.settings import COMPARE_DEFAULT

    opening = LabSettings()
    asked_pairs = []
    for lesson in LESSONS:
        for step in lesson.steps:
            if step.question is None or step.config is None:
                continue
            configs = [step.config, *step.configs.values()]
            where = f"lesson {lesson.number}, step {step.id}"
            for config in configs:
                assert (config.num_ranks, config.num_microbatches) != (opening.num_ranks, opening.num_microbatches), (
                    where
                )
            if step.question.kind == "choice":
                asked_pairs.append((where, {config.family for config in configs}))
    assert asked_pairs  # the rule below has questions to hold against
    for where, families in asked_pairs:
        assert len(families) < 2 or not families <= set(COMPARE_DEFAULT), (where, families)


@pytest.mark.slow
@pytest.mark.parametrize("projector", [True, False], ids=["projected", "on-a-laptop"])
def test_a_link_in_a_lessons_words_keeps_projector_mode(projector):
    """Lesson 10 step 3 names the Your run page in its text: projected, the link opens it projected too (as the
    page's own links do, ``navigation.link_to``); on a laptop it is left as written."""
    at = open_lessons({"lesson": "10", "step": "3"} | ({"projector": "1"} if projector else {}))
    links = re.findall(r"\]\((/[^)]*)\)", " ".join(m.value for m in at.markdown))
    assert links == (["/your-run?projector=1"] if projector else ["/your-run"]), links


def test_keep_projector_adds_the_mode_to_the_apps_own_links_only(monkeypatch):
    from app.views import navigation

    monkeypatch.setattr(navigation.st, "session_state", {navigation.PROJECTOR: True})
    text = "[Your run](/your-run), [a step](/lessons?lesson=2&step=3), [PyTorch](https://pytorch.org/docs)"
    assert navigation.keep_projector(text) == (
        "[Your run](/your-run?projector=1), [a step](/lessons?lesson=2&step=3&projector=1), "
        "[PyTorch](https://pytorch.org/docs)"
    )
    monkeypatch.setattr(navigation.st, "session_state", {navigation.PROJECTOR: False})
    assert navigation.keep_projector(text) == text


def test_every_projected_step_draws_its_words_and_its_question_somewhere():
    """Each layout puts the step's words somewhere the page draws them: first, beside the step's chart, beside its
    real model's staircase (only a step with a real model has one, once answered), beside its question's picture or
    beside its measured run.
    A stand-in step whose real runs had run was laid out for a staircase it did not have (``plan`` is "" there),
    and lost its words and its question."""
    for lesson in LESSONS:
        for step in lesson.steps:
            for done, has_config, projector, measured in itertools.product((False, True), repeat=4):
                shape = layout_of(step, projector=projector, done=done, has_config=has_config, measured=measured)
                where = (lesson.number, step.id, done, has_config, measured, shape)
                assert not shape.plan or (step.plan and done), where
                assert not shape.picture or has_config or step.plan, where
                assert not shape.measured or measured, where
                placed = [shape.words_first, shape.beside and has_config, shape.plan, shape.picture, shape.measured]
                assert sum(map(bool, placed)) == 1, where
