"""The lessons, checked like code: every file loads, every configuration runs, every marked number agrees with
the engine, every question can be answered by the engine — and a learner can walk every step in the app."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.lessons import (
    LIVE,
    MAIN,
    REAL_METRICS,
    SIMULATED_METRICS,
    LessonError,
    Step,
    check_answer,
    claims,
    evaluate,
    format_like,
    load_lessons,
    render,
    simulated,
    uses_real_runs,
)
from app.settings import LabSettings
from engine.runtime import run
from engine.runtime.budget import check_budget

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")
LESSONS = load_lessons()
STEPS = [(lesson, step) for lesson in LESSONS for step in lesson.steps]


def step_id(value):
    return f"{value[0].number}-{value[1].id}" if isinstance(value, tuple) else None


def test_lessons_are_numbered_one_to_ten_with_unique_ids():
    assert [lesson.number for lesson in LESSONS] == list(range(1, 11))
    assert len({lesson.id for lesson in LESSONS}) == len(LESSONS)
    for lesson in LESSONS:
        ids = [step.id for step in lesson.steps]
        assert len(ids) == len(set(ids)), f"lesson {lesson.number}: duplicate step ids {ids}"
        assert lesson.steps and lesson.title and lesson.summary


@pytest.mark.parametrize("lesson, step", STEPS, ids=[step_id(s) for s in STEPS])
def test_every_step_is_consistent_with_the_engine(lesson, step):
    assert step.config is not None or step.real, "a step shows a configuration or a real run"
    names = set(step.configs) | set(step.real)
    assert len(names) == len(step.configs) + len(step.real), "a name is both a configuration and a real run"
    assert not names & (set(SIMULATED_METRICS) | set(REAL_METRICS) | {MAIN})
    if step.config is not None:
        # "open in the Playground" carries every key that changes a number: the same costs, the same link
        reopened, problems = LabSettings.from_query(step.config.to_query())
        assert problems == [] and reopened.costs() == step.config.costs()
        assert reopened.to_query() == step.config.to_query()
    for literal, expression in claims(step.text):
        assert not uses_real_runs(expression, step), f"{literal}: a claim cannot rest on a measurement"
        assert format_like(literal, evaluate(expression, step)) == literal.strip(), (literal, expression)
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
        for literal, expression in claims(question.explanation):
            assert format_like(literal, evaluate(expression, step)) == literal.strip()


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


def test_the_checker_catches_a_wrong_number_and_a_bad_expression():
    lesson_2 = LESSONS[1]
    step = lesson_2.steps[0]
    wrong = Step(id="x", title="x", text="idle [[30.0%|bubble_fraction]]", config=step.config)
    [(literal, expression)] = claims(wrong.text)
    assert format_like(literal, evaluate(expression, wrong)) != literal
    with pytest.raises(LessonError, match="no configuration named 'nope'"):
        evaluate("nope.makespan", wrong)
    with pytest.raises(LessonError, match="only metrics, numbers"):
        evaluate("__import__('os')", wrong)


def test_answers_are_judged_by_the_engine():
    step = LESSONS[1].steps[2]  # 8 stages, 8 micro-batches: 7/15
    value = simulated(step.config)[1].bubble_fraction * 100
    assert check_answer(step.question, step, round(value, 1))[0]
    assert not check_answer(step.question, step, value + 5)[0]


# -- the Lessons page --------------------------------------------------------------------------------------------
def open_lessons(query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/lessons.py")
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_deep_link_opens_the_staircase_with_a_third_idle():
    at = open_lessons({"lesson": "2"})
    assert at.title[0].value == "Lesson 2 · Micro-batches and the bubble"
    assert {m.label: m.value for m in at.metric}["Bubble fraction"] == "33.3%"
    assert any("Event 1 of" in m.value for m in at.markdown)  # played step by step
    at = open_lessons({"lesson": "3", "step": "2"})
    assert at.query_params == {"lesson": "3", "step": "2"} and "Recomputation" in at.subheader[0].value


def test_a_bad_deep_link_warns_and_opens_the_first_lesson():
    at = open_lessons({"lesson": "42"})
    assert any("lesson `42`" in w.value for w in at.warning) and at.title[0].value.startswith("Lesson 1 ·")


def test_walk_every_lesson_answering_each_question_wrong_then_right():
    at = open_lessons({"lesson": "1", "step": "1"})
    seen = 0
    while True:
        assert not at.exception, at.exception
        lesson = next(lesson for lesson in LESSONS if at.title[0].value.startswith(f"Lesson {lesson.number} ·"))
        step = next(step for step in lesson.steps if at.subheader[0].value.endswith(step.title))
        seen += 1
        question = step.question
        if question is not None:
            answer_key, check_key = f"ls_answer_{lesson.id}_{step.id}", f"ls_check_{lesson.id}_{step.id}"
            right = check_answer(question, step, None)[1].split(" (")[0]  # the engine's answer, as text
            if question.kind == "choice":
                wrong = next(label for label, _ in question.options if label != right)
                at.radio(key=answer_key).set_value(wrong)
            else:
                at.number_input(key=answer_key).set_value(float(right.rstrip("%")) + 10)
            at.run()  # the Check button is enabled once there is an answer
            at.button(key=check_key).click()
            at.run()
            assert any(question.hint in e.value for e in at.error)
            if question.kind == "choice":
                at.radio(key=answer_key).set_value(right)
            else:
                at.number_input(key=answer_key).set_value(float(right.rstrip("%")))
            at.run()
            at.button(key=check_key).click()
            at.run()
            assert any(s.value.startswith("Right: the engine says") for s in at.success)
        if at.button(key="ls_next").disabled:
            break
        at.button(key="ls_next").click()
        at.run()
    assert seen == len(STEPS)
