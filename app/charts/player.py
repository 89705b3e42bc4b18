"""Playback controls that are real HTML: ▶ Play, ½×, 2×, Pause, Resume and a time slider, each reachable with
Tab and operated with Enter, Space and the arrow keys — Plotly's own updatemenu buttons and slider are SVG,
which a keyboard cannot reach, and they sat over the charts' titles. They drive the chart's frames
(``playback.py``: frames that move shapes only) through the Plotly object Streamlit's chart bundle puts on
``window``; each control names its chart by the chart's Streamlit key (the ``st-key-…`` class).

The same block gives the chart its accessible name and a one-paragraph summary for screen readers.
"""

from __future__ import annotations

import html

import streamlit as st

from .playback import SECONDS

SPEEDS = (
    ("▶ Play", 1.0, "Play at normal speed"),
    ("▶ ½×", 0.5, "Play at half speed"),
    ("▶ 2×", 2.0, "Play at double speed"),
)

# Installed once per page; every control finds its chart and its state by the chart's key.
_SCRIPT = """
(() => {
  const P = window.__pplabPlayer || (window.__pplabPlayer = {state: new Map(), installed: false});
  const chart = key => document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const names = gd => ((gd._transitionData || {})._frames || []).map(f => f.name);
  const stateOf = key => {
    if (!P.state.has(key)) P.state.set(key, {index: null, speed: 1, timer: null});
    return P.state.get(key);
  };
  const show = (box, key, index) => {
    const gd = chart(key), frames = gd ? names(gd) : [];
    if (!gd || !frames.length || !window.Plotly) return false;
    index = Math.max(0, Math.min(index, frames.length - 1));
    stateOf(key).index = index;
    window.Plotly.animate(gd, [frames[index]], {frame: {duration: 0, redraw: false},
                                                transition: {duration: 0}, mode: 'immediate'});
    const range = box.querySelector('input[type=range]');
    range.max = frames.length - 1; range.value = index;
    range.setAttribute('aria-valuetext', 't = ' + frames[index]);
    box.querySelector('output').textContent = frames[index];
    return index < frames.length - 1;
  };
  const stop = key => { const s = stateOf(key); if (s.timer) clearInterval(s.timer); s.timer = null; };
  const play = (box, key, from) => {
    stop(key);
    const s = stateOf(key), frameMs = parseFloat(box.dataset.frameMs);
    s.index = from;
    if (!show(box, key, s.index)) return;
    s.timer = setInterval(() => { if (!show(box, key, s.index + 1)) stop(key); }, frameMs / s.speed);
  };
  const act = (box, button) => {
    const key = box.dataset.chart, s = stateOf(key), action = button.dataset.action;
    if (action === 'play') { s.speed = parseFloat(button.dataset.speed); play(box, key, 0); }
    else if (action === 'pause') stop(key);
    else if (action === 'resume') { if (!s.timer) play(box, key, (s.index === null ? -1 : s.index) + 1); }
  };
  if (!P.installed) {
    P.installed = true;
    document.addEventListener('click', event => {
      const button = event.target.closest('.pplab-player button');
      if (button) act(button.closest('.pplab-player'), button);
    });
    document.addEventListener('input', event => {
      const range = event.target.closest('.pplab-player input[type=range]');
      if (!range) return;
      const box = range.closest('.pplab-player');
      stop(box.dataset.chart);
      show(box, box.dataset.chart, parseInt(range.value, 10));
    });
  }
  // the chart's accessible name and summary (the chart element can be drawn after this block)
  document.querySelectorAll('.pplab-player').forEach(box => {
    let tries = 0;
    const label = () => {
      const holder = document.querySelector('.st-key-' + box.dataset.chart);
      if (!holder) { if (tries++ < 50) setTimeout(label, 200); return; }
      holder.setAttribute('role', 'img');
      holder.setAttribute('aria-label', box.dataset.name);
      holder.setAttribute('aria-describedby', box.querySelector('.pplab-summary').id);
    };
    label();
  });
})();
"""

_STYLE = """
.pplab-player { display: flex; flex-wrap: wrap; align-items: center; gap: 0.4rem; margin: 0.2rem 0 0.4rem; }
.pplab-player button { font: inherit; font-size: 0.95rem; padding: 0.25rem 0.7rem; border-radius: 0.4rem;
  border: 1px solid #8a8d96; background: #ffffff; color: #1f2128; cursor: pointer; }
.pplab-player button:hover { background: #eef0f4; }
.pplab-player button:focus-visible, .pplab-player input:focus-visible { outline: 3px solid #1a5fb4;
  outline-offset: 2px; }
.pplab-player label { display: flex; align-items: center; gap: 0.4rem; flex: 1 1 12rem; min-width: 10rem;
  color: #1f2128; }
.pplab-player input[type=range] { flex: 1 1 auto; min-width: 8rem; }
.pplab-player output { min-width: 3.5rem; font-variant-numeric: tabular-nums; }
.pplab-summary { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
"""


def player(chart_key: str, figure, *, name: str, summary: str) -> None:
    """The controls for ``figure``, drawn with ``key=chart_key`` just below them; ``name`` and ``summary`` are
    what a screen reader says of the chart."""
    frames = len(figure.frames)
    if frames <= 0:
        return
    meta = figure.layout.meta or {}
    index = int(meta.get("start_frame", frames - 1))
    first = figure.frames[index].name
    buttons = "".join(
        f'<button type="button" data-action="play" data-speed="{speed:g}" aria-label="{html.escape(words)}">'
        f"{html.escape(label)}</button>"
        for label, speed, words in SPEEDS
    )
    buttons += (
        '<button type="button" data-action="pause">Pause</button>'
        '<button type="button" data-action="resume" aria-label="Resume at the paused speed">Resume</button>'
    )
    summary_id = f"pplab-summary-{chart_key}"
    markup = (
        f"<style>{_STYLE}</style>"
        f'<div class="pplab-player" role="group" aria-label="Playback of the chart below" '
        f'data-chart="{html.escape(chart_key)}" data-frame-ms="{1000 * SECONDS / frames:.1f}" '
        f'data-name="{html.escape(name)}">'
        f"{buttons}"
        f'<label>Time <input type="range" min="0" max="{frames - 1}" step="1" value="{index}" '
        f'aria-label="Time in the step"><output>{html.escape(str(first))}</output></label>'
        f'<p class="pplab-summary" id="{summary_id}">{html.escape(summary)}</p>'
        f"</div><script>{_SCRIPT}</script>"
    )
    st.html(markup, unsafe_allow_javascript=True)
