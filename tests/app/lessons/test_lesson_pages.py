"""Lesson 11 through AppTest: a planned staircase in seconds beside its memory."""

import pytest
from apptest_support import open_app
from drawn import drawn_figures

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


def test_lesson_11_step_1_shows_the_staircase_in_seconds_beside_its_memory():
    """Lesson 11's "The staircase, in seconds" draws one pipeline's Gantt in seconds (the
    Plan page's, one engine call) comes first, its time axis the plan's step."""
    from app.frame.engine_calls import planned
    from app.views.lessons.course import load_lessons

    step = next(lesson for lesson in load_lessons() if lesson.number == 11).steps[0]
    result = planned(step.plans[step.plan])
    at = open_app({"lesson": "11", "step": "1"}, page="views/lessons/page.py")
    figures = drawn_figures(at)
    gantt = next(f for f in figures if f["layout"].get("xaxis", {}).get("title", {}).get("text") == "seconds")
    assert len(figures) >= 2 and gantt["layout"]["xaxis"]["range"][1] >= result.timeline.makespan
