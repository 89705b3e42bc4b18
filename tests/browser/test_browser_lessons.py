"""Predict, then reveal, in a real browser: on /lessons?lesson=2&step=3 (8 stages, 8 micro-batches) the page
says nothing of the answer — 46.7 % — until the learner has answered right; a wrong answer shows the hint and
still not the answer; the right one shows the cards and the chart with the bubble outlined. Looked at on a
laptop (1440 × 900) and a phone (390 × 844).

Screenshots are saved under the test's output folder (and ``$SCREENSHOT_DIR`` when set)."""

import os
from contextlib import contextmanager

import pytest
from browser_support import CHART, IDLE

from engine import Costs, build_schedule, simulate

pytestmark = [pytest.mark.slow, pytest.mark.browser]
NO_CHART_YET = '.js-plotly-plot, [data-testid="stBidiComponentRegular"]'
"""Neither a drawn chart nor the lab's chart element (app/elements/live_chart.py) waiting to draw one."""

ANSWER = simulate(build_schedule("gpipe", 8, 8), Costs.of({"F": 1, "B": 2})).bubble_fraction  # 7/15
FORMS = (f"{100 * ANSWER:.1f}", f"{100 * ANSWER:.2f}", f"{ANSWER:.3f}", "7/15")


def _save(page, name: str, folder) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=os.path.join(os.environ["SCREENSHOT_DIR"], f"{name}.png"), full_page=True)


def _settled(page) -> None:
    """The script has finished its rerun (Streamlit marks the app while a run is in flight)."""
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=90_000)


def _answer(page, value: str) -> None:
    field = page.locator('[data-testid="stNumberInput"] input').first
    field.fill(value)
    field.press("Enter")
    _settled(page)
    page.get_by_role("button", name="Check", exact=True).click()
    _settled(page)


def _visible_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


@contextmanager
def _lesson(browser, url: str, path: str, width: int, height: int):
    """A fresh visitor's page on ``path``, settled (closed afterwards by the ``browser`` fixture)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{url}{path}")
    _settled(page)
    yield page


@pytest.mark.parametrize("width, height", [(1440, 900), (390, 844)])
def test_lesson_2_step_3_shows_the_answer_only_after_answering(browser, app_url, tmp_path, width, height):
    with _lesson(browser, app_url, "/lessons?lesson=2&step=3", width, height) as page:
        page.get_by_text("8 stages, 8 micro-batches: what percentage").wait_for(timeout=60_000)
        before = _visible_text(page)
        assert not any(form in before for form in FORMS), before
        assert page.locator(NO_CHART_YET).count() == 0
        assert page.locator('[data-testid="stMetric"]').count() == 0
        _save(page, f"lesson-2-3-before-{width}", tmp_path)

        _answer(page, "30")  # wrong: the hint, and still no answer
        page.get_by_text("Not quite. Hint:").wait_for(timeout=30_000)
        after_wrong = _visible_text(page)
        assert "(p − 1) / (m + p − 1) with p = 8 and m = 8" in after_wrong
        assert not any(form in after_wrong for form in FORMS), after_wrong
        assert page.locator(NO_CHART_YET).count() == 0
        _save(page, f"lesson-2-3-wrong-{width}", tmp_path)

        _answer(page, f"{100 * ANSWER:.1f}")  # right: the answer, the cards, the chart
        page.get_by_text("Right: the engine says").wait_for(timeout=30_000)
        page.wait_for_selector(CHART, timeout=60_000)
        after_right = _visible_text(page)
        assert f"{100 * ANSWER:.1f}%" in after_right and "7/15" in after_right
        card = page.locator('[data-testid="stMetric"]', has_text="Bubble fraction").first.inner_text()
        assert card.strip().endswith(f"{100 * ANSWER:.1f}%")
        outlined = page.evaluate(
            "() => { const gd = document.querySelector('.js-plotly-plot');"
            " const idle = gd.data.find(t => t.legendgroup === 'idle');"
            " return idle && idle.marker.line.width; }"
        )
        assert outlined >= 2  # the bubble the question was about, outlined
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        _save(page, f"lesson-2-3-right-{width}", tmp_path)


def _wait_title(page, words: str) -> None:
    page.wait_for_function(
        "w => { const p = document.querySelector('.js-plotly-plot');"
        " return p && p.layout.title && p.layout.title.text.replaceAll('<br>', ' ').includes(w); }",
        arg=words,
        timeout=60_000,
    )


def test_a_lessons_own_inputs_and_try_buttons_redraw_its_chart_sentence_and_cards(browser, app_url):
    """Lesson 2 step 2 draws its text, inputs and buttons beside its chart (inside the chart's partial rerun): a
    typed p, a "Try this" button and "Back to the step's values" each redraw the chart, the sentence and the card,
    with the engine's numbers for what was set."""
    with _lesson(browser, app_url, "/lessons?lesson=2&step=2", 1440, 900) as page:
        _wait_title(page, "4 ranks, 6 micro-batches")
        for label, value, ranks, microbatches in (("ranks p", "8", 8, 6), ("micro-batches m", "8", 8, 8)):
            field = page.get_by_label(label, exact=True)
            field.fill(value)
            field.press("Enter")
            _settled(page)
            _wait_title(page, f"{ranks} ranks, {microbatches} micro-batches")
            bubble = simulate(build_schedule("gpipe", ranks, microbatches), Costs.of({"F": 1, "B": 0}))
            shown = f"{100 * bubble.bubble_fraction:.1f}%"
            assert shown in _visible_text(page), (label, shown)
            card = page.locator('[data-testid="stMetric"]', has_text="Bubble fraction").first.inner_text()
            assert card.strip().endswith(shown), (label, card)
        page.get_by_role("button", name="2 ranks").click()
        _settled(page)
        _wait_title(page, "2 ranks, 8 micro-batches")
        page.get_by_role("button", name="↺ Back to the step's values").click()
        _settled(page)
        _wait_title(page, "4 ranks, 6 micro-batches")
        assert "33.3%" in _visible_text(page)


def _step_heading(page) -> str:
    return page.locator('[data-testid="stHeading"]', has_text="Step ").first.inner_text()


def _step_opened(page, step: str) -> None:
    """Wait for the step whose heading holds ``step`` (a busy server may start a press's rerun later than
    ``_settled``'s first 300 ms, when the old step still stands), then for its run to end."""
    try:
        page.locator('[data-testid="stHeading"]', has_text=step).first.wait_for(timeout=60_000)
    except Exception:  # noqa: BLE001 - the caller's assertion says where it stayed
        pass
    _settled(page)


def _feedback_top(page, words: str) -> float:
    """Where the answer's feedback sits on the screen once the clicker has scrolled it up (it scrolls after the
    rerun has finished: on a busy machine, seconds after the feedback appears), or where it stayed."""
    alert = page.locator('[data-testid="stAlert"]', has_text=words).first
    alert.wait_for(timeout=60_000)
    try:
        alert.page.wait_for_function(
            "w => { const a = [...document.querySelectorAll('[data-testid=stAlert]')]"
            ".find(e => e.innerText.includes(w)); if (!a) return false;"
            " const top = a.getBoundingClientRect().top; return top >= -2 && top < 600; }",
            arg=words,
            timeout=15_000,
        )
    except Exception:  # noqa: BLE001 - the assertion below says where it stayed
        pass
    return alert.bounding_box()["y"]


def test_a_clicker_reveals_an_answer_on_screen_checks_a_typed_one_and_moves_on(browser, app_url):
    """1920 × 1080, projector mode, keys only after a choice: PageDown on L2S3's unanswered question reveals its
    answer without changing the step, the feedback and the revealed chart's top on the first screen; the next
    PageDown goes to L2S4; → after choosing an option there reveals rather than changing the choice; and (1280 × 720)
    Enter in the answer box checks the answer and lets the clicker go on. The whole course's walk is
    ``test_browser_clicker_walk.py``."""
    with _lesson(browser, app_url, "/lessons?lesson=2&step=3&projector=1", 1920, 1080) as page:
        page.get_by_role("button", name="Show me").wait_for(timeout=60_000)  # the page has drawn its question
        page.keyboard.press("PageDown")
        assert -2 <= _feedback_top(page, "The engine says") < 1080
        assert _step_heading(page).startswith("Step 3")
        page.wait_for_selector(CHART, timeout=60_000)
        chart_top = page.evaluate("() => document.querySelector('.js-plotly-plot').getBoundingClientRect().top")
        assert 0 <= chart_top < 1080, chart_top
        page.keyboard.press("PageDown")
        _step_opened(page, "Step 4")
        assert _step_heading(page).startswith("Step 4"), page.evaluate(
            "() => [document.querySelector('[data-testid=stMain]').scrollTop, [...document.querySelectorAll('button')]"
            ".map(b => b.innerText.trim() + (b.disabled ? ' (off)' : ''))]"
        )
        first = page.locator('[data-testid="stMain"] [data-testid="stRadioOption"]').first
        first.wait_for(timeout=60_000)
        first.click()  # the class's answer, chosen
        _settled(page)
        page.keyboard.press("ArrowRight")
        assert -2 <= _feedback_top(page, "engine says") < 1080
        chosen = page.locator('[data-testid="stMain"] [data-testid="stRadio"] input').first
        assert chosen.is_checked()  # the choice stayed

    answer = simulate(build_schedule("gpipe", 8, 8), Costs.of({"F": 1, "B": 2})).bubble_fraction
    with _lesson(browser, app_url, "/lessons?lesson=2&step=3&projector=1", 1280, 720) as fresh:
        fresh.get_by_role("button", name="Show me").wait_for(timeout=60_000)
        field = fresh.locator('[data-testid="stNumberInput"] input').first
        field.fill(f"{100 * answer:.1f}")
        field.press("Enter")  # no Check pressed
        fresh.get_by_text("Right: the engine says").wait_for(timeout=30_000)
        assert fresh.evaluate("() => document.activeElement.tagName") != "INPUT"
        # the check's run has ended, as a presenter sees the page: until then Streamlit keeps the question's old
        # buttons beside the new ones (four "Show me", two still enabled), so a PageDown is the reveal's build
        _settled(fresh)
        where = "() => document.querySelector('[data-testid=stMain]').scrollTop"
        before = fresh.evaluate(where)
        fresh.keyboard.press("PageDown")  # the box has let go: the clicker moves on (the next screenful)
        _settled(fresh)
        assert fresh.evaluate(where) > before or _step_heading(fresh).startswith("Step 4")


def test_a_projected_step_shows_its_chart_and_question_on_the_first_screen_and_answers_beside_it(browser, app_url):
    """Lesson 5, step 1 at 1280 × 720, projected: a step whose chart comes before its question (the text beside
    it runs past the screen) puts the question at the head of the column beside the chart, so the first screen
    holds the chart and the question; typed and checked there (Enter), it is answered in place."""
    from app.views.lessons.answers import check_answer
    from app.views.lessons.course import load_lessons

    step = next(lesson for lesson in load_lessons() if lesson.number == 5).steps[0]
    right = check_answer(step.question, step, None)[1].split(" (")[0]
    with _lesson(browser, app_url, "/lessons?lesson=5&step=1&projector=1", 1280, 720) as page:
        page.get_by_role("button", name="Show me").wait_for(timeout=60_000)
        page.wait_for_selector(CHART, timeout=60_000)
        where = page.evaluate(
            "() => { const c = document.querySelector('.js-plotly-plot').getBoundingClientRect();"
            " const q = [...document.querySelectorAll('p')].find(p => p.innerText.startsWith('Question.'));"
            " const b = [...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Show me');"
            " return {chart: [c.top, c.left, c.right], question: q.getBoundingClientRect().top,"
            " questionLeft: q.getBoundingClientRect().left, button: b.getBoundingClientRect().bottom}; }"
        )
        assert 0 <= where["chart"][0] and where["button"] <= 720, where  # the chart's top, the whole question
        assert where["questionLeft"] > where["chart"][2], where  # beside the chart, not under it
        field = page.locator('[data-testid="stNumberInput"] input').first
        field.fill(right)
        field.press("Enter")  # the clicker presses Check
        page.get_by_text("Right: the engine says").wait_for(timeout=30_000)
        assert _step_heading(page).startswith("Step 1")
