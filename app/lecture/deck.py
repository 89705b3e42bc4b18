"""Lecture mode stepped in the browser: "Next event ▶" moves the chart's cursor and tells the next
event without asking the server — a Streamlit rerun (its round trip, React redrawing the block, Plotly redrawing
the chart) takes about 0.3 s; moving three shapes and two paragraphs takes a few milliseconds.

The server tells every event once: its time, its headline, each rank's line, and the outline of the actions
running then (``playback.shapes_at``, the shapes the chart would carry at that moment). The buttons are HTML
(Tab, Enter and Space reach them; the clicker presses them by name, ``clicker.py``); the headline and the story
are live regions, so a screen reader says each new event. A schedule with more than ``DECK_EVENTS`` events is
stepped on the server instead (``explain.lecture_controls``): a thousand events are not a lecture.
"""

from __future__ import annotations

import html
import json

import numpy as np

from app.charts.playback import HIGHLIGHT_LIMIT, shapes_at, slot_rows
from app.frame.clicker import NEXT_EVENT, PREVIOUS_EVENT
from engine.narrate import Event, Narration

DECK_EVENTS = 400
"""Up to this many events, lecture mode steps in the browser (the page carries about 1 KB an event)."""
NARRATED_RANKS = 16
"""Lecture mode tells this many ranks' states; the rest are counted."""
NEXT, PREVIOUS, RESTART = NEXT_EVENT, PREVIOUS_EVENT, "Start over"


def headline_text(event: Event, count: int) -> tuple[str, str]:
    """("Event 3 of 40", "t = 2: …"): the two parts of an event's headline."""
    return f"Event {event.index + 1} of {count}", event.headline()


def story_lines(event: Event) -> list[tuple[str, str]]:
    """(rank, what it does) for the narrated ranks, and a count of the rest."""
    lines = [(f"rank {state.rank}", state.text) for state in event.ranks[:NARRATED_RANKS]]
    if len(event.ranks) > NARRATED_RANKS:
        lines.append(("", f"… and {len(event.ranks) - NARRATED_RANKS} more ranks"))
    return lines


def story_html(lines: list[tuple[str, str]]) -> str:
    """The story as the list st.markdown would draw: each rank in bold, then its line."""
    items = "".join(
        f"<li><strong>{html.escape(rank)}</strong> {html.escape(text)}</li>"
        if rank
        else f"<li>{html.escape(text)}</li>"
        for rank, text in lines
    )
    return f"<ul>{items}</ul>"


def deck_payload(narration: Narration, start: int) -> dict:
    """Everything the browser needs to step: per event its time, headline and story, and the chart's shapes."""
    timeline, count = narration.timeline, len(narration.times)
    end = float(timeline.frame["end"].max()) if len(timeline.frame) else 0.0
    rows = [slot_rows(timeline.frame, "y")]
    highlight = timeline.num_ranks <= HIGHLIGHT_LIMIT
    events = []
    for index in range(count):
        event = narration.event(index)
        shapes = shapes_at(event.time, end, rows, highlight)
        events.append(
            {
                "time": event.time,
                "headline": headline_text(event, count),
                "story": story_lines(event),
                "shapes": shapes,
            }
        )
    return {"start": start, "events": events}


def script_json(value) -> str:
    """JSON to put inside a <script>: no "<" at all (Streamlit's sanitizer drops a script whose text holds "<"
    followed by a letter or "/", and "</script>" would end it)."""
    return json.dumps(value, separators=(",", ":"), default=_plain).replace("<", "\\u003c")


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def controls_html(prefix: str, chart_key: str, payload: dict, *, narrow: bool) -> str:
    """The buttons and the headline of the event the deck starts on, and the script that steps them."""
    start = payload["events"][payload["start"]]
    count = len(payload["events"])
    label, words = start["headline"]
    at_first, at_last = payload["start"] == 0, payload["start"] >= count - 1
    return (
        f"<style>{_STYLE}</style>"
        f'<div class="pplab-lecture{" narrow" if narrow else ""}" role="group" aria-label="Lecture mode" '
        f'data-deck="{html.escape(prefix)}" data-chart="{html.escape(chart_key)}" '
        f'data-for="{html.escape(str(payload.get("for", "")))}">'
        f'<button type="button" data-step="-1"{" disabled" if at_first else ""}>{PREVIOUS}</button>'
        f'<button type="button" class="primary" data-step="1"{" disabled" if at_last else ""}>{NEXT}</button>'
        f'<button type="button" data-step="0">{RESTART}</button>'
        f'<p class="pplab-headline" aria-live="polite"><strong>{html.escape(label)}</strong> · {html.escape(words)}</p>'
        f"</div><script>{_SCRIPT % {'prefix': json.dumps(prefix), 'payload': script_json(payload)}}</script>"
    )


def story_block(prefix: str, payload: dict) -> str:
    """The story of the event the deck starts on, in the element the script rewrites."""
    lines = payload["events"][payload["start"]]["story"]
    version = html.escape(str(payload.get("for", "")))
    return (
        f'<div class="pplab-story" data-deck="{html.escape(prefix)}" data-for="{version}" aria-live="polite">'
        f"{story_html(lines)}</div>"
    )


_STYLE = """
.pplab-lecture { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin: 0.2rem 0 0.6rem; }
.pplab-lecture button { font: inherit; padding: 0.25rem 0.75rem; min-height: 2.5rem; border-radius: 0.5rem;
  border: 1px solid rgba(49, 51, 63, 0.2); background: #ffffff; color: #31333f; cursor: pointer; }
.pplab-lecture button:hover:not(:disabled) { border-color: #ff4b4b; color: #ff4b4b; }
.pplab-lecture button.primary { background: #ff4b4b; border-color: #ff4b4b; color: #ffffff; }
.pplab-lecture button.primary:hover:not(:disabled) { background: #ff6c6c; color: #ffffff; }
.pplab-lecture button:disabled { opacity: 0.45; cursor: not-allowed; }
.pplab-lecture button:focus-visible { outline: 3px solid #1a5fb4; outline-offset: 2px; }
.pplab-lecture .pplab-headline { margin: 0; flex: 1 1 16rem; }
.pplab-lecture.narrow .pplab-headline { flex-basis: 100%; }
"""

# Installed once per page; each deck (the Playground's, a lesson's) is found by its prefix. Plain DOM and the
# Plotly object Streamlit's chart bundle puts on ``window`` (as the player, charts/player.py).
_SCRIPT = """
(() => {
  const L = window.__pplabLecture || (window.__pplabLecture = {decks: {}, installed: false});
  const prefix = %(prefix)s, payload = %(payload)s;
  L.decks[prefix] = {events: payload.events, index: payload.start};
  const escape = s => s.replace(/&/g, '&amp;').replace(/\\x3c/g, '&lt;').replace(/>/g, '&gt;');
  const story = lines => '\\x3cul>' + lines.map(([rank, text]) => '\\x3cli>' + (rank ? '\\x3cstrong>'
    + escape(rank) + '\\x3c/strong> ' : '') + escape(text) + '\\x3c/li>').join('') + '\\x3c/ul>';
  const show = (box, index) => {
    const deck = L.decks[box.dataset.deck], events = deck.events;
    index = Math.max(0, Math.min(index, events.length - 1));
    deck.index = index;
    const event = events[index];
    box.querySelector('.pplab-headline').innerHTML = '\\x3cstrong>' + escape(event.headline[0])
      + '\\x3c/strong> · ' + escape(event.headline[1]);
    const [back, next] = box.querySelectorAll('button');
    back.disabled = index === 0;
    next.disabled = index === events.length - 1;
    document.querySelectorAll('.pplab-story[data-deck="' + box.dataset.deck + '"]')
      .forEach(el => { el.innerHTML = story(event.story); });
    const gd = document.querySelector('.st-key-' + box.dataset.chart + ' .js-plotly-plot');
    const plotly = gd && (gd.pplabPlotly || window.Plotly);  // the Plotly that drew it (charts/live_chart.py)
    if (!plotly) return;
    plotly.relayout(gd, {shapes: event.shapes});
    // the player's time slider follows, to the frame nearest the event (charts/player.py)
    const frames = ((gd._transitionData || {})._frames || []).map(f => f.name);
    const player = document.querySelector('.pplab-player[data-chart="' + box.dataset.chart + '"]');
    if (!player || !frames.length) return;
    let nearest = 0;
    frames.forEach((name, i) => {
      if (Math.abs(parseFloat(name) - event.time) < Math.abs(parseFloat(frames[nearest]) - event.time)) nearest = i;
    });
    const range = player.querySelector('input[type=range]');
    range.value = nearest;
    range.setAttribute('aria-valuetext', 't = ' + frames[nearest]);
    player.querySelector('output').textContent = frames[nearest];
    const playing = window.__pplabPlayer && window.__pplabPlayer.state.get(box.dataset.chart);
    if (playing) playing.index = nearest;  // Resume goes on from here
  };
  if (!L.installed) {
    L.installed = true;
    document.addEventListener('click', event => {
      const button = event.target.closest('.pplab-lecture button');
      if (!button || button.disabled) return;
      const box = button.closest('.pplab-lecture'), deck = L.decks[box.dataset.deck];
      const step = parseInt(button.dataset.step, 10);
      show(box, step === 0 ? 0 : deck.index + step);
    });
  }
})();
"""
