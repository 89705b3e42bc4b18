// The lab's chart element (live_chart.py): one <div> per chart, redrawn in place by Plotly.react on a change.

function plotlyFor(data) {
  // the lab's own cartesian bundle, evaluated once per page (it sets window.Plotly itself); where it cannot be
  // had (the app run without app/serve.py), Streamlit's chart script
  if (!window.__pplabPlotly) {
    window.__pplabPlotly = fetch(new URL(data.library, window.location.origin))
      .then(answer => { if (!answer.ok) throw new Error(answer.status); return answer.text(); })
      .then(text => { const module = {exports: {}}; new Function('module', 'exports', text)(module, module.exports);
                      return module.exports; })
      .catch(async () => {
        if (!window.Plotly) await import(new URL(data.plotly, window.location.origin).href);
        return window.Plotly;
      });
  }
  return window.__pplabPlotly;
}

// Bar labels ("F3", "W12"), drawn by this element instead of by Plotly. Plotly builds each bar's label
// through its rich-text parser, styles it property by property and measures it: about 30 ms of a 4 × 8 change. Here each distinct label is measured once on a canvas and every label is one <text>, by
// Plotly's own rule for the figure's uniformtext "hide": a label fits its bar with TEXT_PAD on each side, shrunk
// if it must; one size for all (the smallest a shown label needs), and a label that would be smaller than
// uniformtext.minsize is not drawn (the same labels as Plotly's in every case measured; sizes within 4 %: a canvas
// measures a label's advance, Plotly its box). The figure still carries its labels: put back for the PNG download.
// A bar too short for its whole label keeps its kind's letter alone ("F" for "F3") where the letter fits at the
// size the whole labels were given: colour is never the only code, even on a 1280-px projector where an F of one
// unit is 15 px wide and "F0" at the 18-px minimum needs 24 (the micro-batch stays in the bar's hover text).
const SVG = 'http://www.w3.org/2000/svg';
const TEXT_PAD = 3;  // Plotly's bar TEXTPAD, in pixels
const LETTER_PAD = 1;  // a lone capital's ink is narrower than its advance: a pixel each side keeps it off the edges

function takeLabels(traces) {
  const labels = new Map();  // trace index → {text, ink}
  const drawn = traces.map((trace, index) => {
    if (trace.type !== 'bar' || trace.textposition !== 'inside' || !Array.isArray(trace.text)) return trace;
    labels.set(index, {text: trace.text, ink: (trace.textfont || {}).color || '#000'});
    const {text, ...rest} = trace;
    return {...rest, textposition: 'none'};
  });
  return {drawn, labels};
}

function withLabels(gd) {
  return gd.data.map((trace, index) => {
    const mine = gd.pplabLabels.get(index);
    return mine ? {...trace, text: mine.text, textposition: 'inside'} : trace;
  });
}

const measure = (() => {
  const context = document.createElement('canvas').getContext('2d');
  const widths = new Map();
  return (font, label) => {
    const key = font + '|' + label;
    if (!widths.has(key)) { context.font = font; widths.set(key, context.measureText(label).width); }
    return widths.get(key);
  };
})();

function labelPlaces(gd) {
  const full = gd._fullLayout, size = full.font.size, font = size + 'px ' + full.font.family;
  const minsize = full.uniformtext && full.uniformtext.mode === 'hide' ? full.uniformtext.minsize || 0 : 0;
  const height = 1.2 * size;  // a line of text, as SVG measures it
  const places = [], short = [];
  let uniform = size;
  for (const [index, {text, ink}] of gd.pplabLabels) {
    const trace = gd._fullData[index], points = gd.calcdata[index];
    if (!trace || trace.visible !== true || !points) continue;
    const plot = full._plots[trace.xaxis + trace.yaxis];
    const [along, across] = trace.orientation === 'h' ? [plot.xaxis, plot.yaxis] : [plot.yaxis, plot.xaxis];
    for (const point of points) {
      const label = text[point.i];
      if (!label) continue;
      const s0 = along.c2p(point.s0, true), s1 = along.c2p(point.s1, true);
      const p0 = across.c2p(point.p0, true), p1 = across.c2p(point.p1, true);
      const middle = (s0 + s1) / 2;
      if (!(middle >= 0 && middle <= along._length)) continue;  // out of view (or not a number)
      const [wide, tall] = trace.orientation === 'h' ? [Math.abs(s1 - s0), Math.abs(p1 - p0)]
                                                     : [Math.abs(p1 - p0), Math.abs(s1 - s0)];
      const [x, y] = trace.orientation === 'h' ? [middle, (p0 + p1) / 2] : [(p0 + p1) / 2, middle];
      const place = {group: plot.plot.node(), x, y, label, ink, index, point: point.i, opacity: trace.opacity};
      const scale = Math.min(1, (wide - 2 * TEXT_PAD) / measure(font, label), (tall - 2 * TEXT_PAD) / height);
      if (size * scale >= minsize) {
        uniform = Math.min(uniform, size * scale);
        places.push(place);
      } else {  // hidden by Plotly's rule: its letter alone, once the size is known
        short.push({...place, label: label.trim().charAt(0), wide, tall});
      }
    }
  }
  const letterFont = uniform + 'px ' + full.font.family;
  for (const place of short) {
    const fits = measure(letterFont, place.label) + 2 * LETTER_PAD <= place.wide
      && 1.2 * uniform + 2 * LETTER_PAD <= place.tall;
    if (fits) places.push(place);  // at `uniform`, which is minsize or more
  }
  return {places, uniform, family: full.font.family};
}

function drawLabels(gd) {
  gd.querySelectorAll('.pplab-labels').forEach(layer => layer.remove());
  if (!gd.pplabLabels || !gd.pplabLabels.size || !gd._fullLayout || !gd.calcdata) return;
  const {places, uniform, family} = labelPlaces(gd);
  const layers = new Map();
  for (const place of places) {
    if (!layers.has(place.group)) {
      const layer = document.createElementNS(SVG, 'g');
      layer.setAttribute('class', 'pplab-labels');
      layer.setAttribute('style', `font-family: ${family}; font-size: ${uniform}px; pointer-events: none;`);
      layers.set(place.group, layer);
    }
    const text = document.createElementNS(SVG, 'text');
    text.setAttribute('x', place.x);
    text.setAttribute('y', place.y);
    text.setAttribute('dy', '0.35em');
    text.setAttribute('text-anchor', 'middle');
    text.setAttribute('fill', place.ink);
    if (place.opacity < 1) text.setAttribute('opacity', place.opacity);  // a dimmed trace's labels too
    text.setAttribute('data-trace', place.index);
    text.setAttribute('data-point', place.point);
    text.textContent = place.label;
    layers.get(place.group).appendChild(text);
  }
  for (const [group, layer] of layers) {  // over the bars, under the lines and arrows drawn after them
    const bars = group.querySelector('.barlayer');
    if (bars) bars.after(layer); else group.appendChild(layer);
  }
  gd.pplabStale = false;
}

// The memory lines' names at their peaks (charts/memory.py, named PEAK_NAME there). On a narrow chart (a phone)
// the names of ranks that peak close together covered each other (GPipe's ranks all peak at m, a few pixels
// apart): each name that would cover one placed before it moves along its peak (an xshift) to the nearest place,
// just beside a placed name, that covers none and stays inside its plot. Worked out from where each name stands
// unmoved, so a resize starts over, and a second pass finds nothing to move.
const PEAK_NAME = 'pplab-peak';
const NAME_GAP = 2;  // pixels between two names

function separateNames(gd) {
  const full = gd._fullLayout, placed = [], moves = {};
  if (!full || !full.annotations) return;
  const page = gd.getBoundingClientRect();
  full.annotations.forEach((note, index) => {
    const node = note.name === PEAK_NAME && gd.querySelector(`.annotation[data-index="${index}"]`);
    const axis = node && full[note.xref.replace('x', 'xaxis')];
    if (!axis) return;
    const box = node.getBoundingClientRect(), was = note.xshift || 0;
    const left = box.left - was, right = box.right - was, first = page.left + axis._offset;
    const last = first + axis._length;
    const free = move => left + move >= first && right + move <= last && !placed.some(
      p => Math.min(p.right, right + move) - Math.max(p.left, left + move) > 0
           && Math.min(p.bottom, box.bottom) - Math.max(p.top, box.top) > 0);
    const candidates = [0, ...placed.flatMap(p => [p.right + NAME_GAP - left, p.left - NAME_GAP - right])];
    const nearest = candidates.filter(free).reduce((a, b) => Math.abs(a) <= Math.abs(b) ? a : b, Infinity);
    const move = Number.isFinite(nearest) ? nearest : 0;  // no free place (a crowd of names): where it stands
    placed.push({left: left + move, right: right + move, top: box.top, bottom: box.bottom});
    if (Math.abs(move - was) > 0.5) moves[`annotations[${index}].xshift`] = move;
  });
  if (Object.keys(moves).length) gd.pplabPlotly.relayout(gd, moves);
}

function followLabels(gd) {
  // redrawn after every redraw Plotly makes (a change, a zoom, a legend click, a resize), once per frame
  if (gd.pplabFollowing) return;
  gd.pplabFollowing = true;
  const soon = () => {
    if (gd.pplabStale) return;
    gd.pplabStale = true;
    requestAnimationFrame(() => { if (gd.pplabStale) { drawLabels(gd); separateNames(gd); } });  // unless drawn since
  };
  for (const event of ['plotly_afterplot', 'plotly_relayout', 'plotly_restyle', 'plotly_redraw']) gd.on(event, soon);
}

let downloadButton = null;  // one object for every chart: Plotly.react replots from scratch when its config changes

function chartConfig(Plotly, config, labelled) {
  if (!labelled) return config;
  // the PNG download draws the figure with its labels (Plotly's own label drawing, put back for the export)
  downloadButton = downloadButton || {
    name: 'pplabDownload', title: 'Download plot as a PNG', icon: Plotly.Icons.camera,
    click: gd => Plotly.downloadImage({data: withLabels(gd), layout: gd.layout},
                                      {format: 'png', filename: 'newplot', width: gd._fullLayout.width,
                                       height: gd._fullLayout.height}),
  };
  return {...config, modeBarButtonsToRemove: [...(config.modeBarButtonsToRemove || []), 'toImage'],
          modeBarButtonsToAdd: [downloadButton]};
}

export default async function({ parentElement, data }) {
  const Plotly = await plotlyFor(data);
  let gd = parentElement.querySelector('.pplab-live-chart');
  if (!gd) {
    gd = document.createElement('div');
    gd.className = 'pplab-live-chart';
    parentElement.appendChild(gd);
  }
  gd.pplabPlotly = Plotly;  // the player and lecture mode step the chart with the Plotly that drew it
  const figure = data.figure, {drawn, labels} = takeLabels(figure.data);
  gd.pplabLabels = labels;
  const config = chartConfig(Plotly, data.config, labels.size > 0);
  await Plotly.react(gd, {data: drawn, layout: figure.layout, frames: figure.frames || [], config});
  followLabels(gd);
  drawLabels(gd);
  separateNames(gd);
}
