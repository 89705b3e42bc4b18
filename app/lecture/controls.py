"""Lecture mode on the server's side: the lecturer's switch and buttons, the event's headline and its story, and a
chart drawn with them. Up to ``deck.DECK_EVENTS`` events the browser steps the deck itself (``app.lecture.deck``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app.lecture.deck import DECK_EVENTS, controls_html, deck_payload, headline_text, story_block, story_lines
from engine import Schedule, Timeline
from engine.narrate import Event, Narration

JUMP_AFTER_EVENTS = 60
"""Past this many events, lecture mode also offers a jump to a time."""


def lecture_controls(
    prefix: str,
    schedule: Schedule,
    timeline: Timeline,
    comm: float,
    fingerprint,
    *,
    chart_key: str,
    start_on: bool = False,
    narrow: bool = False,
):
    """The lecturer's "next": the switch, then (when on) the buttons and the event's headline. Returns the event
    to draw and tell (``narrate``) with its headline, or None when lecture mode is off. ``narrow``: drawn in the
    column beside a projected chart, the buttons wrap and the caller writes the headline.

    Up to ``DECK_EVENTS`` events the buttons step in the browser (``lecture_deck``: the chart ``chart_key``'s
    cursor and the story move without a rerun); the server draws the event the deck starts on. Beyond, each
    step is a rerun of the block."""
    if start_on and st.session_state.get(f"{prefix}_lecture_for") != fingerprint:
        st.session_state[f"{prefix}_lecture_for"] = fingerprint
        st.session_state[f"{prefix}_lecture"] = True
    if not st.toggle(
        "Lecture mode" if narrow else "Step through events (lecture mode)",
        key=f"{prefix}_lecture",
        help="Advance one event at a time — each moment some rank starts work — with what every "
        "rank is doing and why the idle ones wait.",
    ):
        return None
    narration = Narration(schedule, timeline, comm)
    count = len(narration.times)
    index_key = f"{prefix}_event"
    if st.session_state.get(f"{prefix}_event_for") != fingerprint:
        st.session_state[f"{prefix}_event_for"] = fingerprint
        st.session_state[index_key] = 0
    in_browser = count <= DECK_EVENTS
    if narrow or in_browser:
        row = st.container(horizontal=True, gap="small")
        columns = [row, row, row]
    else:
        columns = st.columns([1.3, 1.2, 1, 4])
    if not in_browser:
        _server_buttons(prefix, columns, st.session_state[index_key], count)
    if count > JUMP_AFTER_EVENTS:  # a thousand events one by one is not a lecture: jump to a moment
        end = float(narration.times[-1])
        jump = st.number_input(
            f"Jump to time t (0 – {end:g}): the first event at or after it",
            min_value=0.0,
            max_value=end,
            value=None,
            key=f"{prefix}_event_jump",
            placeholder="e.g. " + f"{end / 2:g}",
        )
        if jump is not None and st.session_state.get(f"{prefix}_event_jumped") != jump:
            st.session_state[f"{prefix}_event_jumped"] = jump
            st.session_state[index_key] = min(int(np.searchsorted(narration.times, jump - 1e-9)), count - 1)
    index = min(st.session_state[index_key], count - 1)
    event = narration.event(index)
    label, words = headline_text(event, count)
    headline = f"**{label}** · {words}"
    if in_browser:
        # the fingerprint in the deck: two steps with the same chart would otherwise draw the same HTML, which the
        # browser keeps as it is — at the event the last step's deck was stepped to, in the browser
        deck = deck_payload(narration, index) | {"for": hashlib.sha1(repr(fingerprint).encode()).hexdigest()[:12]}
        with columns[0]:
            st.html(controls_html(prefix, chart_key, deck, narrow=narrow), unsafe_allow_javascript=True)
        return Lectured(event, headline, prefix, deck)
    if not narrow:
        columns[3].markdown(headline)
    return Lectured(event, headline)


def _server_buttons(prefix: str, columns, index: int, count: int) -> None:
    """Previous, next and start over as Streamlit buttons: each press a rerun (more than ``DECK_EVENTS``)."""
    index_key = f"{prefix}_event"
    if columns[0].button("◀ Previous event", key=f"{prefix}_event_previous", disabled=index == 0):
        st.session_state[index_key] -= 1
    if columns[1].button("Next event ▶", key=f"{prefix}_event_next", type="primary", disabled=index >= count - 1):
        st.session_state[index_key] += 1
    if columns[2].button("Start over", key=f"{prefix}_event_restart"):
        st.session_state[index_key] = 0


@dataclass(frozen=True)
class Lectured:
    """The event lecture mode is at, and the line that names it ("Event 3 of 40 · …"); ``prefix`` and ``deck``
    when the browser steps it (``lecture_deck``), whose headline is already in the buttons' block."""

    event: Event
    headline: str
    prefix: str | None = None
    deck: dict | None = None

    @property
    def time(self) -> float:
        return self.event.time


def narrate(lectured: Lectured) -> None:
    """What every rank is doing at the event, and why the idle ones wait."""
    if lectured.deck is not None and lectured.prefix is not None:
        st.html(story_block(lectured.prefix, lectured.deck))
        return
    st.markdown(
        "\n".join(f"- **{rank}** {text}" if rank else f"- {text}" for rank, text in story_lines(lectured.event))
    )


def chart_with_lecture(
    lecture, draw_chart, draw_cards, *, stage: str, projector: bool = False, words=None, ask=None
) -> None:
    """The chart and, in lecture mode, the narration beside it (stacked under it on a phone), with the cards
    after them, so that a lecturer has the chart and the words on one screen; without lecture mode, the cards
    then the chart. ``lecture()`` draws the lecture's switch and buttons and returns the event (or None);
    ``draw_chart(lectured)`` draws the chart at that event; ``stage`` names the block (unique on the page).

    On a projector everything that explains or steps the chart sits in a column beside it — ``words`` (a
    lesson's step text), the lecture's switch, buttons, headline and narration, or else the cards (under the chart
    where the words fill that column) — so the chart starts right under the title and all its ranks are on a
    1280 × 720 screen. ``ask`` (a lesson's question) comes first among the words: the slide is the chart and its
    question, the text is the speaker's."""
    if projector:
        chart, side = st.columns([5, 2], gap="medium")
        with side:  # stepping: the buttons and what happens first, the step's text after; else the text first
            switch, text = st.container(), st.container()
            with switch:
                lectured = lecture(narrow=True)
                if lectured is not None:
                    if lectured.deck is None:  # a deck's headline is in its block
                        st.markdown(lectured.headline)
                    narrate(lectured)
            with text:
                if ask is not None:
                    ask()
                if words is not None:
                    words()
                if lectured is None and words is None:
                    draw_cards(stacked=True)
        with chart:
            draw_chart(lectured)
            if lectured is None and words is not None:  # a lesson's slide: its text fills the column beside
                draw_cards()
        if lectured is not None:
            draw_cards()
        return
    # a wide screen: the words, the switch, then the cards and the chart (or, stepping, the chart and the
    # narration beside it, the cards after); a phone puts the chart (with its narration) first (style.PAGE_CSS)
    with st.container(key=f"stage_{stage}"):
        if words is not None:
            words()
        lectured = lecture(narrow=False)
        if lectured is None:
            draw_cards()
            with st.container(key=f"phone_first_{stage}"):
                draw_chart(None)
            return
        with st.container(key=f"phone_first_{stage}"):
            chart, words_column = st.columns([5, 2], gap="medium")
            with chart:
                draw_chart(lectured)
            with words_column:
                narrate(lectured)
        draw_cards()
