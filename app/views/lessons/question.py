"""A lesson step's question: the answer box, Check and Show me, and the feedback; whether the step has been
answered (its chart, cards and reveal wait for it: predict, then reveal, ``course.py``)."""

import streamlit as st

from app.frame.clicker import ANSWER_LABEL, CHECK, FEEDBACK, REVEAL
from app.views.lessons.answers import check_answer, render
from app.views.lessons.course import Step
from app.views.lessons.explore import PAGE, changed

OUTCOMES, REVEALED = f"{PAGE}_outcomes", f"{PAGE}_revealed"
"""Per visitor: each step's last answer (right, the engine's value) and the steps answered or shown."""


def answer_key(real_key) -> str:
    return f"{PAGE}_answer_{real_key[0]}_{real_key[1]}"


def check(step: Step, real_key) -> None:
    """The Check button's callback (before the rerun, so the reveal is drawn in the same run)."""
    given = st.session_state.get(answer_key(real_key))
    if given is None or step.question is None:
        return
    right, value = check_answer(step.question, step, given)
    st.session_state.setdefault(OUTCOMES, {})[real_key] = (right, value)
    if right:
        st.session_state.setdefault(REVEALED, set()).add(real_key)
    changed()  # asked beside the chart (a projector), inside its partial rerun: the whole page follows


def show_me(step: Step, real_key) -> None:
    """The learner asks for the answer without giving one (or after a wrong one)."""
    if step.question is None:
        return
    _, value = check_answer(step.question, step, None)
    outcomes = st.session_state.setdefault(OUTCOMES, {})
    right, _ = outcomes.get(real_key, (None, value))
    outcomes[real_key] = (right or None, value)
    st.session_state.setdefault(REVEALED, set()).add(real_key)
    changed()


def revealed(step: Step, real_key) -> bool:
    return step.question is None or real_key in st.session_state.get(REVEALED, set())


def question(step: Step, real_key, results: dict | None, *, narrow: bool = False) -> None:
    """The question, its answer box, Check and Show me, and the feedback (``narrow``: in the column beside a
    projected chart, where the two buttons share the column's width)."""
    asked = step.question
    if asked is None:
        return
    st.markdown(f"**Question.** {render(asked.prompt, step)}")
    key = answer_key(real_key)
    if asked.kind == "choice":
        labels = [label for label, _ in asked.options] + ([asked.tie] if asked.tie else [])
        given: str | float | None = st.radio(ANSWER_LABEL, labels, key=key, index=None)
    else:
        given = st.number_input(
            ANSWER_LABEL + (" (%)" if asked.percent else ""), key=key, value=None, step=0.1, format="%g"
        )
    done = revealed(step, real_key)
    buttons = st.columns(2 if narrow else [1, 1, 5], gap="small")
    buttons[0].button(
        CHECK,
        key=f"{PAGE}_check_{real_key[0]}_{real_key[1]}",
        type="primary",
        disabled=given is None,
        on_click=check,
        args=(step, real_key),
    )
    buttons[1].button(
        REVEAL,
        key=f"{PAGE}_show_{real_key[0]}_{real_key[1]}",
        disabled=done,
        on_click=show_me,
        args=(step, real_key),
        help="Skip the prediction: show the answer, the numbers and the chart.",
    )
    outcome = st.session_state.get(OUTCOMES, {}).get(real_key)
    explanation = render(asked.explanation, step, results)
    if outcome is not None and outcome[0] is True:
        st.success(f"{FEEDBACK[1]}: {outcome[1]}. {explanation}")
    elif done:
        st.info(f"{FEEDBACK[0]}: {check_answer(asked, step, None)[1]}. {explanation}")
    elif outcome is not None:
        st.error(f"Not quite. Hint: {render(asked.hint, step)} Try again, or press **Show me**.")
