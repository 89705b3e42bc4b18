"""A lesson step's explorable numbers: the inputs that change the step's values in place, the try-this
buttons, and the learner's values kept per step in their session (the Lessons page draws them)."""

from __future__ import annotations

import streamlit as st

from app.frame.widgets import draw_option
from app.views.lessons.course import EXPLORE, Step

PAGE = "ls"
VALUES = f"{PAGE}_values"
"""Per step (lesson id, step id), the values the learner set (URL keys → text)."""
CHANGES = f"{PAGE}_changes"
"""How many times the learner has changed a step's values: where the inputs are drawn inside the chart's fragment
(the step's text beside its chart), a change reruns only that fragment, which draws the configuration the page was
built with; the fragment compares this count with the one the page was built at and reruns the whole page."""


def changes() -> int:
    return st.session_state.get(CHANGES, 0)


def changed() -> None:
    """A value the step's chart block reads has changed (an input, a "try this" button, an answer checked)."""
    st.session_state[CHANGES] = changes() + 1


def widget_key(real_key, name: str) -> str:
    return f"{PAGE}_x_{real_key[0]}_{real_key[1]}_{name}"


def _number(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() else value


def set_values(real_key, step: Step, values: dict[str, str]) -> None:
    """A try button's callback: set its values (and the explore inputs that show them)."""
    changed()
    mine = st.session_state.setdefault(VALUES, {}).setdefault(real_key, {})
    mine.update(values)
    for name, value in values.items():
        if name in step.explore:
            st.session_state[widget_key(real_key, name)] = _number(value)


def reset_values(real_key, step: Step) -> None:
    """Back to the step's own values."""
    changed()
    st.session_state.setdefault(VALUES, {}).pop(real_key, None)
    for name in step.explore:
        st.session_state.pop(widget_key(real_key, name), None)


def explored(real_key, name: str) -> None:
    changed()
    value = st.session_state[widget_key(real_key, name)]
    st.session_state.setdefault(VALUES, {}).setdefault(real_key, {})[name] = str(value)


def learner_values(step: Step, real_key) -> dict[str, str]:
    return dict(st.session_state.get(VALUES, {}).get(real_key, {})) if step.config is not None else {}


def explore_and_try(step: Step, real_key) -> None:
    """The inputs that change the step's numbers in place, and the try-this buttons, with a way back."""
    if step.config is None:
        return
    own = step.config.to_query()
    values = learner_values(step, real_key)
    if step.explore:
        columns = st.columns(len(step.explore) + max(0, 4 - len(step.explore)))
        for column, name in zip(columns, step.explore, strict=False):
            key = widget_key(real_key, name)
            if key not in st.session_state:
                st.session_state[key] = _number(values.get(name, own[name]))
            draw_option(
                EXPLORE[name],
                key,
                where=column,
                on_change=explored,
                args=(real_key, name),
                help="Change it: the sentence, the numbers and the chart follow.",
            )
    actions = [action for action in step.try_this if action.values]
    words = [action.label for action in step.try_this if not action.values]
    if actions or values:
        st.markdown("**Try this**")
        buttons = st.columns(max(len(actions) + 1, 3))
        for position, action in enumerate(actions):
            buttons[position].button(
                action.label,
                key=f"{PAGE}_try_{real_key[0]}_{real_key[1]}_{position}",
                on_click=set_values,
                args=(real_key, step, dict(action.values)),
            )
        buttons[len(actions)].button(
            "↺ Back to the step's values",
            key=f"{PAGE}_try_reset",
            disabled=not values,
            on_click=reset_values,
            args=(real_key, step),
        )
    if words:
        st.markdown(("" if actions else "**Try this**\n") + "\n".join(f"- {item}" for item in words))
