"""The whole course from a presentation clicker alone, projected at 1920 × 1080 and at 1280 × 720: PageDown only,
from lesson 1's first step to lesson 11's last. The course is walked in three parts, an item per part and screen size
(they run side by side on the workers); a part starts on its first lesson's first step and walks until PageDown has
taken it to the next part's first step, so together they press through every step and every hand-over between
lessons; PageUp then takes it back over the last hand-over.

On every step: the chart the step shows before its question (or a step without one) is whole on the first screen
when the step opens; a lecture's narration and the chart's cursor start at its first event together; a step's real
runs are run by PageDown (lessons 3 and 8); every
question is revealed by PageDown before the step is left, its feedback on the screen and, beside it, the chart the
answer is about, whole. Steps whose question keeps the chart back show the question's own picture in its place
until then, whole on the first screen too ([Note: predict, then reveal] in ``app/views/lessons/course.py``,
``app/views/lessons/slides.py``)."""

from __future__ import annotations

import re

import pytest
from browser_support import IDLE

from app.views.lessons.course import load_lessons

pytestmark = [pytest.mark.slow, pytest.mark.browser]

LESSONS = {lesson.number: lesson for lesson in load_lessons()}
SIZES = [(1920, 1080), (1280, 720)]

WHERE = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const heading = [...document.querySelectorAll('[data-testid=stHeading]')].find(e => /Step \\d+ of/.test(e.innerText));
  const charts = [...document.querySelectorAll('.js-plotly-plot')].map(e => e.getBoundingClientRect())
    .filter(r => r.height > 0);
  const feedback = [...document.querySelectorAll('[data-testid=stAlert]')].find(a => /engine says/.test(a.innerText));
  const row = feedback && feedback.closest('[data-testid=stHorizontalBlock]');
  const answerChart = row && [...row.querySelectorAll('.js-plotly-plot')].map(e => e.getBoundingClientRect())[0];
  const box = (r) => r ? [Math.round(r.top), Math.round(r.bottom)] : null;
  const lecture = document.querySelector('.pplab-headline');
  const drawn = document.querySelector('.js-plotly-plot');
  const line = drawn && drawn.layout && (drawn.layout.shapes || []).find(s => s.type === 'line');
  const title = drawn && drawn.layout && drawn.layout.title;
  return {lesson: document.querySelector('h1').innerText.split(' ·')[0],
          title: title ? (title.text || '').replace(/<br>/g, ' ') : '',
          step: heading && heading.innerText.split(':')[0],
          chart: box(charts[0]), feedback: box(feedback && feedback.getBoundingClientRect()),
          answerChart: box(answerChart), lecture: lecture && lecture.innerText, cursor: line ? line.x0 : null,
          ran: [...document.querySelectorAll('button')].some(b => b.innerText.trim() === 'Run again'),
          scroll: main.scrollTop};
}"""
"""Where the page stands: its lesson and step, its first chart, the answer's feedback and the chart beside it (the
projected slide's), the lecture's headline and the chart's cursor, how far the page is scrolled."""


def _settled(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=90_000)


def _press_and_settle(page, before: dict, key: str = "PageDown") -> None:
    """``key``, then wait until the page shows its effect (every build changes where the page stands: an event, a
    run, a reveal, a screenful, a step) and its run has ended. Waiting for the idle state alone could return before
    a busy server had started the press's run, and the walk's next PageDown then fell on the new step."""
    page.keyboard.press(key)
    try:
        page.wait_for_function(f"b => JSON.stringify(({WHERE})()) !== JSON.stringify(b)", arg=before, timeout=60_000)
    except Exception:  # noqa: BLE001 - the walk's assertions say where it stayed
        pass
    _settled(page)


def _opened_at_top(page) -> None:
    """A new step opens at its top: the clicker scrolls there once the rerun has finished."""
    try:
        page.wait_for_function("() => document.querySelector('[data-testid=stMain]').scrollTop === 0", timeout=30_000)
    except Exception:  # noqa: BLE001 - the caller's assertion says where it stayed
        pass


def _scrolled_to_the_answer(page, height: int) -> None:
    """The clicker brings the revealed answer up once its rerun has finished, and its chart again once drawn (a
    busy browser draws it later): wait until the feedback is on the screen and the chart beside it whole."""
    try:
        page.wait_for_function(
            f"h => {{ const w = ({WHERE})(); const c = w.answerChart || w.chart;"
            " return w.feedback && w.feedback[0] >= 0 && w.feedback[0] < h && c && c[0] >= 0 && c[1] <= h; }",
            arg=height,
            timeout=30_000,
        )
    except Exception:  # noqa: BLE001 - the caller's assertion says where it stayed
        pass


def _chart_drawn(page, inside: str = "[data-testid=stMain]") -> None:
    """The lab's chart element draws its figure after the script's run: wait for it (``inside``: a CSS selector of
    where to look)."""
    page.wait_for_function(
        "where => { const p = document.querySelector(where + ' .js-plotly-plot');"
        " return p && p._fullData && p.getBoundingClientRect().height > 0; }",
        arg=inside,
        timeout=60_000,
    )


def _chart_whole(box, height: int) -> bool:
    return box is not None and 0 <= box[0] and box[1] <= height


def _walk_lesson(page, number: int, height: int) -> dict:
    """PageDown from the lesson's first step until the page has left the lesson (or revealed the course's last
    answer), checking each step as above; where the page stands at the end."""
    lesson = LESSONS[number]
    last = number == max(LESSONS)
    seen: dict[int, dict] = {}
    where = page.evaluate(WHERE)
    for _ in range(40 * len(lesson.steps)):  # screenfuls, events and reveals: tens a step at most
        if where["lesson"] != f"Lesson {number}":
            break
        index = int(where["step"].split()[1]) - 1
        step = lesson.steps[index]
        if index not in seen:  # the step has just opened: its chart, or its question's own picture, on screen
            # its heading is drawn first: a busy server may still be drawing the rest (the old step's narration
            # stands until then), so wait for the run that drew the heading to end
            _settled(page)
            _opened_at_top(page)
            _chart_drawn(page)
            where = page.evaluate(WHERE)
            seen[index] = {"revealed": step.question is None, "ran": not step.real}
            assert _chart_whole(where["chart"], height), (number, index + 1, "opened", where)
            pictured = step.question is not None and not step.shows_before_answer("chart")
            assert where["title"].endswith("what happens?") == pictured, (number, index + 1, where)
            if where["lecture"]:  # the narration and the chart's cursor at the lecture's first event, together
                assert where["lecture"].startswith("Event 1 of"), (number, index + 1, where)
                said = re.search(r"t = ([0-9.]+)", where["lecture"])
                assert said and where["cursor"] == pytest.approx(float(said[1])), (number, index + 1, where)
        seen[index]["ran"] |= where["ran"]  # the step's real runs, run by a PageDown
        if step.question is not None and where["feedback"] and not seen[index]["revealed"]:
            seen[index]["revealed"] = True  # the reveal: its feedback, and the chart beside it, on the screen
            assert 0 <= where["feedback"][0] < height, (number, index + 1, "revealed", where)
            assert _chart_whole(where["answerChart"] or where["chart"], height), (number, index + 1, "revealed", where)
        elif step.question is not None and not seen[index]["revealed"]:
            assert not where["feedback"], (number, index + 1, "answered before the reveal", where)
        if last and index == len(lesson.steps) - 1 and seen[index]["revealed"]:
            break
        _press_and_settle(page, where)
        where = page.evaluate(WHERE)
        if where["feedback"] and not seen[index]["revealed"]:  # the reveal scrolls once its rerun has finished
            _chart_drawn(page)
            _scrolled_to_the_answer(page, height)
            where = page.evaluate(WHERE)
    assert sorted(seen) == list(range(len(lesson.steps))), (number, sorted(seen), where)
    assert all(each["revealed"] and each["ran"] for each in seen.values()), (number, seen)
    return where


PARTS = [(1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11)]
"""The course in three parts, each an item per screen size: a page load costs seconds of CPU, a step's press less."""
assert sorted(number for part in PARTS for number in part) == sorted(LESSONS), "every lesson is walked"


@pytest.mark.parametrize("width, height", SIZES, ids=["1920x1080", "1280x720"])
@pytest.mark.parametrize("part", PARTS, ids=lambda part: f"lessons-{part[0]}-{part[-1]}")
def test_a_clicker_walks_the_course_revealing_every_answer_with_its_chart_on_screen(
    browser, app_url, part, width, height
):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{app_url}/lessons?lesson={part[0]}&step=1&projector=1")
    _settled(page)
    page.get_by_role("button", name="Next step ▶").wait_for(state="attached", timeout=60_000)
    for number in part:
        where = _walk_lesson(page, number, height)
        if number < max(LESSONS):  # PageDown has handed over to the next lesson's first step
            following = LESSONS[number + 1]
            assert (where["lesson"], where["step"]) == (f"Lesson {number + 1}", f"Step 1 of {len(following.steps)}")
    if part[-1] < max(LESSONS):  # PageUp mirrors it: back over the hand-over, to the lesson's last step
        # from the new step's top, as a presenter sees it: PageUp on a page still scrolled (the clicker brings a
        # new step to its top once its run has ended) is the screenful above, not the step before
        _opened_at_top(page)
        _press_and_settle(page, page.evaluate(WHERE), "PageUp")
        back = page.evaluate(WHERE)
        steps = len(LESSONS[part[-1]].steps)
        assert (back["lesson"], back["step"]) == (f"Lesson {part[-1]}", f"Step {steps} of {steps}"), back
