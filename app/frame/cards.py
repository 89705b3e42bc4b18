"""Where a page's metric cards go: a row of columns on a laptop, or, beside a projected chart, as many to a line
as the side column holds. One card under another took 103 px each: the Playground's seven ran to y = 841 on a
1280 × 720 projector, its peak memory cut at the screen's edge and its transfers under it."""

from __future__ import annotations

import streamlit as st

CARD_PX = 150
"""A projected card's width: two to a line in the side column of a 1280-px projector (327 px), three at 1920; a
longer label ("Bubble, repeated" beside its help icon) wraps onto a second line (``style.PROJECTOR_CSS``)."""


def card_places(count: int, *, stacked: bool, columns: int | None = None) -> list:
    """``count`` places for cards: ``columns`` to a row (all of them in one row by default), or ``stacked`` beside a
    projected chart, as many to a line as fit (a container that wraps)."""
    if stacked:
        grid = st.container(horizontal=True, wrap=True, gap="small", vertical_alignment="bottom")  # values level
        return [grid.container(width=CARD_PX) for _ in range(count)]
    per_row = columns or count
    return [place for _ in range(-(-count // per_row)) for place in st.columns(per_row)][:count]
