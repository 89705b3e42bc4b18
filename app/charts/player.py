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

from app.charts.playback import SECONDS

SPEEDS = (
    ("▶ Play", 1.0, "Play at normal speed"),
    ("▶ ½×", 0.5, "Play at half speed"),
    ("▶ 2×", 2.0, "Play at double speed"),
)

# Installed once per page; every control finds its chart and its state by the chart's key. The script's text
# never holds "<" followed by a letter or "/": Streamlit's sanitizer would drop the whole script.
_SCRIPT = """
(() => {
  const P = window.__pplabPlayer || (window.__pplabPlayer = {state: new Map(), installed: false});
  const chart = key => document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  // the Plotly that drew the chart: the Playground's own bundle (charts/live_chart.py) or Streamlit's
  const plotlyOf = gd => gd.pplabPlotly || window.Plotly;
  const names = gd => ((gd._transitionData || {})._frames || []).map(f => f.name);
  const stateOf = key => {
    if (!P.state.has(key)) P.state.set(key, {index: null, speed: 1, timer: null});
    return P.state.get(key);
  };
  const show = (box, key, index) => {
    const gd = chart(key), frames = gd ? names(gd) : [];
    if (!gd || !frames.length || !plotlyOf(gd)) return false;
    index = Math.max(0, Math.min(index, frames.length - 1));
    stateOf(key).index = index;
    plotlyOf(gd).animate(gd, [frames[index]], {frame: {duration: 0, redraw: false},
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
  // zoom on a binned chart: re-bin the visible range, and draw the actions one by one once few are visible
  // (the actions travel packed in the heatmap's meta: bins.zoom_payload)
  // Plotly's "no trace box" tag, spelled with \\x3c: Streamlit's sanitizer drops a script whose text holds "<" + a
  // letter or "/" (DOMPurify's guard against markup hidden in scripts)
  const EXTRA = '\\x3cextra>\\x3c/extra>';
  const unpack = zoom => {
    if (zoom.unpacked) return zoom.unpacked;
    const bytes = Uint8Array.from(atob(zoom.data), c => c.charCodeAt(0)), n = zoom.count, b = bytes.buffer;
    return (zoom.unpacked = {start: new Float32Array(b, 0, n), end: new Float32Array(b, 4 * n, n),
      rank: new Int16Array(b, 8 * n, n), mb: new Int16Array(b, 10 * n, n), kind: new Int8Array(b, 12 * n, n)});
  };
  const rezoom = gd => {
    const full = gd._fullData, leftovers = [];
    full.forEach((t, i) => { if (t.meta === 'pplab-zoom-bars') leftovers.push(i); });
    if (leftovers.length) plotlyOf(gd).deleteTraces(gd, leftovers);
    gd.data.forEach((trace, index) => {
      const zoom = trace.meta && trace.meta.pplab_zoom;
      if (!zoom) return;
      const axis = gd._fullLayout[(trace.xaxis || 'x').replace('x', 'xaxis')];
      const [x0, x1] = axis.range, a = unpack(zoom);
      const visible = [];
      for (let i = 0; i < zoom.count; i++) if (a.end[i] > x0 && a.start[i] < x1) visible.push(i);
      if (visible.length <= zoom.bars) {
        plotlyOf(gd).restyle(gd, {visible: false}, [index]);
        const bars = zoom.kinds.map((letter, k) => {
          const mine = visible.filter(i => a.kind[i] === k);
          return {type: 'bar', orientation: 'h', meta: 'pplab-zoom-bars', showlegend: false, name: letter,
            xaxis: trace.xaxis, yaxis: trace.yaxis, width: 0.8, offset: -0.4,
            y: mine.map(i => a.rank[i]), base: mine.map(i => a.start[i]), x: mine.map(i => a.end[i] - a.start[i]),
            text: mine.map(i => letter + a.mb[i]), textposition: 'inside', insidetextanchor: 'middle',
            textangle: 0, textfont: {color: zoom.inks[k]},
            marker: {color: zoom.colours[k], line: {width: 0.5, color: 'white'}, pattern: zoom.patterns[k]},
            hovertemplate: mine.map(i => 'rank ' + a.rank[i] + ' · ' + letter + a.mb[i] + ' · ' +
              a.start[i].toFixed(3) + ' → ' + a.end[i].toFixed(3) + EXTRA)};
        }).filter(t => t.y.length);
        if (bars.length) plotlyOf(gd).addTraces(gd, bars);
        return;
      }
      // re-bin [x0, x1] into the same number of columns and lanes as bins.add_bins: per rank a gap row (code 5),
      // then one lane per kind, coloured where that kind ran for zoom.share of the column or more (idle: code 4)
      const bins = zoom.bins, width = (x1 - x0) / bins;
      const rows = Math.max(...Array.from(a.rank)) + 1, busy = new Float64Array(rows * 4 * bins);
      for (const i of visible) {
        const from = Math.max(a.start[i], x0), to = Math.min(a.end[i], x1);
        const last = Math.min(bins - 1, Math.floor((to - x0) / width));
        for (let bin = Math.floor((from - x0) / width); bin <= last; bin++) {
          const left = x0 + bin * width, overlap = Math.min(to, left + width) - Math.max(from, left);
          if (overlap > 0) busy[(a.rank[i] * 4 + a.kind[i]) * bins + bin] += overlap;
        }
      }
      const z = [], names = [], centres = [], gap = new Array(bins).fill(5);
      for (let bin = 0; bin < bins; bin++) centres.push(x0 + (bin + 0.5) * width);
      for (let r = 0; r < rows; r++) {
        z.push(gap); names.push(new Array(bins).fill(''));
        for (const k of zoom.lanes) {
          const row = [];
          for (let bin = 0; bin < bins; bin++) row.push(busy[(r * 4 + k) * bins + bin] >= zoom.share * width ? k : 4);
          z.push(row); names.push(new Array(bins).fill('rank ' + r + ' · ' + zoom.kinds[k] + ' lane'));
        }
      }
      z.push(gap); names.push(new Array(bins).fill(''));
      plotlyOf(gd).restyle(gd, {z: [z], x: [centres], visible: true, text: [names], customdata: [null],
        hovertemplate: '%{text} · t ≈ %{x:.4g}' + EXTRA}, [index]);
    });
  };
  // transfer arrows only where they can be seen: hidden while the visible ones would average fewer than
  // ARROW_PX pixels of plot width per arrow on a rank's row (a phone, or a long run zoomed out)
  const ARROW_PX = 14;
  const thinArrows = gd => {
    (gd.data || []).forEach((trace, index) => {
      if (trace.meta !== 'pplab-arrows') return;
      const cache = gd.__pplabArrowX || (gd.__pplabArrowX = {}), drawn = gd._fullData[index] || {};
      const xs = cache[index] || (cache[index] = drawn.x);  // a hidden trace's x is not kept: read it while drawn
      if (!xs) return;
      const axis = gd._fullLayout[(trace.xaxis || 'x').replace('x', 'xaxis')], [x0, x1] = axis.range;
      const yaxis = gd._fullLayout[(trace.yaxis || 'y').replace('y', 'yaxis')];
      const rows = Math.max(1, Math.abs(yaxis.range[1] - yaxis.range[0]));
      let shown = 0;
      for (let i = 0; i < xs.length; i += 3) if (xs[i + 1] > x0 && xs[i] < x1) shown++;
      const visible = shown === 0 || axis._length / (shown / rows) >= ARROW_PX;
      if ((gd.data[index].visible !== false) !== visible) plotlyOf(gd).restyle(gd, {visible: visible}, [index]);
    });
  };
  const watchArrows = gd => {
    if (gd.__pplabArrows || !gd.data || !gd.data.some(t => t.meta === 'pplab-arrows')) return;
    gd.__pplabArrows = true;
    thinArrows(gd);
    gd.on('plotly_relayout', () => thinArrows(gd));
  };
  P.thinArrows = thinArrows;
  const watchZoom = gd => {
    if (gd.__pplabZoom || !gd.data || !gd.data.some(t => t.meta && t.meta.pplab_zoom)) return;
    gd.__pplabZoom = true;
    gd.on('plotly_relayout', event => {
      if (Object.keys(event).some(key => key.startsWith('xaxis'))) rezoom(gd);
    });
  };
  P.rezoom = rezoom;
  // the chart's accessible name and summary (the chart element can be drawn after this block)
  document.querySelectorAll('.pplab-player').forEach(box => {
    let tries = 0;
    const label = () => {
      const holder = document.querySelector('.st-key-' + box.dataset.chart);
      if (!holder) { if (tries++ < 50) setTimeout(label, 200); return; }
      holder.setAttribute('role', 'img');
      holder.setAttribute('aria-label', box.dataset.name);
      holder.setAttribute('aria-describedby', box.querySelector('.pplab-summary').id);
      const gd = holder.querySelector('.js-plotly-plot');
      if (gd && gd.on) { watchZoom(gd); watchArrows(gd); } else if (tries++ < 50) setTimeout(label, 200);
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
