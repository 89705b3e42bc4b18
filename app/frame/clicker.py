"""A presentation clicker drives the lab as a deck with builds. PageDown (or →) does the next of these that the page
offers: lecture mode's "Next event ▶"; a lesson step's "Run it for real" (its runs, not yet run); on an unanswered
lesson question, "Show me" — the reveal, with the answer's feedback brought to the top of the screen (on a projected
slide, where the feedback is beside the chart, the row of the chart and its column, brought up again once the chart
is drawn, which a busy browser does seconds later); the next screenful of a step taller than the screen; "Next step
▶" (a new step opens at its top). PageUp (or ←) mirrors it: "◀ Previous event", the screenful above, "◀ Previous
step".
On a page with lecture mode and no steps (the Playground), PageDown first turns lecture mode on, PageUp at its first
event turns it off, and a press past its last event keeps the chart where it is rather than scrolling it away.

Keys typed into a text area, a list or a slider are theirs, and keys with a modifier are the browser's. A one-line
box (a number, a text) keeps its arrows and Enter but not PageDown and PageUp, which mean nothing there; Enter in a
lesson's answer box also checks the answer and lets go of the focus, so the clicker moves on. A chosen option keeps
↑ and ↓ (another answer) but not ← and →. A switch or a checkbox keeps no keys (after turning lecture mode on,
PageDown steps its events). The script listens before the page's own controls do (the capture phase), so a key it
acts on reaches no control as well.

A script in the page's own document (``st.html`` with JavaScript allowed), registered once per browser tab; it
finds the buttons by their visible names, so it acts on whatever page shows them."""

import json

NEXT_EVENT, PREVIOUS_EVENT = "Next event ▶", "◀ Previous event"
"""Lecture mode's buttons (``app/lecture/deck.py`` names its buttons from here)."""
NEXT_STEP, PREVIOUS_STEP = "Next step ▶", "◀ Previous step"
REVEAL, CHECK = "Show me", "Check"
RUN_REAL = "Run it for real"
"""A lesson step's real runs, not yet run (``app/views/lessons/runs.py``): PageDown runs them before the reveal."""
ANSWER_LABEL = "Your answer"
"""A lesson's step buttons, its question's buttons and its answer box (``app/views/lessons/page.py``)."""
FEEDBACK = ("The engine says", "Right: the engine says")
"""How the revealed answer's feedback begins (``app/views/lessons/page.py``)."""
ABOVE_PX = 16
"""Room left above a revealed answer brought to the top of the screen (the presenter's bar scrolls away with the
page: ``style.PROJECTOR_CSS``)."""
SCREENFUL = 0.8
"""A build scrolls this share of the screen, so the last lines of one screen open the next."""

_SCRIPT = """
(() => {
  if (window.__pplabClicker) return;
  window.__pplabClicker = true;
  const NAMES = %(names)s;
  const ALL_KEYS = ['slider', 'combobox', 'listbox', 'option'];
  const ONE_LINE = ['spinbutton', 'textbox'];
  const PRESSED = ['checkbox', 'button', 'submit', 'reset'];
  const role = (el) => (el && el.getAttribute && el.getAttribute('role')) || '';
  // which keys the focused control keeps for itself (see the module's docstring)
  const keeps = (el, key) => {
    if (!el || el === document.body) return false;
    if (el.isContentEditable || /^(TEXTAREA|SELECT)$/.test(el.tagName) || ALL_KEYS.includes(role(el))) return true;
    if (el.tagName === 'INPUT' && el.type === 'radio') return key === 'ArrowUp' || key === 'ArrowDown';
    if ((el.tagName === 'INPUT' && !PRESSED.includes(el.type)) || ONE_LINE.includes(role(el)))
      return key !== 'PageDown' && key !== 'PageUp';
    return false;
  };
  const button = (name) => [...document.querySelectorAll('button')]
    .find((b) => b.innerText.trim() === name && !b.disabled);
  const shown = (name) => [...document.querySelectorAll('button')].some((b) => b.innerText.trim() === name);
  const main = () => document.querySelector('[data-testid="stMain"]');
  const idle = () => document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]');
  const wait = (ready, then, limit) => {  // `then()` once `ready()` holds, polled; given up after `limit` ms
    const started = Date.now();
    const timer = setInterval(() => {
      if (ready()) { clearInterval(timer); then(); }
      else if (Date.now() - started > limit) clearInterval(timer);
    }, 100);
    return timer;
  };
  // once the rerun a press started has finished and `ready()` holds, `then()` (given up after 60 s: a busy server)
  const after = (ready, then) => {
    const started = Date.now();
    wait(() => Date.now() - started > 300 && idle() && ready(), then, 60000);
  };
  let settling = null;  // a reveal's watch over its chart (below), ended by the presenter's next key or wheel
  const drawnIn = (el) => [...el.querySelectorAll('.js-plotly-plot')].some((p) => p.getBoundingClientRect().height > 0);
  const bring = (el) => {  // `el` at the top of the screen
    if (!el) return;
    el.scrollIntoView({ block: 'start' });
    const m = main();
    if (m) m.scrollBy({ top: -NAMES.abovePx, behavior: 'instant' });
  };
  const inPlace = (el) => {  // at the top, or as near as the page's end lets it be
    const m = main();
    if (!m) return true;
    const top = el.getBoundingClientRect().top - m.getBoundingClientRect().top;
    return Math.abs(top - NAMES.abovePx) <= 2 || m.scrollTop >= m.scrollHeight - m.clientHeight - 1;
  };
  const feedback = () => [...document.querySelectorAll('[data-testid="stAlert"]')]
    .find((a) => NAMES.feedback.some((words) => a.innerText.trim().startsWith(words)));
  const answerPlace = () => {  // the feedback, or the slide's row of the chart and the column it is in
    const answer = feedback();
    if (!answer) return null;
    const slide = answer.closest('[data-testid="stColumn"]') && answer.closest('[data-testid="stHorizontalBlock"]');
    return slide || answer;
  };
  const screenful = (direction) => {
    const m = main();
    if (!m) return false;
    // below: to the bottom of the page's content, not of the padding Streamlit leaves under it
    const content = m.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
    const below = content ? content.getBoundingClientRect().bottom - m.getBoundingClientRect().bottom
                          : m.scrollHeight - m.clientHeight - m.scrollTop;
    const room = direction > 0 ? below : m.scrollTop;
    if (room <= 8) return false;
    const before = m.scrollTop;
    m.scrollBy({ top: direction * Math.round(m.clientHeight * NAMES.screenful), behavior: 'instant' });
    return Math.abs(m.scrollTop - before) > 1;  // a page that would not scroll (still laying out) moves on
  };
  // the page's title and step heading: a new step is drawn once they differ from the old one's (a busy server may
  // start the rerun later than the wait's first 300 ms, when the old step still stands)
  const where = () => [...document.querySelectorAll('h1, [data-testid="stHeading"]')].map((h) => h.innerText).join('|');
  const toTop = () => {
    const before = where();
    after(() => where() !== before, () => { const m = main(); if (m) m.scrollTop = 0; });
  };
  const lectureSwitch = () => [...document.querySelectorAll('input[role="switch"]')]
    .find((input) => /lecture mode/i.test(input.getAttribute('aria-label') || ''));
  const forward = () => {
    let b;
    if ((b = button(NAMES.nextEvent))) { b.click(); return true; }
    const lecture = lectureSwitch();
    if (lecture && !lecture.checked && !shown(NAMES.nextStep)) { lecture.click(); return true; }  // the Playground
    if ((b = button(NAMES.runReal))) { b.click(); return true; }  // the step's real runs, measured in class
    if ((b = button(NAMES.reveal))) {
      b.click();
      after(feedback, () => {  // the feedback at the top, the chart after it; or,
        // where it is beside the chart (a projected slide), the row of the chart and its column
        bring(answerPlace());
        // the row's chart is drawn after the rerun, and until then the page may be too short to scroll that far
        // (or shrink while the chart's element mounts): the row is brought up again once its chart stands, until
        // it is in place or the presenter acts
        settling = wait(() => {
          const place = answerPlace();
          if (place === feedback()) return true;  // no slide: the chart comes after the feedback
          if (!place || !drawnIn(place)) return false;
          if (!inPlace(place)) bring(place);
          return inPlace(place);
        }, () => {}, 60000);
      });
      return true;
    }
    if (!shown(NAMES.nextStep) && shown(NAMES.nextEvent)) return true;  // the lecture's end: keep the chart
    if (screenful(1)) return true;
    if ((b = button(NAMES.nextStep))) { b.click(); toTop(); return true; }
    return false;
  };
  const back = () => {
    let b;
    if ((b = button(NAMES.previousEvent))) { b.click(); return true; }
    const lecture = lectureSwitch();  // at the first event of a page with no steps: lecture mode off
    if (lecture && lecture.checked && !shown(NAMES.previousStep)) { lecture.click(); return true; }
    if (screenful(-1)) return true;
    if ((b = button(NAMES.previousStep))) { b.click(); toTop(); return true; }
    return false;
  };
  const answerBox = (el) => {
    const box = el && el.closest && el.closest('[data-testid="stNumberInput"]');
    return !!box && box.innerText.trim().startsWith(NAMES.answer);
  };
  document.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    clearInterval(settling);  // a key after a reveal: the presenter's, not the late chart's, says where to be
    const focused = document.activeElement;
    if (event.key === 'Enter' && answerBox(focused)) {  // the box takes the number; then the answer is checked
      after(() => button(NAMES.check), () => { button(NAMES.check).click(); focused.blur(); });
      return;
    }
    if (keeps(focused, event.key)) return;
    const ahead = event.key === 'PageDown' || event.key === 'ArrowRight';
    const behind = event.key === 'PageUp' || event.key === 'ArrowLeft';
    if ((ahead || behind) && (ahead ? forward() : back())) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
  document.addEventListener('wheel', () => clearInterval(settling), { capture: true, passive: true });
})();
"""


def clicker_script() -> str:
    """The ``<script>`` element to put in the page once per run."""
    names = {
        "nextEvent": NEXT_EVENT,
        "previousEvent": PREVIOUS_EVENT,
        "nextStep": NEXT_STEP,
        "previousStep": PREVIOUS_STEP,
        "reveal": REVEAL,
        "runReal": RUN_REAL,
        "check": CHECK,
        "answer": ANSWER_LABEL,
        "feedback": FEEDBACK,
        "screenful": SCREENFUL,
        "abovePx": ABOVE_PX,
    }
    return "<script>" + _SCRIPT % {"names": json.dumps(names)} + "</script>"
