"""A setting's widget, drawn from its declaration (``engine.options.Option``): the label, bounds, step, choices
and help come from the one place the URL codec and the CLI flag read them too, so a widget can never offer a
value its link would refuse."""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine.options import Choice, Declared, Number, Option, Whole


def draw(settings: type[Declared], name: str, prefix: str | None = None, *, where: Any = None, **more: Any) -> Any:
    """Draw the widget of setting ``name`` of ``settings`` (keyed ``{prefix}_{name}``) in ``where`` (the sidebar
    by default, or a column or an expander), and return its value. ``more`` passes Streamlit options a page
    adds (``on_change``, ``placeholder``)."""
    return draw_option(settings.option(name), settings.widget_key(name, prefix), where=where, **more)


def draw_option(option: Option, key: str, *, where: Any = None, **more: Any) -> Any:
    """Draw ``option``'s widget under ``key`` (``draw`` for a setting of a settings class)."""
    where = st.sidebar if where is None else where
    codec, name = option.codec, option.key
    common = {"key": key, "help": option.help or None, **more}
    if option.widget in ("slider", "number"):
        if not isinstance(codec, Whole | Number):
            raise TypeError(f"{name}: a {option.widget} needs a whole or real number")
        low, high, step = _bounds(codec, option.step)
        if option.widget == "slider":
            return where.slider(option.label, low, high, step=step, **common)
        return where.number_input(option.label, min_value=low, max_value=high, step=step, **common)
    if option.widget in ("select", "radio", "select_slider"):
        if not isinstance(codec, Choice):
            raise TypeError(f"{name}: a {option.widget} needs choices")
        options = list(codec.options)
        if option.widget == "select":
            return where.selectbox(option.label, options, format_func=codec.title, **common)
        if option.widget == "radio":
            return where.radio(option.label, options, format_func=codec.title, horizontal=True, **common)
        return where.select_slider(option.label, options, format_func=codec.title, **common)
    if option.widget == "toggle":
        return where.toggle(option.label, **common)
    if option.widget == "text":
        return where.text_input(option.label, **common)
    raise ValueError(f"{name}: the page draws this setting itself (widget {option.widget!r})")


def _bounds(codec: Whole | Number, step: float | None) -> tuple:
    """Streamlit wants the bounds and the step of one type: ints for a whole number, floats for a real one."""
    if isinstance(codec, Whole):
        return codec.low, codec.high, int(step or 1)
    return float(codec.low), float(codec.high), float(step) if step else None
